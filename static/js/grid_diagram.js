/* The single-line diagram, drawn with plotly from a layout (substations at grid2op's coordinates,
   lines between them) and a state (rho, line status, buses): lines coloured by rho, disconnected
   lines dashed grey, substations split into two buses drawn as two bus markers.
   GridDiagram.draw(div, layout, state) -> Promise */
(function () {
  "use strict";
  function rhoColour(rho) {
    if (rho >= 1.0) { return "#d62728"; }
    if (rho >= 0.95) { return "#ff7f0e"; }
    if (rho >= 0.8) { return "#f0b020"; }
    if (rho >= 0.5) { return "#8fbf3f"; }
    return "#2ca02c";
  }

  function splitSubstations(layout, state) {
    var split = {};
    layout.substations.forEach(function (sub) {
      for (var j = 0; j < sub.elements.length; j++) {
        if (state.bus[sub.start + j] === 2) { split[sub.id] = true; return; }
      }
    });
    return split;
  }

  function traces(layout, state) {
    var subs = layout.substations;
    var out = [];
    var maintenance = {};
    (state.maintenance || []).forEach(function (l) { maintenance[l] = true; });
    var midX = [], midY = [], midText = [];
    layout.lines.forEach(function (line, i) {
      var a = subs[line.or], b = subs[line.ex];
      var on = state.line_status[i] === 1;
      var rho = state.rho[i];
      out.push({
        type: "scatter", mode: "lines", x: [a.x, b.x], y: [a.y, b.y], hoverinfo: "skip", showlegend: false,
        line: { color: on ? rhoColour(rho) : "#9a9a9a", width: on ? 2 + Math.min(rho, 1.5) * 3 : 2, dash: on ? "solid" : "dash" }
      });
      midX.push((a.x + b.x) / 2); midY.push((a.y + b.y) / 2);
      midText.push("line " + i + " (" + line.name + ")<br>" + (on ? "rho " + (rho * 100).toFixed(0) + "%" :
        (maintenance[i] ? "in maintenance" : "disconnected")));
    });
    out.push({ type: "scatter", mode: "markers", x: midX, y: midY, text: midText, hoverinfo: "text",
      marker: { size: 6, color: "rgba(0,0,0,0.15)" }, showlegend: false, name: "lines" });
    var split = splitSubstations(layout, state);
    var one = { x: [], y: [], text: [], label: [] }, two = { x: [], y: [], text: [], label: [] };
    subs.forEach(function (sub) {
      if (split[sub.id]) {
        two.x.push(sub.x - 9, sub.x + 9); two.y.push(sub.y, sub.y);
        var words = sub.name + " split: bus 1 and bus 2";
        two.text.push(words, words); two.label.push(String(sub.id), "");
      } else {
        one.x.push(sub.x); one.y.push(sub.y); one.text.push(sub.name); one.label.push(String(sub.id));
      }
    });
    out.push({ type: "scatter", mode: "markers+text", x: one.x, y: one.y, text: one.label, hovertext: one.text,
      hoverinfo: "text", textposition: "top center", name: "substation",
      marker: { size: 16, color: "#ffffff", line: { color: "#203040", width: 2 } } });
    out.push({ type: "scatter", mode: "markers+text", x: two.x, y: two.y, text: two.label, hovertext: two.text,
      hoverinfo: "text", textposition: "top center", name: "split substation (2 buses)",
      marker: { size: 14, color: "#6a3d9a", symbol: "square", line: { color: "#203040", width: 2 } } });
    return out;
  }

  function draw(div, layout, state) {
    var plotLayout = {
      margin: { l: 10, r: 10, t: 10, b: 10 }, showlegend: true, legend: { orientation: "h", y: -0.02 },
      xaxis: { visible: false }, yaxis: { visible: false, scaleanchor: "x" },
      hovermode: "closest", paper_bgcolor: "#fbfbfd", plot_bgcolor: "#fbfbfd"
    };
    return Plotly.react(div, traces(layout, state), plotLayout, { displayModeBar: false, responsive: true });
  }

  function applyDelta(previous, delta) {
    var state = {};
    Object.keys(delta).forEach(function (k) { if (k !== "delta" && k !== "changes") { state[k] = delta[k]; } });
    if (!delta.delta) { return state; }
    Object.keys(delta.changes).forEach(function (key) {
      var values = previous[key].slice();
      delta.changes[key].forEach(function (pair) { values[pair[0]] = pair[1]; });
      state[key] = values;
    });
    return state;
  }

  window.GridDiagram = { draw: draw, applyDelta: applyDelta, rhoColour: rhoColour };
})();
