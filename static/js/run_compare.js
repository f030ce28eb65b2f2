/* The comparison page: the selected runs' learning curves overlaid, one trace per run (data from
   the page's "compare-curves" JSON: episode survival and reward by step, and every metric under
   its metrics.jsonl name, offered in words and grouped by namespace). Smoothing is a trailing mean
   over the last N points of each run; curves break where the steps jump (chart_series.js). */
(function () {
  "use strict";
  var data = document.getElementById("compare-curves");
  if (!data || !window.Plotly || !window.GridCharts) { return; }
  var Charts = window.GridCharts;
  var runs = JSON.parse(data.textContent);
  var metricSelect = document.getElementById("compare-metric");
  var smoothingSelect = document.getElementById("compare-smoothing");
  var labelData = document.getElementById("compare-metric-labels");
  var labels = labelData ? JSON.parse(labelData.textContent) : {};
  // the in-training validation first: it is what the runs list ranks runs by
  var PREFERRED = ["eval/validation_survival", "charts/survival", "charts/episodic_return", "losses/qf1_loss"];

  function label(name) { return labels[name] || Charts.label(name); }

  function smooth(values, window) {
    var out = [];
    var sum = 0;
    values.forEach(function (value, i) {
      sum += value;
      if (i >= window) { sum -= values[i - window]; }
      out.push(sum / Math.min(i + 1, window));
    });
    return out;
  }

  function traces(pick) {
    var window = parseInt(smoothingSelect.value, 10) || 1;
    return runs.map(function (run) {
      var series = pick(run) || { step: [], value: [] };
      return Charts.line(series.step, smooth(series.value, window), run.name);
    });
  }

  function draw(id, pick, title, yTitle) {
    var el = document.getElementById(id);
    var shown = traces(pick);
    var points = shown.reduce(function (n, trace) {
      return n + trace.y.filter(function (v) { return v !== null; }).length;
    }, 0);
    el.dataset.points = points;
    el.dataset.traces = shown.filter(function (trace) { return trace.x.length; }).length;
    if (!points) {
      window.Plotly.purge(el);
      el.textContent = "";
      var empty = document.createElement("p");
      empty.className = "muted chart-empty";
      empty.textContent = title + ": no data yet";
      el.appendChild(empty);
      return;
    }
    if (el.querySelector(".chart-empty")) { el.textContent = ""; }
    var layout = Charts.layout(el, title, yTitle, shown);
    window.Plotly.react(el, shown, layout, { displaylogo: false, responsive: true });
  }

  var names = {};
  runs.forEach(function (run) { Object.keys(run.metrics).forEach(function (name) { names[name] = true; }); });
  var sorted = Object.keys(names).sort();
  var groups = {};
  sorted.forEach(function (name) {
    var heading = Charts.group(name);
    if (!groups[heading]) {
      groups[heading] = document.createElement("optgroup");
      groups[heading].label = heading;
      metricSelect.appendChild(groups[heading]);
    }
    var option = document.createElement("option");
    option.value = name;
    option.textContent = label(name);
    groups[heading].appendChild(option);
  });
  var preferred = PREFERRED.filter(function (name) { return names[name]; })[0];
  if (preferred) { metricSelect.value = preferred; }

  function drawAll() {
    draw("compare-survival", function (run) { return run.survival; }, "Episode survival", "fraction survived");
    draw("compare-reward", function (run) { return run.reward; }, "Episode reward", "reward (sum over the episode)");
    var metric = metricSelect.value;
    var title = metric ? label(metric) : "Metric";
    draw("compare-metric-chart", function (run) { return run.metrics[metric]; }, title.charAt(0).toUpperCase() + title.slice(1));
  }
  metricSelect.addEventListener("change", drawAll);
  smoothingSelect.addEventListener("change", drawAll);
  drawAll();
})();
