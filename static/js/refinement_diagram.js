/* The refinement page's small diagrams: for the RL and the LLM action, the substation it changes
   with each element on its bus (two bus bars, the elements moved to bus 2 in orange), the line it
   reconnects between its two substations, or a note for doing nothing. The data comes from the
   page's json_script "action-diagrams": {rl: diagram, llm: diagram}, each drawn into #rl-diagram
   and #llm-diagram (webapp.review.actions.action_diagram says what a diagram holds). */
(function () {
  "use strict";
  var source = document.getElementById("action-diagrams");
  if (!source || !window.Plotly) { return; }
  var diagrams = JSON.parse(source.textContent);
  var BUS_COLOURS = { 1: "#0b5cad", 2: "#e8710a" };
  var CONFIG = { displayModeBar: false, responsive: true, staticPlot: false };

  function note(div, text) {
    var p = document.createElement("p");
    p.className = "muted diagram-note";
    p.textContent = text;
    div.appendChild(p);
  }

  function axis() { return { visible: false, fixedrange: true }; }

  function topology(div, diagram) {
    var elements = diagram.elements;
    var n = elements.length;
    var bars = [1, 2].map(function (bus) {
      var y = bus === 1 ? 1 : 0;
      return {
        type: "scatter", mode: "lines", x: [-0.5, n - 0.5], y: [y, y], hoverinfo: "skip", showlegend: false,
        line: { color: BUS_COLOURS[bus], width: 6 }
      };
    });
    var stubs = { type: "scatter", mode: "lines", x: [], y: [], hoverinfo: "skip", showlegend: false,
      line: { color: "#8a94a6", width: 1.5 }, connectgaps: false };
    elements.forEach(function (element, i) {
      var y = element.bus === 1 ? 1 : 0;
      stubs.x.push(i, i, null);
      stubs.y.push(y, 0.5, null);
    });
    var markers = [1, 2].map(function (bus) {
      var on = elements.map(function (e, i) { return [e, i]; }).filter(function (pair) { return pair[0].bus === bus; });
      return {
        type: "scatter", mode: "markers+text", name: "bus " + bus,
        x: on.map(function (pair) { return pair[1]; }), y: on.map(function () { return 0.5; }),
        text: on.map(function (pair) { return pair[0].name; }), textposition: "middle right",
        hovertemplate: "%{text}: bus " + bus + "<extra></extra>",
        marker: { color: BUS_COLOURS[bus], size: 11, symbol: "circle" }
      };
    });
    var layout = {
      title: { text: diagram.substation, font: { size: 13 } }, height: 190,
      // room on the right for the last element's name
      margin: { l: 40, r: 10, t: 30, b: 10 }, xaxis: { visible: false, fixedrange: true, range: [-0.7, n + 0.4] },
      yaxis: axis(),
      legend: { orientation: "h", x: 0, y: -0.05 },
      annotations: [
        { x: -0.5, y: 1, xanchor: "right", text: "bus 1", showarrow: false, font: { color: BUS_COLOURS[1] } },
        { x: -0.5, y: 0, xanchor: "right", text: "bus 2", showarrow: false, font: { color: BUS_COLOURS[2] } }
      ]
    };
    return window.Plotly.newPlot(div, bars.concat([stubs], markers), layout, CONFIG);
  }

  function reconnect(div, diagram) {
    var traces = [
      { type: "scatter", mode: "lines", x: [0, 1], y: [0, 0], name: diagram.line + " (reconnected)",
        line: { color: "#137333", width: 4 }, hoverinfo: "name" },
      { type: "scatter", mode: "markers+text", x: [0, 1], y: [0, 0], showlegend: false,
        text: [diagram.from, diagram.to], textposition: "top center", hoverinfo: "text",
        marker: { color: "#14243b", size: 14 } }
    ];
    var layout = {
      title: { text: "reconnect " + diagram.line, font: { size: 13 } }, height: 150,
      margin: { l: 60, r: 60, t: 30, b: 10 }, xaxis: { visible: false, fixedrange: true, range: [-0.4, 1.4] },
      yaxis: { visible: false, fixedrange: true, range: [-0.5, 0.8] }, legend: { orientation: "h", x: 0, y: -0.05 }
    };
    return window.Plotly.newPlot(div, traces, layout, CONFIG);
  }

  ["rl", "llm"].forEach(function (which) {
    var div = document.getElementById(which + "-diagram");
    if (!div) { return; }
    var diagram = diagrams[which];
    if (!diagram) {
      note(div, "No diagram: this action's grid is not available here.");
    } else if (diagram.kind === "nothing") {
      note(div, "Doing nothing changes no substation.");
    } else if (diagram.kind === "move") {
      note(div, "A continuous move changes no substation: " + diagram.words + ".");
    } else if (diagram.kind === "reconnect") {
      reconnect(div, diagram);
    } else {
      topology(div, diagram);
    }
  });
})();
