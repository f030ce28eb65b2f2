/* Two episodes of one day side by side: both diagrams (GridDiagram, the console's drawing) at the
   same step, moved by one slider and one play button. An episode that ended earlier stays on its
   last state, marked "game over" or "ended". Frames come as deltas (ace_core.live.state_delta). */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("compare-data").textContent);
  if (!data.layout) { return; }
  var slider = document.getElementById("compare-slider");
  var play = document.getElementById("compare-play");
  var sides = data.sides.map(function (side, i) {
    var states = [], previous = null;
    side.frames.forEach(function (delta) {
      previous = previous === null ? GridDiagram.applyDelta({}, delta) : GridDiagram.applyDelta(previous, delta);
      states.push(previous);
    });
    var id = i === 0 ? "a" : "b";
    return { id: id, states: states, gameOver: side.game_over, div: document.getElementById("diagram-" + id) };
  });
  var last = Math.max.apply(null, sides.map(function (s) { return s.states.length - 1; }));
  if (last < 0) { return; }
  slider.max = last;
  var timer = null;

  function show(i) {
    var time = "";
    sides.forEach(function (side) {
      var k = Math.min(i, side.states.length - 1);
      var state = side.states[k];
      var ended = i > side.states.length - 1;
      if (!ended) { time = state.time; }
      document.getElementById("compare-max-rho-" + side.id).textContent = (state.max_rho * 100).toFixed(1) + "%";
      document.getElementById("compare-applied-" + side.id).textContent = ended
        ? (side.gameOver ? "game over at step " + (state.step + 1) : "episode ended at step " + state.step)
        : state.applied;
      GridDiagram.draw(side.div, data.layout, state, { highlight: ended ? [] : state.touched })
        .then(function () { side.div.dataset.step = state.step; });
    });
    document.getElementById("compare-step").textContent = i;
    document.getElementById("compare-time").textContent = time.replace("T", " ");
    // the step both diagrams show, on the max rho timeline
    timeline.then(function () {
      return Plotly.relayout("compare-timeline", { shapes: [{ type: "line", x0: i, x1: i, yref: "paper", y0: 0, y1: 1,
        line: { color: "#555", width: 1, dash: "dot" } }] });
    });
  }

  function stop() {
    if (timer !== null) { clearInterval(timer); timer = null; }
    play.textContent = "Play";
  }
  play.addEventListener("click", function () {
    if (timer !== null) { stop(); return; }
    if (Number(slider.value) >= last) { slider.value = 0; }
    play.textContent = "Pause";
    timer = setInterval(function () {
      var next = Math.min(Number(slider.value) + 1, last);
      slider.value = next;
      show(next);
      if (next >= last) { stop(); }
    }, 500);
  });
  slider.addEventListener("input", function () { stop(); show(Number(slider.value)); });

  var timeline = Plotly.react("compare-timeline", data.sides.map(function (side, i) {
    return { x: sides[i].states.map(function (s) { return s.step; }), y: sides[i].states.map(function (s) { return s.max_rho; }),
      type: "scatter", mode: "lines", name: (i === 0 ? "A: " : "B: ") + side.label };
  }), { margin: { l: 45, r: 10, t: 10, b: 30 }, height: 200, yaxis: { title: "max rho" }, legend: { orientation: "h" } },
  { displayModeBar: false, responsive: true });
  show(0);
})();
