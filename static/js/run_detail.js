/* The run page: live plotly charts fed by the run's websocket (a snapshot, then new rows).
   Every message has a kind and a row id; duplicates are dropped. One chart per meaning, each
   with its unit; episodes are points, metrics are lines broken where the steps jump
   (chart_series.js). The controls above the charts smooth every series (TensorBoard's EMA, the
   raw values faint behind), switch the y axes to a log scale, and put the decisions taken or the
   wall clock on the x axis (both read from the metric reports, linear between them); each chart's
   data downloads as CSV from its toolbar. While the run trains, the progress line shows the time
   left at the pace of its recent metric reports. */
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
  var totalSteps = parseInt((document.getElementById("run-total") || {}).textContent, 10) || 0;
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

  // One series per metric, in words (drawn as a line broken where the steps jump: GridCharts.withGaps).
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
      return { kind: "line", key: name, x: series[name].x, y: series[name].y, name: Charts.label(name) };
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

  function renamed(series, name) { return series.map(function (one) { one.name = name; return one; }); }

  // What each chart shows, by environment step: {kind: "points" | "line", key (a metric's name), x, y, name}.
  function chartSeries() {
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
    function episodePoints(y, name) { return episodes.length ? [{ kind: "points", x: steps, y: episodes.map(y), name: name }] : []; }
    return {
      "chart-reward": episodePoints(function (e) { return e.reward; }, "episode"),
      "chart-survival": episodePoints(function (e) { return e.max_steps ? e.steps_survived / e.max_steps : 0; }, "training episode")
        .concat(renamed(metricSeries(isValidation), "validation days")),
      "chart-losses": metricSeries(isLoss),
      "chart-entropy": metricSeries(isEntropy),
      "chart-alpha": metricSeries(isAlpha),
      "chart-llm": metricSeries(isLlmCalls),
      "chart-refinements": metricSeries(isRefinementCounts),
      "chart-acceptance": (refinements.length ? [{ kind: "line", x: shareX, y: shareY, name: "accepted by simulation, refinements so far" }] : [])
        .concat(renamed(metricSeries(isAcceptance), "accepted by simulation, as the trainer reports")),
      "chart-llm-time": metricSeries(isLlmTime),
      "chart-speed": metricSeries(isSpeed)
    };
  }

  var FRACTIONS = ["chart-survival", "chart-acceptance"];
  var EPISODE_CHARTS = ["chart-reward", "chart-survival"];

  // --- the controls (chart_series.js): smoothing, log scale, x axis of steps, decisions or wall clock ---
  // (step, value) pairs known from the metric reports: the decisions taken, or when it was reported.
  function knownAt(read) {
    var reports = data.metrics.slice().sort(byStep);
    return Charts.known(reports.map(function (point) { return point.step; }), reports.map(read));
  }

  function axis(mode) {
    if (mode === "decisions") { return knownAt(function (point) { return point.values["charts/decisions"]; }); }
    if (mode === "time") { return knownAt(function (point) { return point.time ? Date.parse(point.time) : null; }); }
    return null;
  }

  function csvLink(id, series) {
    if (EPISODE_CHARTS.indexOf(id) >= 0) { return root.dataset.episodesCsv; }
    var keys = series.map(function (one) { return one.key; }).filter(function (key) { return key; });
    return root.dataset.metricsCsv + (keys.length ? "?keys=" + keys.map(encodeURIComponent).join(",") : "");
  }

  // Plotly traces of a chart's series under the controls: x mapped to the chosen axis, smoothed.
  function traces(series, chosen, known) {
    return Charts.smoothed(series.map(function (one) {
      return Object.assign({}, one, { x: Charts.mapX(one.x, known) });
    }), chosen.smoothing);
  }

  // The time left while the run trains, at the pace of its last ETA_REPORTS metric reports.
  var etaEl = document.getElementById("run-eta");
  var ETA_REPORTS = 10;
  function duration(seconds) {
    if (seconds < 90) { return Math.max(1, Math.round(seconds)) + " s"; }
    if (seconds < 90 * 60) { return Math.round(seconds / 60) + " min"; }
    var minutes = Math.round(seconds / 60);
    return Math.floor(minutes / 60) + " h " + (minutes % 60) + " min";
  }
  function showEta() {
    if (!etaEl) { return; }
    var text = "";
    var timed = data.metrics.filter(function (point) { return point.time; }).sort(byStep);
    if (statusEl.textContent.trim() === "running" && totalSteps && timed.length >= 2) {
      var last = timed[timed.length - 1];
      var first = timed[Math.max(0, timed.length - 1 - ETA_REPORTS)];
      var seconds = (Date.parse(last.time) - Date.parse(first.time)) / 1000;
      var pace = seconds > 0 ? (last.step - first.step) / seconds : 0;
      var done = Math.max(last.step, parseInt(progressEl.textContent, 10) || 0);
      if (pace > 0 && done < totalSteps) {
        text = "· about " + duration((totalSteps - done) / pace) + " left at " +
          (pace >= 10 ? Math.round(pace) : pace.toFixed(1)) + " steps per second";
      }
    }
    etaEl.textContent = text;
    etaEl.hidden = !text;
  }

  var pending = false;
  function draw() {
    showEta();
    pending = false;
    var decisions = axis("decisions");
    controls.offer("decisions", decisions.steps.length > 0);
    var chosen = controls.read();
    var known = chosen.x === "step" ? null : (chosen.x === "decisions" ? decisions : axis("time"));
    if (known && !known.steps.length) { known = null; chosen.x = "step"; }
    var all = chartSeries();
    var total = 0;
    Object.keys(all).forEach(function (id) {
      var el = document.getElementById(id);
      var series = all[id];
      var points = series.reduce(function (n, one) { return n + one.y.length; }, 0);
      total += points;
      el.dataset.points = points;
      el.dataset.csv = csvLink(id, series);
      if (!points) {
        if (!el.dataset.empty) { el.innerHTML = '<p class="muted chart-empty">' + el.dataset.title + ": no data yet</p>"; el.dataset.empty = "1"; }
        return;
      }
      if (el.dataset.empty) { el.innerHTML = ""; delete el.dataset.empty; }
      var shown = traces(series, chosen, known);
      var layout = Charts.layout(el, el.dataset.title, el.dataset.y, shown.filter(function (t) { return t.showlegend !== false; }), Charts.X_TITLES[chosen.x]);
      layout.showlegend = series.length > 1;
      Charts.applyControls(layout, chosen, FRACTIONS.indexOf(id) >= 0);
      var csv = el.dataset.csv;
      var config = { displaylogo: false, responsive: true, modeBarButtonsToAdd: [{
        name: "Download the chart's data as CSV", icon: window.Plotly.Icons.disk,
        click: function () { window.location.href = csv; }
      }] };
      window.Plotly.react(el, shown, layout, config);
    });
    root.dataset.points = total;
    root.dataset.smoothing = chosen.smoothing;
    root.dataset.x = chosen.x;
  }
  function scheduleDraw() {
    if (!pending) { pending = true; setTimeout(draw, 200); }
  }

  var controls = Charts.controls({ onSmoothing: scheduleDraw, onChange: draw });

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
