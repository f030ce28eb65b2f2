/* The run page: live plotly charts fed by the run's websocket (a snapshot, then new rows).
   Every message has a kind and a row id; duplicates are dropped. */
(function () {
  "use strict";
  var root = document.getElementById("charts");
  if (!root || !window.GridLive) { return; }

  var data;
  function reset() {
    data = { seen: {}, metrics: [], episodes: [], refinements: [], attempt: null };
  }
  reset();

  var statusEl = document.getElementById("run-status");
  var progressEl = document.getElementById("run-progress");
  var barEl = document.getElementById("run-progress-bar");
  var attemptEl = document.getElementById("run-attempt");
  var errorEl = document.getElementById("run-error");
  var liveEl = document.getElementById("live-state");
  var totalSteps = 0;
  var link = null;
  var ACTIVE = ["queued", "running"];
  // When the run ends (or is resumed) after the page was rendered, reload it so the actions
  // (cancel, resume, evaluate, deploy) and the checkpoint match its state.
  var renderedActive = ACTIVE.indexOf(statusEl.textContent.trim()) >= 0;
  var reloading = false;

  function setProgress(step, total) {
    if (total) { totalSteps = total; }
    var shown = Math.max(step, parseInt(progressEl.textContent, 10) || 0);
    progressEl.textContent = shown;
    if (totalSteps) { barEl.style.width = Math.min(100, (100 * shown) / totalSteps).toFixed(1) + "%"; }
  }

  function applyStatus(message) {
    statusEl.textContent = message.status + (message.cancel_requested && message.status === "running" ? " (stopping)" : "");
    statusEl.className = "status status-" + message.status;
    attemptEl.textContent = message.attempt;
    progressEl.textContent = message.progress_step;
    setProgress(message.progress_step, message.total_steps);
    errorEl.textContent = message.error || "";
    errorEl.hidden = !message.error;
    errorEl.className = message.status === "failed" ? "error" : "notice";
    if (!reloading && renderedActive !== (ACTIVE.indexOf(message.status) >= 0)) {
      reloading = true;
      setTimeout(function () { window.location.reload(); }, 1500);
    }
    if (data.attempt !== null && message.attempt !== data.attempt && link) {
      // A new attempt rolled back to its checkpoint: fetch a fresh snapshot.
      data.attempt = message.attempt;
      link.reconnect();
      return;
    }
    data.attempt = message.attempt;
  }

  function apply(message) {
    if (message.kind === "status") { applyStatus(message); return; }
    var key = message.kind + ":" + message.id;
    if (data.seen[key]) {
      if (message.kind === "refinement") { data.seen[key].status = message.status; }
      return;
    }
    data.seen[key] = message;
    if (message.kind === "metrics") { data.metrics.push(message); setProgress(message.step); showPretrain(message.values); }
    else if (message.kind === "episode") { data.episodes.push(message); setProgress(message.step); }
    else if (message.kind === "refinement") { data.refinements.push(message); }
    else if (message.kind === "checkpoint") { setProgress(message.step); }
  }

  function byStep(a, b) { return a.step - b.step || a.id - b.id; }

  // The imitation start reports at step 0: the share of the mine and of the cloning done.
  function showPretrain(values) {
    var el = document.getElementById("pretrain-status");
    if (!el || values["pretrain/mining"] === undefined && values["pretrain/cloning"] === undefined) { return; }
    var parts = [];
    if (values["pretrain/mining"] !== undefined) { parts.push("mining " + Math.round(100 * values["pretrain/mining"]) + " %"); }
    if (values["pretrain/cloning"] !== undefined) { parts.push("cloning " + Math.round(100 * values["pretrain/cloning"]) + " %"); }
    if (values["pretrain/agreement_after"] !== undefined) {
      parts.push("agreement with the expert on held-out days " + values["pretrain/agreement_after"].toFixed(2));
    }
    el.textContent = "Imitation start: " + parts.join(", ");
    el.hidden = false;
  }

  function metricSeries(filter) {
    var series = {};
    data.metrics.slice().sort(byStep).forEach(function (point) {
      Object.keys(point.values).forEach(function (name) {
        var value = point.values[name];
        if (value === null || value === undefined || !filter(name)) { return; }
        if (!series[name]) { series[name] = { x: [], y: [], name: name, mode: "lines+markers", type: "scatter" }; }
        series[name].x.push(point.step);
        series[name].y.push(value);
      });
    });
    return Object.keys(series).sort().map(function (name) { return series[name]; });
  }

  // Metric names are namespaced (losses/..., charts/..., llm/...); each chart takes its share.
  var isEntropy = function (name) { return /entropy|alpha/i.test(name); };
  var isLlm = function (name) { return /^llm\//i.test(name) && !/accept/i.test(name); };
  var isAcceptance = function (name) { return /accept/i.test(name); };
  var isLoss = function (name) { return /^losses\//.test(name) && !isEntropy(name); };
  var isSpeed = function (name) { return /SPS$/.test(name); };
  var isValidation = function (name) { return name === "eval/validation_survival"; };

  function chartTraces() {
    var episodes = data.episodes.slice().sort(byStep);
    var refinements = data.refinements.slice().sort(byStep);
    var accepted = 0;
    var acceptance = { x: [], y: [], name: "accepted by simulation", mode: "lines+markers", type: "scatter" };
    refinements.forEach(function (refinement, i) {
      if (refinement.accepted_by_simulation) { accepted += 1; }
      acceptance.x.push(refinement.step);
      acceptance.y.push(accepted / (i + 1));
    });
    return {
      "chart-reward": [{ x: episodes.map(function (e) { return e.step; }), y: episodes.map(function (e) { return e.reward; }),
                         name: "episode reward", mode: "lines+markers", type: "scatter" }],
      "chart-survival": [{ x: episodes.map(function (e) { return e.step; }),
                           y: episodes.map(function (e) { return e.max_steps ? e.steps_survived / e.max_steps : 0; }),
                           name: "survived", mode: "lines+markers", type: "scatter" }].concat(
                           metricSeries(isValidation).map(function (trace) { trace.name = "validation days"; return trace; })),
      "chart-losses": metricSeries(isLoss),
      "chart-entropy": metricSeries(isEntropy),
      "chart-llm": metricSeries(isLlm),
      "chart-acceptance": (refinements.length ? [acceptance] : []).concat(metricSeries(isAcceptance)),
      "chart-speed": metricSeries(isSpeed)
    };
  }

  var pending = false;
  function draw() {
    pending = false;
    var traces = chartTraces();
    var total = 0;
    Object.keys(traces).forEach(function (id) {
      var el = document.getElementById(id);
      var points = traces[id].reduce(function (n, trace) { return n + trace.x.length; }, 0);
      total += points;
      el.dataset.points = points;
      if (!points) {
        if (!el.dataset.empty) { el.innerHTML = '<p class="muted chart-empty">' + el.dataset.title + ": no data yet</p>"; el.dataset.empty = "1"; }
        return;
      }
      if (el.dataset.empty) { el.innerHTML = ""; delete el.dataset.empty; }
      var layout = { title: { text: el.dataset.title, font: { size: 14 } }, margin: { l: 50, r: 10, t: 36, b: 36 },
                     xaxis: { title: { text: "step" } }, showlegend: traces[id].length > 1, height: 280,
                     legend: { orientation: "h", y: -0.25 } };
      window.Plotly.react(el, traces[id], layout, { displaylogo: false, responsive: true });
    });
    root.dataset.points = total;
  }
  function scheduleDraw() {
    if (!pending) { pending = true; setTimeout(draw, 200); }
  }

  link = window.GridLive.connect(root.dataset.socketPath, {
    onState: function (text) { liveEl.textContent = text; },
    onMessage: function (message) {
      if (message.kind === "snapshot") {
        reset();
        message.messages.forEach(apply);
      } else {
        apply(message);
      }
      scheduleDraw();
    }
  });
  draw();
})();
