/* The single-line diagram, drawn with plotly from a layout (substations at grid2op's coordinates,
   lines between them with their thermal limits, generators and loads) and a state (rho, flows,
   line status, buses, generation and consumption): lines coloured by rho (the legend gives the
   bands), disconnected lines dashed grey, substations split into two buses drawn as two bus
   markers, generators and loads beside their substation sized by their output, and a distinct
   mark for each line that is at risk under N-1 (an open diamond), out of service (a grey
   circle), in maintenance (a blue square) or under attack (a purple star); the substations an
   action touches highlighted.
   GridDiagram.draw(div, layout, state, {atRisk, highlight}) -> Promise
   GridDiagram.highlight(div, layout, substationIds) -> Promise */
(function () {
  "use strict";
  var BANDS = [
    [1.0, "#d62728", "rho ≥ 100 % (overload)"],
    [0.95, "#ff7f0e", "rho 95–100 %"],
    [0.8, "#f0b020", "rho 80–95 %"],
    [0.5, "#8fbf3f", "rho 50–80 %"],
    [-Infinity, "#2ca02c", "rho < 50 %"]
  ];
  function rhoColour(rho) {
    for (var i = 0; i < BANDS.length; i++) { if (rho >= BANDS[i][0]) { return BANDS[i][1]; } }
    return BANDS[BANDS.length - 1][1];
  }
  function fmt(value, digits) { return value === undefined || value === null ? "n/a" : Number(value).toFixed(digits); }

  function splitSubstations(layout, state) {
    var split = {};
    layout.substations.forEach(function (sub) {
      for (var j = 0; j < sub.elements.length; j++) {
        if (state.bus[sub.start + j] === 2) { split[sub.id] = true; return; }
      }
    });
    return split;
  }

  function legendTraces() {
    // empty traces that only draw the colour legend of the rho bands
    return BANDS.slice().reverse().map(function (band) {
      return { type: "scatter", mode: "lines", x: [null], y: [null], name: band[2], hoverinfo: "skip",
        line: { color: band[1], width: 4 }, legendgroup: "rho" };
    });
  }

  function lineTraces(layout, state, atRisk) {
    var subs = layout.substations;
    var out = [];
    var maintenance = {};
    (state.maintenance || []).forEach(function (l) { maintenance[l] = true; });
    var attacked = {};
    (state.attacked || []).forEach(function (l) { attacked[l] = true; });
    var risk = {};
    (atRisk || []).forEach(function (r) { risk[r.line] = r.outages; });
    var midX = [], midY = [], midText = [];
    // one trace per mark, each with its legend entry
    var marks = {
      risk: { x: [], y: [], text: [], name: "at risk under N-1", symbol: "diamond-open", color: "#e6550d", size: 13 },
      out: { x: [], y: [], text: [], name: "out of service", symbol: "circle-open", color: "#636363", size: 11 },
      maintenance: { x: [], y: [], text: [], name: "in maintenance", symbol: "square", color: "#3182bd", size: 10 },
      attack: { x: [], y: [], text: [], name: "under attack", symbol: "star", color: "#6a3d9a", size: 14 }
    };
    function mark(kind, x, y, words) { marks[kind].x.push(x); marks[kind].y.push(y); marks[kind].text.push(words); }
    layout.lines.forEach(function (line, i) {
      var a = subs[line.or], b = subs[line.ex];
      var on = state.line_status[i] === 1;
      var rho = state.rho[i];
      out.push({
        type: "scatter", mode: "lines", x: [a.x, b.x], y: [a.y, b.y], hoverinfo: "skip", showlegend: false,
        line: { color: on ? rhoColour(rho) : "#9a9a9a", width: on ? 2 + Math.min(rho, 1.5) * 3 : 2, dash: on ? "solid" : "dash" }
      });
      var mx = (a.x + b.x) / 2, my = (a.y + b.y) / 2;
      midX.push(mx); midY.push(my);
      var limit = line.thermal_limit;
      // one name per element (ace_core.grid.names); the id and grid2op's own name as the detail
      var words = line.name + " (id " + i + (line.raw ? ", " + line.raw : "") + ")<br>";
      if (on) {
        words += "flow " + fmt(state.p_or ? state.p_or[i] : null, 1) + " MW · " + fmt(limit ? rho * limit : null, 0) + " A<br>" +
          "rho " + (rho * 100).toFixed(1) + " % of " + fmt(limit, 0) + " A thermal limit";
      } else {
        words += maintenance[i] ? "in maintenance" : "out of service";
      }
      if (attacked[i]) { words += "<br>under attack"; }
      if (risk[i]) { words += "<br>at risk: " + risk[i] + " single outage(s) overload it"; }
      midText.push(words);
      if (attacked[i]) { mark("attack", mx, my, words); }
      else if (maintenance[i]) { mark("maintenance", mx, my, words); }
      else if (!on) { mark("out", mx, my, words); }
      if (risk[i] && on) { mark("risk", mx, my, words); }
    });
    out.push({ type: "scatter", mode: "markers", x: midX, y: midY, text: midText, hoverinfo: "text",
      marker: { size: 8, color: "rgba(0,0,0,0.15)" }, showlegend: false, name: "lines" });
    Object.keys(marks).forEach(function (kind) {
      var m = marks[kind];
      out.push({ type: "scatter", mode: "markers", x: m.x.length ? m.x : [null], y: m.y.length ? m.y : [null],
        text: m.text, hoverinfo: "text", name: m.name,
        marker: { size: m.size, symbol: m.symbol, color: m.color, line: { width: 2, color: m.color } } });
    });
    return out;
  }

  function injectionTraces(layout, state) {
    // generators above-left of their substation, loads below-right, spread when several
    var subs = layout.substations;
    var count = {};
    function place(items, values, dy, name, symbol, colour, unit) {
      var t = { x: [], y: [], text: [], size: [] };
      (items || []).forEach(function (item, i) {
        var sub = subs[item.sub];
        var key = name + item.sub;
        var k = count[key] = (count[key] || 0) + 1;
        var p = values ? values[i] : null;
        t.x.push(sub.x + (k - 1) * 12 - 6); t.y.push(sub.y + dy);
        t.text.push(item.name + " at " + subs[item.sub].name + "<br>" + fmt(p, 1) + " " + unit);
        t.size.push(7 + Math.min(Math.abs(p || 0), 300) / 30);
      });
      return { type: "scatter", mode: "markers", x: t.x.length ? t.x : [null], y: t.y.length ? t.y : [null],
        text: t.text, hoverinfo: "text", name: name + "s (size: MW)",
        marker: { size: t.size, symbol: symbol, color: colour, line: { color: "#203040", width: 1 } } };
    }
    return [
      place(layout.generators, state.gen_p, 22, "generator", "triangle-up", "#2b8cbe", "MW produced"),
      place(layout.loads, state.load_p, -22, "load", "triangle-down", "#969696", "MW consumed")
    ];
  }

  function substationTraces(layout, state) {
    var subs = layout.substations;
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
    return [
      { type: "scatter", mode: "markers+text", x: one.x, y: one.y, text: one.label, hovertext: one.text,
        hoverinfo: "text", textposition: "top center", name: "substation",
        marker: { size: 16, color: "#ffffff", line: { color: "#203040", width: 2 } } },
      { type: "scatter", mode: "markers+text", x: two.x.length ? two.x : [null], y: two.y.length ? two.y : [null],
        text: two.label, hovertext: two.text, hoverinfo: "text", textposition: "top center", name: "split substation (2 buses)",
        marker: { size: 14, color: "#6a3d9a", symbol: "square", line: { color: "#203040", width: 2 } } }
    ];
  }

  function highlightTrace(layout, ids) {
    var xs = [], ys = [];
    (ids || []).forEach(function (id) {
      var sub = layout.substations[id];
      if (sub) { xs.push(sub.x); ys.push(sub.y); }
    });
    return { type: "scatter", mode: "markers", x: xs.length ? xs : [null], y: ys.length ? ys : [null],
      hoverinfo: "skip", name: "touched by the hovered card", showlegend: false,
      marker: { size: 34, color: "rgba(106,61,154,0.18)", line: { color: "#6a3d9a", width: 3 } } };
  }

  function draw(div, layout, state, extras) {
    extras = extras || {};
    var plotLayout = {
      margin: { l: 10, r: 10, t: 10, b: 10 }, showlegend: true, legend: { orientation: "h", y: -0.02 },
      xaxis: { visible: false }, yaxis: { visible: false, scaleanchor: "x" },
      hovermode: "closest", paper_bgcolor: "#fbfbfd", plot_bgcolor: "#fbfbfd"
    };
    var data = [].concat(lineTraces(layout, state, extras.atRisk), injectionTraces(layout, state),
      substationTraces(layout, state), legendTraces(), [highlightTrace(layout, extras.highlight)]);
    div.dataset.highlightTrace = String(data.length - 1);
    return Plotly.react(div, data, plotLayout, { displayModeBar: false, responsive: true });
  }

  function highlight(div, layout, ids) {
    var index = Number(div.dataset.highlightTrace);
    if (!div.data || isNaN(index)) { return Promise.resolve(); }
    var trace = highlightTrace(layout, ids);
    return Plotly.restyle(div, { x: [trace.x], y: [trace.y] }, [index]);
  }

  // a step's state from the previous one and what changed (ace_core.live.states.state_delta): the
  // values that changed, and [[position, value], ...] for the lists of which few values moved
  function applyDelta(previous, delta) {
    var state = {};
    if (delta.delta) { Object.keys(previous).forEach(function (k) { state[k] = previous[k]; }); }
    Object.keys(delta).forEach(function (k) { if (k !== "delta" && k !== "changes") { state[k] = delta[k]; } });
    if (!delta.delta) { return state; }
    Object.keys(delta.changes).forEach(function (key) {
      var values = previous[key].slice();
      delta.changes[key].forEach(function (pair) { values[pair[0]] = pair[1]; });
      state[key] = values;
    });
    return state;
  }

  window.GridDiagram = { draw: draw, highlight: highlight, applyDelta: applyDelta, rhoColour: rhoColour };
})();
