/* What the run page's and the comparison page's charts share: metric names in words, series that
   are never joined across a gap, and a layout whose legend stays clear of the step axis.

   A gap is a jump in steps of more than GAP_FACTOR times the series' usual spacing (the median
   of its steps' differences): a run resumed from an earlier checkpoint, a stretch with no report.
   withGaps() puts a null point inside each gap, and every trace sets connectgaps false, so plotly
   breaks the line there instead of drawing a straight segment across it.
   ema(values, weight) is TensorBoard's smoothing: an exponential moving average debiased at the
   start (weight 0: the values as they are; 0.99: the smoothest).
   GridCharts.label(name), GridCharts.group(name), GridCharts.withGaps(x, y) -> {x, y},
   GridCharts.line(x, y, name), GridCharts.points(x, y, name), GridCharts.layout(el, title, yTitle, traces),
   GridCharts.ema(values, weight), GridCharts.COLORS */
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

  window.GridCharts = { label: label, group: group, withGaps: withGaps, line: line, points: points, layout: layout,
    ema: ema, COLORS: COLORS, GAP_FACTOR: GAP_FACTOR };
})();
