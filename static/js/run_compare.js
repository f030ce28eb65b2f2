/* The comparison page: the selected runs' learning curves overlaid, one trace per run (data from
   the page's "compare-curves" JSON: episode survival and reward by step, every metric under its
   metrics.jsonl name, offered in words and grouped by namespace, and when each metric report
   came). The controls are the run page's (chart_series.js): TensorBoard's EMA with the raw values
   faint behind, a log scale, and the decisions taken or the wall clock on the x axis (each run's
   own, read from its metric reports); curves break where the steps jump. */
(function () {
  "use strict";
  var data = document.getElementById("compare-curves");
  if (!data || !window.Plotly || !window.GridCharts) { return; }
  var Charts = window.GridCharts;
  var runs = JSON.parse(data.textContent);
  var root = document.getElementById("compare-charts");
  var metricSelect = document.getElementById("compare-metric");
  var labelData = document.getElementById("compare-metric-labels");
  var labels = labelData ? JSON.parse(labelData.textContent) : {};
  // the in-training validation first: it is what the runs list ranks runs by
  var PREFERRED = ["eval/validation_survival", "charts/survival", "charts/episodic_return", "losses/qf1_loss"];
  var EMPTY = { step: [], value: [] };

  function label(name) { return labels[name] || Charts.label(name); }

  // Each run's x axes other than steps, from its metric reports: the decisions taken, the wall clock.
  runs.forEach(function (run) {
    var decisions = run.metrics["charts/decisions"] || EMPTY;
    var reported = run.reported || { step: [], time: [] };
    run.axes = {
      decisions: Charts.known(decisions.step, decisions.value),
      time: Charts.known(reported.step, reported.time.map(function (time) { return Date.parse(time); }))
    };
    run.hasCurves = run.survival.step.length > 0 || run.reward.step.length > 0 ||
      Object.keys(run.metrics).some(function (name) { return run.metrics[name].step.length > 0; });
  });

  // An x axis is offered when every run that has curves can be placed on it.
  function offered(x) {
    var placed = runs.filter(function (run) { return run.hasCurves; });
    return placed.length > 0 && placed.every(function (run) { return run.axes[x].steps.length > 0; });
  }

  function draw(id, pick, title, yTitle, chosen, fraction) {
    var el = document.getElementById(id);
    var series = runs.map(function (run) {
      var curve = pick(run) || EMPTY;
      var known = chosen.x === "step" ? null : run.axes[chosen.x];
      return { kind: "line", x: Charts.mapX(curve.step, known), y: curve.value, name: run.name };
    });
    var points = series.reduce(function (n, one) { return n + one.y.length; }, 0);
    el.dataset.points = points;
    el.dataset.traces = series.filter(function (one) { return one.x.length; }).length;
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
    var shown = Charts.smoothed(series, chosen.smoothing);
    var legend = shown.filter(function (trace) { return trace.showlegend !== false; });
    var layout = Charts.layout(el, title, yTitle, legend, Charts.X_TITLES[chosen.x]);
    Charts.applyControls(layout, chosen, fraction);
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
    controls.offer("decisions", offered("decisions"));
    controls.offer("time", offered("time"));
    var chosen = controls.read();
    draw("compare-survival", function (run) { return run.survival; }, "Episode survival", "fraction survived", chosen, true);
    draw("compare-reward", function (run) { return run.reward; }, "Episode reward", "reward (sum over the episode)", chosen, false);
    var metric = metricSelect.value;
    var title = metric ? label(metric) : "Metric";
    draw("compare-metric-chart", function (run) { return run.metrics[metric]; }, title.charAt(0).toUpperCase() + title.slice(1),
      "", chosen, false);
    root.dataset.smoothing = chosen.smoothing;
    root.dataset.x = chosen.x;
  }
  var controls = Charts.controls({ onSmoothing: drawAll, onChange: drawAll });
  metricSelect.addEventListener("change", drawAll);
  drawAll();
})();
