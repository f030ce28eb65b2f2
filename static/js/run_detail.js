/* The run page: live plotly charts fed by the run's websocket (a snapshot, then new rows).
   Every message has a kind and a row id; duplicates are dropped. One chart per meaning, each
   with its unit; episodes are points, metrics are lines broken where the steps jump
   (chart_series.js). */
(function () {
  "use strict";
  var root = document.getElementById("charts");
  if (!root || !window.GridLive || !window.GridCharts) { return; }
  var Charts = window.GridCharts;

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

  // One trace per metric, in words, broken where the steps jump (GridCharts.withGaps).
  function metricSeries(filter) {
    var series = {};
    data.metrics.slice().sort(byStep).forEach(function (point) {
      Object.keys(point.values).forEach(function (name) {
        var value = point.values[name];
        if (value === null || value === undefined || !filter(name)) { return; }
        if (!series[name]) { series[name] = { x: [], y: [] }; }
        series[name].x.push(point.step);
        series[name].y.push(value);
      });
    });
    return Object.keys(series).sort().map(function (name) {
      return Charts.line(series[name].x, series[name].y, Charts.label(name));
    });
  }

  // Metric names are namespaced (losses/..., charts/..., llm/...); each chart takes one meaning.
  function oneOf(names) { return function (name) { return names.indexOf(name) >= 0; }; }
  var isEntropy = oneOf(["losses/entropy"]);
  var isAlpha = oneOf(["losses/alpha"]);
  var isLoss = function (name) {
    return /^losses\//.test(name) && !isEntropy(name) && !isAlpha(name) && name !== "losses/q_target_mean";
  };
  var isLlmCalls = oneOf(["llm/calls", "llm/critic_calls", "llm/critic_refused"]);
  var isRefinementCounts = oneOf(["llm/refinements", "llm/accepted", "llm/approved", "llm/rejected",
    "llm/awaiting_approval", "llm/shapings", "llm/finetunes"]);
  var isAcceptance = oneOf(["llm/acceptance_rate"]);
  var isLlmTime = function (name) { return /^llm\/.*_seconds$/.test(name); };
  var isSpeed = oneOf(["charts/SPS"]);
  var isValidation = oneOf(["eval/validation_survival"]);

  function chartTraces() {
    var episodes = data.episodes.slice().sort(byStep);
    var refinements = data.refinements.slice().sort(byStep);
    var accepted = 0;
    var shareX = [], shareY = [];
    refinements.forEach(function (refinement, i) {
      if (refinement.accepted_by_simulation) { accepted += 1; }
      shareX.push(refinement.step);
      shareY.push(accepted / (i + 1));
    });
    var steps = episodes.map(function (e) { return e.step; });
    // episodes are points: each stands alone, so none is joined to the next
    return {
      "chart-reward": episodes.length ? [Charts.points(steps, episodes.map(function (e) { return e.reward; }), "episode")] : [],
      "chart-survival": (episodes.length ? [Charts.points(steps,
        episodes.map(function (e) { return e.max_steps ? e.steps_survived / e.max_steps : 0; }), "training episode")] : [])
        .concat(metricSeries(isValidation).map(function (trace) { trace.name = "validation days"; return trace; })),
      "chart-losses": metricSeries(isLoss),
      "chart-entropy": metricSeries(isEntropy),
      "chart-alpha": metricSeries(isAlpha),
      "chart-llm": metricSeries(isLlmCalls),
      "chart-refinements": metricSeries(isRefinementCounts),
      "chart-acceptance": (refinements.length ? [Charts.line(shareX, shareY, "accepted by simulation, refinements so far")] : [])
        .concat(metricSeries(isAcceptance).map(function (trace) { trace.name = "accepted by simulation, as the trainer reports"; return trace; })),
      "chart-llm-time": metricSeries(isLlmTime),
      "chart-speed": metricSeries(isSpeed)
    };
  }

  var FRACTIONS = ["chart-survival", "chart-acceptance"];

  var pending = false;
  function draw() {
    pending = false;
    var traces = chartTraces();
    var total = 0;
    Object.keys(traces).forEach(function (id) {
      var el = document.getElementById(id);
      var points = traces[id].reduce(function (n, trace) {
        return n + trace.y.filter(function (v) { return v !== null; }).length;
      }, 0);
      total += points;
      el.dataset.points = points;
      if (!points) {
        if (!el.dataset.empty) { el.innerHTML = '<p class="muted chart-empty">' + el.dataset.title + ": no data yet</p>"; el.dataset.empty = "1"; }
        return;
      }
      if (el.dataset.empty) { el.innerHTML = ""; delete el.dataset.empty; }
      var layout = Charts.layout(el, el.dataset.title, el.dataset.y, traces[id]);
      if (FRACTIONS.indexOf(id) >= 0) { layout.yaxis.range = [0, 1.05]; }
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
