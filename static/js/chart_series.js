/* What the run page's and the comparison page's charts share: metric names in words, series that
   are never joined across a gap, a layout whose legend stays clear of the step axis, and the
   controls above the charts (smoothing, log scale, x axis).

   A gap is a jump in steps of more than GAP_FACTOR times the series' usual spacing (the median
   of its steps' differences): a run resumed from an earlier checkpoint, a stretch with no report.
   withGaps() puts a null point inside each gap, and every trace sets connectgaps false, so plotly
   breaks the line there instead of drawing a straight segment across it.
   ema(values, weight) is TensorBoard's smoothing: an exponential moving average debiased at the
   start (weight 0: the values as they are; 0.99: the smoothest).
   GridCharts.label(name), GridCharts.group(name), GridCharts.withGaps(x, y) -> {x, y},
   GridCharts.line(x, y, name), GridCharts.points(x, y, name), GridCharts.layout(el, title, yTitle, traces),
   GridCharts.ema(values, weight), GridCharts.COLORS.

   The controls (elements chart-smoothing, chart-smoothing-value, chart-log, chart-x):
   GridCharts.controls({onSmoothing, onChange}) binds them and returns {read() -> {smoothing, log,
   x}, offer(x, available)}; x is "step", "decisions" or "time". Another x axis than steps maps
   each step through what is known of it (GridCharts.known(steps, values): the decisions taken or
   the wall clock at the steps of the metric reports), linear between known steps, the nearest
   beyond them (GridCharts.mapX(x, known)). GridCharts.smoothed(series, smoothing) makes the
   traces of [{kind: "points" | "line", x, y, name}]: with smoothing, the raw values faint behind
   their smoothed line (one colour, one legend entry). GridCharts.applyControls(layout, chosen,
   fraction) sets the axes' types (and a fraction's 0 to 1 range on a linear scale);
   GridCharts.X_TITLES names the x axes. */
(function () {
  "use strict";
  var GAP_FACTOR = 2;
  var source = document.getElementById("metric-names");
  var names = source ? JSON.parse(source.textContent) : { labels: {}, groups: {} };

  function label(name) { return names.labels[name] || name; }
  function group(name) { var space = name.split("/")[0]; return names.groups[space] || space; }

  function median(values) {
    if (!values.length) { return 0; }
    var sorted = values.slice().sort(function (a, b) { return a - b; });
    var middle = Math.floor(sorted.length / 2);
    return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
  }

  // The largest step difference that is not a gap (Infinity with fewer than 3 points: no spacing to judge).
  function widestStep(x) {
    var steps = [];
    for (var i = 1; i < x.length; i++) { if (x[i] > x[i - 1]) { steps.push(x[i] - x[i - 1]); } }
    return steps.length >= 2 ? GAP_FACTOR * median(steps) : Infinity;
  }

  function withGaps(x, y) {
    var widest = widestStep(x);
    var outX = [], outY = [];
    for (var i = 0; i < x.length; i++) {
      if (i > 0 && x[i] - x[i - 1] > widest) { outX.push((x[i] + x[i - 1]) / 2); outY.push(null); }
      outX.push(x[i]);
      outY.push(y[i]);
    }
    return { x: outX, y: outY };
  }

  function line(x, y, name) {
    var broken = withGaps(x, y);
    // sparse series (a validation every N decisions) get markers, or a lone point would not show
    var mode = x.length < 50 ? "lines+markers" : "lines";
    return { type: "scatter", mode: mode, x: broken.x, y: broken.y, name: name, connectgaps: false };
  }

  function points(x, y, name) {
    return { type: "scatter", mode: "markers", x: x, y: y, name: name, connectgaps: false, marker: { size: 5 } };
  }

  function ema(values, weight) {
    var last = 0, count = 0, out = [];
    values.forEach(function (value) {
      if (value === null || !isFinite(value)) { out.push(value); return; }
      last = last * weight + (1 - weight) * value;
      count += 1;
      var debias = weight === 1 ? 1 : 1 - Math.pow(weight, count);
      out.push(last / debias);
    });
    return out;
  }

  // plotly's own colour cycle, set on traces so that a raw trace and its smoothed line match
  var COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf"];

  // The legend sits at the foot of the figure, under the step axis and its title, with room
  // made for as many rows as its names need at this chart's width.
  function layout(el, title, yTitle, traces, xTitle) {
    var legend = traces.length > 1;
    var width = Math.max(el.clientWidth || 460, 200) - 40;
    var chars = traces.reduce(function (n, trace) { return n + String(trace.name || "").length + 6; }, 0);
    var rows = legend ? Math.max(1, Math.ceil((chars * 7) / width)) : 0;
    var bottom = 56 + rows * 20;
    return {
      title: { text: title, font: { size: 14 } },
      margin: { l: 60, r: 10, t: 36, b: bottom },
      height: 260 + bottom,
      xaxis: { title: { text: xTitle || "environment step", standoff: 6 }, automargin: false },
      yaxis: { title: { text: yTitle || "" }, automargin: true },
      showlegend: legend,
      legend: { orientation: "h", x: 0, xanchor: "left", yref: "container", y: 0, yanchor: "bottom" }
    };
  }

  // --- the controls: smoothing (TensorBoard's EMA), log scale, x axis of steps, decisions or wall clock ---
  var X_TITLES = { step: "environment step", decisions: "decisions", time: "wall clock (UTC)" };
  var SMOOTHING_MAX = 0.99;

  function controls(handlers) {
    var smoothingEl = document.getElementById("chart-smoothing");
    var smoothingOut = document.getElementById("chart-smoothing-value");
    var logEl = document.getElementById("chart-log");
    var xEl = document.getElementById("chart-x");

    function read() {
      return {
        smoothing: smoothingEl ? Math.min(SMOOTHING_MAX, Math.max(0, parseFloat(smoothingEl.value) || 0)) : 0,
        log: logEl ? logEl.checked : false,
        x: xEl ? xEl.value : "step"
      };
    }

    // An x axis the data cannot give is greyed out, and steps are shown instead while it is chosen.
    function offer(x, available) {
      if (!xEl) { return; }
      var option = xEl.querySelector('option[value="' + x + '"]');
      if (option) { option.disabled = !available; }
      if (xEl.value === x && !available) { xEl.value = "step"; }
    }

    if (smoothingEl) {
      smoothingEl.addEventListener("input", function () {
        if (smoothingOut) { smoothingOut.textContent = read().smoothing.toFixed(2); }
        handlers.onSmoothing();
      });
    }
    if (logEl) { logEl.addEventListener("change", handlers.onChange); }
    if (xEl) { xEl.addEventListener("change", handlers.onChange); }
    return { read: read, offer: offer };
  }

  // (step, value) pairs with a finite value, in the order given (by step).
  function known(steps, values) {
    var out = { steps: [], values: [] };
    steps.forEach(function (step, i) {
      var value = values[i];
      if (value === null || value === undefined || !isFinite(value)) { return; }
      out.steps.push(step);
      out.values.push(value);
    });
    return out;
  }

  // The value at ``step``, linear between the known steps around it, the nearest beyond them.
  function interpolate(axis, step) {
    var n = axis.steps.length;
    if (!n) { return null; }
    if (step <= axis.steps[0]) { return axis.values[0]; }
    if (step >= axis.steps[n - 1]) { return axis.values[n - 1]; }
    var lo = 0, hi = n - 1;
    while (hi - lo > 1) { var mid = (lo + hi) >> 1; if (axis.steps[mid] <= step) { lo = mid; } else { hi = mid; } }
    var span = axis.steps[hi] - axis.steps[lo];
    var share = span ? (step - axis.steps[lo]) / span : 0;
    return axis.values[lo] + share * (axis.values[hi] - axis.values[lo]);
  }

  function mapX(x, axis) {
    return axis ? x.map(function (step) { return interpolate(axis, step); }) : x;
  }

  function smoothed(series, smoothing) {
    var out = [];
    series.forEach(function (one, i) {
      var color = COLORS[i % COLORS.length];
      var raw = one.kind === "points" ? points(one.x, one.y, one.name) : line(one.x, one.y, one.name);
      raw.marker = Object.assign({}, raw.marker || {}, { color: color });
      raw.line = { color: color };
      raw.legendgroup = one.name;
      if (smoothing > 0 && one.y.length > 1) {
        raw.opacity = 0.25;
        raw.showlegend = false;
        var smooth = line(one.x, ema(one.y, smoothing), one.name);
        smooth.mode = "lines";
        smooth.line = { color: color, width: 2 };
        smooth.legendgroup = one.name;
        smooth.meta = "smoothed";
        out.push(raw, smooth);
      } else {
        out.push(raw);
      }
    });
    return out;
  }

  function applyControls(chartLayout, chosen, fraction) {
    if (chosen.x === "time") { chartLayout.xaxis.type = "date"; }
    if (chosen.log) { chartLayout.yaxis.type = "log"; }
    else if (fraction) { chartLayout.yaxis.range = [0, 1.05]; }
    return chartLayout;
  }

  window.GridCharts = { label: label, group: group, withGaps: withGaps, line: line, points: points, layout: layout,
    ema: ema, COLORS: COLORS, GAP_FACTOR: GAP_FACTOR, X_TITLES: X_TITLES, controls: controls, known: known,
    interpolate: interpolate, mapX: mapX, smoothed: smoothed, applyControls: applyControls };
})();
