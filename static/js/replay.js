/* Replay of a session: the diagram at any recorded step, chosen with a time slider. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("replay-data").textContent);
  var slider = document.getElementById("replay-slider");
  var diagram = document.getElementById("diagram");
  var frames = data.frames;
  if (!frames.length) { return; }
  slider.max = frames.length - 1;
  function describe(action) {
    if (!action || !action.kind) { return "no action"; }
    var words = base(action);
    if (action.move) { words = (words ? words + " and " : "") + "a continuous move"; }
    return words || "no action";
  }
  function base(action) {
    // the elements' one names, from the layout (ace_core.grid.names)
    if (action.kind === "pair") { return action.actions.map(base).join(" and "); }
    if (action.kind === "line") { return action.status + " " + data.layout.lines[action.line].name; }
    if (action.kind === "index") { return "action " + action.index + " of the policy's space"; }
    if (action.kind !== "topology") { return ""; }
    var sub = data.layout.substations[action.substation];
    return sub.name + ": " + action.set.map(function (p) { return sub.elements[p[0]] + " → bus " + p[1]; }).join(", ");
  }
  function show(i) {
    var frame = frames[i];
    document.getElementById("replay-step").textContent = frame.step;
    document.getElementById("replay-time").textContent = frame.time;
    document.getElementById("replay-max-rho").textContent = (frame.max_rho * 100).toFixed(1) + "%";
    document.getElementById("replay-applied").textContent = describe(frame.applied);
    var fork = document.getElementById("fork-step");
    if (fork) { fork.value = frame.step; }
    GridDiagram.draw(diagram, data.layout, frame).then(function () { diagram.dataset.step = frame.step; });
  }
  slider.addEventListener("input", function () { show(Number(slider.value)); });
  Plotly.react("replay-timeline", [{ x: frames.map(function (f) { return f.step; }), y: frames.map(function (f) { return f.max_rho; }),
    type: "scatter", mode: "lines", name: "max rho" }], { margin: { l: 45, r: 10, t: 10, b: 30 }, height: 180 },
    { displayModeBar: false, responsive: true });
  show(0);
})();
