/* The operator's console: the diagram, timeline, alarms, recommendations and what-if panel,
   fed by the session's websocket (a snapshot, then one message per step and panel updates).
   Buttons post JSON to the console's endpoints; refusals are shown as they come back. */
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("console-config").textContent);
  var diagram = document.getElementById("diagram");
  var timeline = document.getElementById("timeline");
  var view = { layout: null, state: null, step: -1, session: config.session, recs: [] };
  window.gridaceLatencies = [];  // ms from the worker's step to the diagram and cards drawn (the browser test reads it)
  window.gridaceLatencySteps = [];  // the step of each of those
  var link = null;

  function $(id) { return document.getElementById(id); }
  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) { node.textContent = text; }
    return node;
  }
  function pct(rho) { return rho === null || rho === undefined ? "n/a" : (rho * 100).toFixed(1) + "%"; }
  function csrf() {
    var match = document.cookie.match(/(?:^|; )csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }
  function post(url, body) {
    return fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf() },
      body: JSON.stringify(body || {})
    }).then(function (response) {
      return response.json().then(function (data) {
        if (!response.ok) { throw new Error(data.error || ("HTTP " + response.status)); }
        return data;
      });
    });
  }
  function notice(text, isError) {
    var box = $("notice");
    box.textContent = text;
    box.className = isError ? "error" : "notice";
    box.hidden = !text;
  }

  // ----- session header -----
  function showSession(session) {
    view.session = session;
    $("session-status").textContent = session.status + (session.end_reason ? " (" + session.end_reason + ")" : "");
    $("session-status").className = "status status-" + session.status;
    $("session-speed").textContent = session.speed_seconds;
    var live = session.status === "running" || session.status === "paused";
    document.querySelectorAll(".control").forEach(function (b) { b.disabled = !live; });
  }

  // ----- diagram and timeline -----
  function drawState(stepped_at) {
    if (!view.layout || !view.state) { return; }
    $("step").textContent = view.state.step;
    $("grid-time").textContent = view.state.time;
    $("max-rho").textContent = pct(view.state.max_rho);
    $("max-rho").className = view.state.max_rho >= 1 ? "bad" : "";
    $("overloads").textContent = view.state.overloads.length;
    var step = view.state.step;
    var security = (view.assessment || {}).security || {};
    var extras = { atRisk: (security.n1 && security.n1.lines_at_risk) || [], highlight: view.highlight || [] };
    GridDiagram.draw(diagram, view.layout, view.state, extras).then(function () {
      diagram.dataset.step = step;
      diagram.dataset.rendered = String(Number(diagram.dataset.rendered || 0) + 1);
      if (stepped_at) { window.gridaceLatencies.push(Date.now() - stepped_at); window.gridaceLatencySteps.push(step); }
    });
  }
  function resetTimeline(t) {
    Plotly.react(timeline, [
      { x: t.step, y: t.max_rho, name: "max rho", type: "scatter", mode: "lines", line: { color: "#1f77b4" } },
      { x: t.step, y: t.overloads, name: "overloads", type: "bar", yaxis: "y2", marker: { color: "#d62728" }, opacity: 0.5 }
    ], {
      margin: { l: 45, r: 45, t: 10, b: 30 }, legend: { orientation: "h" }, height: 220,
      yaxis: { title: "max rho", rangemode: "tozero" },
      yaxis2: { title: "overloads", overlaying: "y", side: "right", rangemode: "tozero", dtick: 1 },
      shapes: [{ type: "line", xref: "paper", x0: 0, x1: 1, y0: 1, y1: 1, line: { color: "#d62728", dash: "dot", width: 1 } }]
    }, { displayModeBar: false, responsive: true });
  }

  // ----- alarms, decisions, recommendations -----
  function showAlarms(alarms) {
    var list = $("alarms");
    list.textContent = "";
    var open = 0;
    alarms.forEach(function (alarm) {
      var item = el("li", { id: "alarm-" + alarm.id, "class": "alarm alarm-" + alarm.kind + " alarm-" + (alarm.severity || "warning") + (alarm.acknowledged_at ? " acked" : "") });
      item.appendChild(el("span", { "class": "when" }, "step " + alarm.step + " · " + alarm.raised_at.slice(11, 19)));
      item.appendChild(el("span", { "class": "severity" }, " " + (alarm.severity || "warning") + ":"));
      item.appendChild(el("span", { "class": "what" }, " " + alarm.message + " "));
      if (alarm.acknowledged_at) {
        item.appendChild(el("span", { "class": "muted" }, "acknowledged by " + alarm.acknowledged_by));
      } else {
        open += 1;
        if (config.canOperate) {
          var button = el("button", { type: "button", "class": "ack" }, "Acknowledge");
          button.addEventListener("click", function () {
            post(config.urls.ack.replace("{id}", alarm.id)).then(function () { notice(""); }, function (e) { notice(e.message, true); });
          });
          item.appendChild(button);
        }
      }
      list.appendChild(item);
    });
    $("alarm-count").textContent = open;
  }
  function addAlarms(alarms) {
    if (!alarms.length) { return; }
    var current = view.alarms || [];
    view.alarms = alarms.concat(current).slice(0, 50);
    showAlarms(view.alarms);
  }
  function showDecisions(decisions) {
    view.decisions = decisions;
    var list = $("decisions");
    list.textContent = "";
    decisions.forEach(function (d) {
      var outcome = d.outcome && d.outcome.max_rho !== undefined ? " → max rho " + pct(d.outcome.max_rho) + " at step " + d.outcome.step : "";
      list.appendChild(el("li", { id: "decision-" + d.id, "class": "decision decision-" + d.status },
        "step " + d.step + ": " + d.decided_by + " " + d.kind + " «" + d.description + "» — " + d.status + outcome));
    });
  }
  // ----- figures shared by cards, the reference and the what-if -----
  function n1Words(n1) {
    if (!n1) { return "N-1 not screened"; }
    var w = n1.worst;
    var text = n1.secure ? "N-1 secure" : "N-1: " + n1.n_overloading + " outage(s) overload a line";
    if (w) { text += " · worst: losing " + w.outage_name + " loads " + w.worst_line_name + " at " + pct(w.max_rho); }
    if (n1.diverged && n1.diverged.length) { text += " · " + n1.diverged.length + " outage(s) cut off a load or generator"; }
    return text;
  }
  function sparkline(values) {
    // the look-ahead's max rho per step, as a small inline SVG (the 100 % line dotted)
    var ns = "http://www.w3.org/2000/svg";
    var width = 96, height = 24, top = Math.max(1.1, Math.max.apply(null, values));
    var svg = document.createElementNS(ns, "svg");
    svg.setAttribute("class", "sparkline");
    svg.setAttribute("width", width);
    svg.setAttribute("height", height);
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    function y(v) { return (height - 2) - (v / top) * (height - 4); }
    var limit = document.createElementNS(ns, "line");
    limit.setAttribute("x1", 0); limit.setAttribute("x2", width);
    limit.setAttribute("y1", y(1)); limit.setAttribute("y2", y(1));
    limit.setAttribute("class", "spark-limit");
    svg.appendChild(limit);
    var points = values.map(function (v, i) {
      return (values.length > 1 ? i * width / (values.length - 1) : 0).toFixed(1) + "," + y(v).toFixed(1);
    });
    var path = document.createElementNS(ns, "polyline");
    path.setAttribute("points", points.join(" "));
    path.setAttribute("class", Math.max.apply(null, values) >= 1 ? "spark-line spark-over" : "spark-line");
    svg.appendChild(path);
    var title = document.createElementNS(ns, "title");
    title.textContent = "max rho over the look-ahead: " + values.map(pct).join(", ");
    svg.appendChild(title);
    return svg;
  }
  function lookAheadBox(la) {
    var box = el("p", { "class": "rec-lookahead" });
    if (!la) { box.textContent = "look-ahead: not run for this card"; return box; }
    if (la.skipped) { box.textContent = "look-ahead skipped: " + la.skipped; return box; }
    box.appendChild(el("span", {}, "next " + la.forecast.horizon_minutes + " min: "));
    if (la.max_rho && la.max_rho.length) { box.appendChild(sparkline(la.max_rho)); }
    var when = la.game_over_step ? " game over at step +" + la.game_over_step :
      (la.first_overload_minutes !== null && la.first_overload_minutes !== undefined ? " overload in " + la.first_overload_minutes + " min" : " no overload");
    box.appendChild(el("span", { "class": la.game_over_step || la.first_overload_minutes !== null ? "bad" : "" }, when));
    return box;
  }
  // the action played on the grid as it is now, not on the next step's forecast: a forecast's
  // load error falls on the slack generator, and a split that leaves it one line can look safe
  // (absent on grids without forecasts: the card's own figures are then the grid as it is)
  function nowBox(now) {
    var text = now.game_over ? "as the grid is now: game over in simulation" : "as the grid is now: max rho " + pct(now.max_rho_after);
    if (!now.game_over && now.overloads_after.length) { text += " · overloads " + lineList(now.overloads_after); }
    return el("p", { "class": "rec-now" + (now.game_over || now.max_rho_after >= 1 ? " warn" : "") }, text);
  }
  // the margins of ace_core.live.alarms (N1_MORE_OUTAGES, N1_HIGHER_RHO)
  function n1Worse(base, n1) {
    var worst = n1.worst ? n1.worst.max_rho : 0;
    return n1.n_overloading > base.n_overloading + 2 || worst > (base.worst_rho || 0) + 0.10;
  }
  function lineList(ids) {
    return ids.map(function (i) { return view.layout && view.layout.lines[i] ? view.layout.lines[i].name : String(i); }).join(", ");
  }
  var SOURCE_WORDS = { policy: "policy", expert: "expert", both: "policy + expert", "default": "reconnect", flex: "continuous move" };
  // a continuous move's cost, e.g. "12.0 MW redispatched, 480 EUR/h"
  function costWords(cost) {
    var parts = [];
    if (cost.redispatched_mw) { parts.push(cost.redispatched_mw.toFixed(1) + " MW redispatched"); }
    if (cost.curtailed_mw) { parts.push(cost.curtailed_mw.toFixed(1) + " MW curtailed"); }
    if (cost.storage_mw) { parts.push(cost.storage_mw.toFixed(1) + " MW from storage"); }
    if (!parts.length) { parts.push("0.0 MW moved"); }
    return parts.join(", ") + ", " + Math.round(cost.euros_per_hour) + " EUR/h";
  }

  // ----- the agent's early warning (ace_core.recommend.alert): every option looked ahead fails
  // (critical) or overloads (warning) within the horizon; a banner above the cards while it lasts,
  // each line by its one name (grid2op's raw name only in its tooltip)
  function showAlert(alert) {
    var banner = $("early-warning");
    banner.textContent = "";
    if (!alert || !alert.level) {
      banner.hidden = true;
      banner.className = "early-warning";
      banner.dataset.level = "";
      return;
    }
    var failure = alert.level === "failure";
    banner.className = "early-warning early-warning-" + (failure ? "critical" : "warning");
    banner.dataset.level = alert.level;
    banner.appendChild(el("strong", {}, "Early warning: "));
    banner.appendChild(el("span", { "class": "expected" },
      (failure ? "game over expected in about " : "overload expected in ") + alert.in_minutes + " min whatever is done"));
    var lines = alert.lines || [];
    if (lines.length) {
      banner.appendChild(document.createTextNode(" · lines at risk: "));
      lines.forEach(function (id, i) {
        var line = view.layout && view.layout.lines ? view.layout.lines[id] : null;
        if (i) { banner.appendChild(document.createTextNode(", ")); }
        banner.appendChild(el("span", { "class": "line", "data-line": id, title: line ? line.raw : "" }, line ? line.name : "a line"));
      });
    }
    if (alert.option) {
      banner.appendChild(document.createTextNode(" · best option looked ahead: "));
      banner.appendChild(el("span", { "class": "option" }, alert.option));
    }
    banner.hidden = false;
  }

  // ----- the step's assessment: forecast, doing nothing, the grid's N-1, rejected candidates -----
  // (steps leave out the fields webapp.live.session_messages.ASSESSMENT_HIDDEN names, as a card's
  // CARD_HIDDEN: a field shown here must not be named there)
  function showAssessment(assessment) {
    view.assessment = assessment || {};
    var a = view.assessment;
    var forecast = a.forecast || {};
    var kind = $("forecast-kind");
    kind.textContent = forecast.kind ? forecast.description : "–";
    kind.className = "forecast forecast-" + (forecast.kind || "none");
    kind.dataset.kind = forecast.kind || "";
    showAlert(a.alert);
    var security = a.security || {};
    var alarms = $("security-alarms");
    alarms.textContent = "";
    // N-1 is shown against the session's baseline (its first step): a grid that is never N-1
    // secure is not a permanent alarm; worse than the baseline is
    var base = a.n1_baseline;
    var worse = security.n1 && base && n1Worse(base, security.n1);
    (security.alarms || []).forEach(function (text) {
      if (base && !worse && /^not N-1 secure/.test(text)) { return; }  // the baseline, said below
      alarms.appendChild(el("li", { "class": "security-alarm" }, text));
    });
    var n1 = $("n1-status");
    n1.textContent = security.n1 ? n1Words(security.n1) : "–";
    if (security.n1 && base && !security.n1.secure) {
      n1.textContent += worse ? " — worse than at the session's start (" + base.n_overloading + " outage(s) at step " + base.step + ")"
        : " — as usual for this grid (baseline at step " + base.step + ": " + base.n_overloading + " outage(s))";
    }
    n1.className = !security.n1 || security.n1.secure ? "ok" : (base && !worse ? "baseline" : "bad");
    n1.dataset.baseline = base && !worse ? "yes" : "no";
    var outages = $("n1-outages");
    outages.textContent = "";
    ((security.n1 && security.n1.outages) || []).forEach(function (o) {
      outages.appendChild(el("li", {}, o.diverged ? "losing " + o.outage_name + ": " + (o.reason || "no power flow") :
        "losing " + o.outage_name + " overloads " + lineList(o.overloaded) + " (worst " + o.worst_line_name + " " + pct(o.max_rho) + ")"));
    });
    var ref = $("reference");
    ref.textContent = "";
    if (a.reference) {
      ref.appendChild(el("p", { "class": "rec-action" }, "Doing nothing (reference)"));
      ref.appendChild(el("p", { "class": "rec-facts" }, a.reference.outcome));
      ref.appendChild(lookAheadBox(a.reference.look_ahead));
    }
    var rejected = a.rejected || [];
    $("rejected-count").textContent = rejected.length;
    var list = $("rejected-list");
    list.textContent = "";
    rejected.forEach(function (c) {
      var item = el("li", { "class": "rejected-item" });
      item.appendChild(el("strong", {}, c.description));
      item.appendChild(el("span", { "class": "muted" }, " (" + (SOURCE_WORDS[c.source] || c.source) + ")"));
      item.appendChild(el("span", { "class": "reason" }, " — " + c.rejected_because));
      list.appendChild(item);
    });
  }

  // A card lasts while its situation does: the feed re-simulates it at each step and sends it
  // with the same id, so its element (and the buttons under the operator's pointer) stays and
  // only its figures change; a card that leaves is removed, with the reason in the notice line.
  function showRecs(recs, expired) {
    view.recs = recs;
    view.recsById = {};
    recs.forEach(function (rec) { view.recsById[rec.id] = rec; });
    var box = $("recommendations");
    var empty = box.querySelector(".no-recs");
    if (empty) { empty.remove(); }
    Array.prototype.slice.call(box.querySelectorAll(".rec-card")).forEach(function (card) {
      if (!view.recsById[card.dataset.id]) { card.remove(); }
    });
    (expired || []).forEach(function (gone) {
      notice("Card «" + gone.description + "» expired: " + gone.reason);
    });
    if (!recs.length) { box.appendChild(el("p", { "class": "muted no-recs" }, "No action beats doing nothing at this step.")); }
    var pending = view.pendingDecision;
    if (pending && view.recsById[pending.id] && view.recsById[pending.id].status === "open") {
      setTimeout(function () { onCard(pending.what, view.recsById[pending.id]); }, 0);
    } else if (pending) {
      view.pendingDecision = null;
      notice("The card expired before your decision could go.", true);
    }
    recs.forEach(function (rec, i) {
      var card = $("rec-" + rec.id) || newCard(rec);
      fillCard(card, rec);
      if (box.children[i] !== card) { box.insertBefore(card, box.children[i] || null); }
    });
  }
  function newCard(rec) {
    var card = el("article", { id: "rec-" + rec.id, "data-id": rec.id, tabindex: "0" });
    card.appendChild(el("div", { "class": "rec-body" }));
    card.addEventListener("mouseenter", function () {
      var figures = (view.recsById[rec.id] || {}).figures || {};
      highlight(figures.substations || [], figures.n1);
    });
    card.addEventListener("mouseleave", function () { highlight([], null); });
    if (config.canOperate) {
      var actions = el("div", { "class": "actions" });
      [["accept", "Accept (a)"], ["reject", "Reject (r)"], ["whatif", "What-if"], ["explain", "Explain"]].forEach(function (pair) {
        var b = el("button", { type: "button", "class": pair[0] }, pair[1]);
        b.addEventListener("click", function () { onCard(pair[0], view.recsById[rec.id]); });
        actions.appendChild(b);
      });
      card.appendChild(actions);
    }
    return card;
  }
  // the explanation: the simulation's facts first, then the LLM's text, labelled and with the
  // figures it quotes that disagree with the simulation
  function explanationBox(rec) {
    var box = el("div", { "class": "explanation explanation-" + rec.explanation_status });
    if (rec.explanation_facts) {
      box.appendChild(el("p", { "class": "explanation-facts" }, rec.explanation_facts));
    }
    if (rec.explanation_status === "pending") {
      box.appendChild(el("p", { "class": "explanation-generated muted" }, "asking the LLM…"));
    } else if (rec.explanation_status === "failed") {
      box.appendChild(el("p", { "class": "explanation-generated error" }, "the LLM gave no explanation: " + rec.explanation));
    } else if (rec.explanation) {
      var generated = el("blockquote", { "class": "explanation-generated" });
      generated.appendChild(el("p", { "class": "explanation-label muted" },
        "generated by " + (rec.explanation_model || "a language model") + ", not verified"));
      generated.appendChild(el("p", {}, rec.explanation));
      var flags = rec.explanation_flags || [];
      if (flags.length) {
        var list = el("ul", { "class": "explanation-flags warn" });
        flags.forEach(function (flag) { list.appendChild(el("li", {}, flag)); });
        generated.appendChild(list);
      }
      box.appendChild(generated);
    }
    return box;
  }
  function fillCard(card, rec) {
    var figures = rec.figures || {};
    card.className = "rec-card rec-" + rec.status;
    card.dataset.step = rec.step;
    card.dataset.firstStep = rec.first_step;
    card.dataset.substations = (figures.substations || []).join(",");
    var body = el("div", { "class": "rec-body" });
    var head = el("header");
    head.appendChild(el("strong", {}, "#" + (rec.rank + 1) + " "));
    head.appendChild(el("span", { "class": "source source-" + rec.source }, SOURCE_WORDS[rec.source] || rec.source));
    if (rec.confidence > 0) { head.appendChild(el("span", { "class": "confidence" }, " confidence " + (rec.confidence * 100).toFixed(1) + "%")); }
    head.appendChild(el("span", { "class": "rec-status" }, " " + rec.status));
    if (rec.action && rec.action.kind === "pair") {
      head.appendChild(el("span", { "class": "rec-pair", title: "no single move clears the overloads: both are played together, in one step" },
        " · two moves in one step"));
    }
    var lasted = view.step - rec.first_step;
    head.appendChild(el("span", { "class": "rec-age muted",
      title: "first shown at step " + rec.first_step + "; re-simulated at every step since" },
      lasted > 0 ? " · valid for " + lasted + " step" + (lasted > 1 ? "s" : "") + " (since step " + rec.first_step + ")" : " · new"));
    body.appendChild(head);
    if (figures.rank_reason) { body.appendChild(el("p", { "class": "rec-why muted" }, figures.rank_reason)); }
    body.appendChild(el("p", { "class": "rec-action" }, rec.description));
    var facts = "max rho " + pct(rec.max_rho_before) + " → " + pct(rec.max_rho_after);
    if (rec.lines_relieved.length) { facts += " · relieves " + lineList(rec.lines_relieved); }
    if (rec.new_overloads.length) { facts += " · creates overloads on " + lineList(rec.new_overloads); }
    if (!rec.lines_relieved.length && !rec.new_overloads.length) { facts += " · no overload relieved or created"; }
    body.appendChild(el("p", { "class": "rec-facts" }, facts));
    if (figures.cost) { body.appendChild(el("p", { "class": "rec-cost" }, costWords(figures.cost))); }
    if (figures.now) { body.appendChild(nowBox(figures.now)); }
    body.appendChild(el("p", { "class": "rec-n1" + (figures.n1 && !figures.n1.secure ? " warn" : "") }, n1Words(figures.n1)));
    body.appendChild(lookAheadBox(figures.look_ahead));
    if (rec.error) { body.appendChild(el("p", { "class": "error" }, rec.error)); }
    if (rec.explanation_status) { body.appendChild(explanationBox(rec)); }
    card.replaceChild(body, card.querySelector(".rec-body"));
    var open = rec.status === "open";
    card.querySelectorAll("button.accept, button.reject").forEach(function (b) { b.disabled = !open; });
  }
  // keyboard: 1-9 focus a card, then a accepts and r rejects the focused card
  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) { return; }
    var target = event.target;
    if (target && /^(INPUT|SELECT|TEXTAREA)$/.test(target.tagName)) { return; }
    var cards = $("recommendations").querySelectorAll(".rec-card");
    if (/^[1-9]$/.test(event.key) && cards[Number(event.key) - 1]) {
      cards[Number(event.key) - 1].focus();
      return;
    }
    var card = target && target.closest ? target.closest(".rec-card") : null;
    if (!card || !config.canOperate) { return; }
    var rec = view.recsById[card.dataset.id];
    if (rec && rec.status === "open" && (event.key === "a" || event.key === "r")) {
      event.preventDefault();
      onCard(event.key === "a" ? "accept" : "reject", rec);
    }
  });
  function highlight(substations, n1) {
    view.highlight = substations;
    diagram.dataset.highlight = substations.join(",");
    if (view.layout && view.state) { GridDiagram.highlight(diagram, view.layout, substations); }
  }
  function onCard(what, rec) {
    if (what === "accept" || what === "reject") {
      if (!rec) { notice("This card has expired.", true); return; }
      view.pendingDecision = null;
      post(config.urls.decide, { recommendation: rec.id, step: rec.step, decision: what }).then(function (data) {
        notice(what === "accept" ? "Accepted: «" + rec.description + "» will be played at the next step." : "Rejected.");
      }, function (e) {
        // the grid was between two steps (its decisions closed while the next one is computed):
        // the card lasts, so the decision goes again as soon as the next step shows it still open
        if (/moving to the next one/.test(e.message)) {
          view.pendingDecision = { id: rec.id, what: what };
          notice("The grid is moving to the next step: your decision goes as soon as it arrives…");
        } else { notice(e.message, true); }
      });
    } else if (what === "explain") {
      post(config.urls.explain.replace("{id}", rec.id)).then(function () { notice("Explanation requested."); },
        function (e) { notice(e.message, true); });
    } else {
      fillWhatIf(rec.action, rec.description);
      simulate();
    }
  }

  // ----- what-if panel -----
  function fillSubstations() {
    var select = $("wi-sub");
    select.textContent = "";
    view.layout.substations.forEach(function (sub) { select.appendChild(el("option", { value: sub.id }, sub.id + " · " + sub.name)); });
    ["wi-line", "wi-line2"].forEach(function (id) {
      var lines = $(id);
      lines.textContent = "";
      view.layout.lines.forEach(function (line) { lines.appendChild(el("option", { value: line.id }, line.id + " · " + line.name)); });
    });
    fillElements();
    fillMoveKinds();
  }
  // ----- a continuous move beside the action: only the kinds this grid has units for -----
  function moveUnits(kind) {
    var layout = view.layout || {};
    if (!layout.move_kinds || layout.move_kinds.indexOf(kind) < 0) { return []; }
    if (kind === "storage") { return layout.storages || []; }
    return (layout.generators || []).filter(function (g) { return kind === "curtail" ? g.renewable : g.redispatchable; });
  }
  function fillMoveKinds() {
    var any = false;
    Array.prototype.forEach.call($("wi-move-kind").options, function (option) {
      if (!option.value) { return; }
      option.hidden = option.disabled = !moveUnits(option.value).length;
      any = any || !option.disabled;
    });
    $("wi-move").hidden = !any;
    if (!any) { $("wi-move-kind").value = ""; }
    fillMoveUnits();
  }
  function fillMoveUnits(unit) {
    var kind = $("wi-move-kind").value;
    $("wi-move-setpoint").hidden = !kind;
    var select = $("wi-move-unit");
    select.textContent = "";
    moveUnits(kind).forEach(function (u) { select.appendChild(el("option", { value: u.id }, u.id + " · " + u.name + " (" + u.raw + ")")); });
    if (unit !== undefined) { select.value = String(unit); }
    showMoveLimits();
  }
  function showMoveLimits() {
    var kind = $("wi-move-kind").value;
    var unit = moveUnits(kind).filter(function (u) { return String(u.id) === $("wi-move-unit").value; })[0];
    var text = "";
    if (unit && kind === "redispatch") { text = "ramp +" + unit.ramp_up + " / −" + unit.ramp_down + " MW per step, Pmax " + unit.pmax + " MW"; }
    if (unit && kind === "curtail") { text = "from 0 to its Pmax " + unit.pmax + " MW"; }
    if (unit && kind === "storage") { text = "from −" + unit.max_p_prod + " MW (discharging) to +" + unit.max_p_absorb + " MW (charging)"; }
    $("wi-move-limits").textContent = text;
  }
  function composedMove() {
    var kind = $("wi-move-kind").value;
    var mw = Number($("wi-move-mw").value);
    if ($("wi-move").hidden || !kind || $("wi-move-unit").value === "" || !isFinite(mw)) { return null; }
    var move = {};
    move[kind] = [[Number($("wi-move-unit").value), mw]];
    return move;
  }
  function fillMove(move) {
    var kind = move ? ["redispatch", "curtail", "storage"].filter(function (k) { return move[k] && move[k].length; })[0] : "";
    $("wi-move-kind").value = kind || "";
    fillMoveUnits(kind ? move[kind][0][0] : undefined);
    $("wi-move-mw").value = kind ? String(move[kind][0][1]) : "0";
  }
  function fillElements(chosen) {
    var sub = view.layout.substations[Number($("wi-sub").value)];
    var box = $("wi-elements");
    box.textContent = "";
    sub.elements.forEach(function (label, j) {
      var row = el("label", { "class": "wi-element" }, label + " ");
      var current = view.state ? view.state.bus[sub.start + j] : 1;
      var select = el("select", { "data-element": j, id: "wi-el-" + j });
      [["", "keep (bus " + current + ")"], ["1", "bus 1"], ["2", "bus 2"]].forEach(function (opt) {
        select.appendChild(el("option", { value: opt[0] }, opt[1]));
      });
      if (chosen && chosen[j]) { select.value = String(chosen[j]); }
      row.appendChild(select);
      box.appendChild(row);
    });
  }
  function showKind() {
    var kind = $("wi-kind").value;
    $("wi-topology").hidden = kind !== "topology";
    $("wi-line-box").hidden = kind !== "line";
    $("wi-pair-box").hidden = kind !== "pair";
  }
  function fillWhatIf(action, description) {
    $("wi-with-line").checked = false;
    $("wi-second-line").hidden = true;
    if (action.kind === "topology") {
      $("wi-kind").value = "topology";
      $("wi-sub").value = String(action.substation);
      var chosen = {};
      action.set.forEach(function (pair) { chosen[pair[0]] = pair[1]; });
      fillElements(chosen);
    } else if (action.kind === "line") {
      $("wi-kind").value = "line";
      $("wi-line").value = String(action.line);
      $("wi-line-status").value = action.status;
    } else if (action.kind === "pair") {
      // a combined card: its two moves are simulated and applied together, as the card was
      view.whatIfPair = { kind: "pair", actions: action.actions };
      $("wi-pair-option").hidden = $("wi-pair-option").disabled = false;
      $("wi-pair").textContent = description;
      $("wi-kind").value = "pair";
    } else {
      $("wi-kind").value = "nothing";
    }
    showKind();
    fillMove(action.move);
  }
  function composed() {
    var action = composedAction();
    var move = composedMove();
    if (move) { action.move = move; }
    return action;
  }
  function composedAction() {
    var kind = $("wi-kind").value;
    if (kind === "topology") {
      var set = [];
      document.querySelectorAll("#wi-elements select").forEach(function (s) {
        if (s.value) { set.push([Number(s.dataset.element), Number(s.value)]); }
      });
      var topology = { kind: "topology", substation: Number($("wi-sub").value), set: set };
      if (!$("wi-with-line").checked) { return topology; }
      // a pair made by hand: the grid's rules allow one substation and one line per step
      return { kind: "pair", actions: [topology,
        { kind: "line", line: Number($("wi-line2").value), status: $("wi-line2-status").value }] };
    }
    if (kind === "line") { return { kind: "line", line: Number($("wi-line").value), status: $("wi-line-status").value }; }
    if (kind === "pair" && view.whatIfPair) { return { kind: "pair", actions: view.whatIfPair.actions }; }
    return { kind: "nothing" };
  }
  function simulate() {
    var result = $("wi-result");
    result.textContent = "simulating…";
    result.className = "";
    post(config.urls.whatIf, { step: view.step, action: composed() }).then(function (data) {
      var w = data.what_if;
      result.dataset.step = w.step;
      if (!w.legal) {
        result.className = "error";
        result.textContent = "Refused: " + w.refusal;
        return;
      }
      var text = "«" + w.description + "» at step " + w.step + ": max rho " + pct(w.max_rho_before) + " → " + pct(w.max_rho_after);
      text += w.overloads_after.length ? " · overloads after: " + lineList(w.overloads_after) : " · no overload after";
      if (w.lines_relieved.length) { text += " · relieves " + lineList(w.lines_relieved); }
      var figures = w.figures || {};
      if (figures.cost) { text += " · " + costWords(figures.cost); }
      if (w.stale) { text += " (the grid has moved on since)"; }
      // green only when safe now and over the look-ahead: a game over ahead is a warning too
      var ahead = figures.look_ahead || {}, now = figures.now || {};
      result.className = w.max_rho_after >= 1 || now.max_rho_after >= 1 || now.game_over || figures.rejected_because || ahead.game_over_step ? "warn" : "ok";
      result.textContent = "";
      result.appendChild(el("span", {}, text));
      if (figures.now) { result.appendChild(nowBox(figures.now)); }
      result.appendChild(el("span", { "class": "wi-n1" }, " · " + n1Words(figures.n1)));
      result.appendChild(lookAheadBox(figures.look_ahead));
      if (figures.rejected_because) {
        result.appendChild(el("span", { "class": "wi-worse" }, "Not recommended against doing nothing: " + figures.rejected_because));
      }
    }, function (e) { result.className = "error"; result.textContent = e.message; });
  }
  function applyComposed() {
    post(config.urls.apply, { step: view.step, action: composed() }).then(function (data) {
      notice("Your action «" + data.decision.description + "» will be played at the next step.");
    }, function (e) { notice(e.message, true); });
  }

  // ----- controls -----
  function control(command, extra) {
    var body = Object.assign({ command: command }, extra || {});
    post(config.urls.control, body).then(function (data) { showSession(data.session); notice(""); },
      function (e) { notice(e.message, true); });
  }

  // ----- messages -----
  // A step's assessment and each of its cards come as a part (webapp.live.session_messages): the
  // value whole, or what changed since the previous step, {set: [[path, value], ...], unset:
  // [path, ...]} with dotted paths (list positions as digits). Merged in place into what the page
  // has; null when the page lacks what the changes apply to.
  function applyChanges(current, part) {
    if ("whole" in part) { return part.whole; }
    if (!current) { return null; }
    var fits = true;
    function at(path, change) {
      var keys = path.split("."), node = current;
      for (var i = 0; i < keys.length - 1 && node; i++) { node = node[keys[i]]; }
      if (node && typeof node === "object") { change(node, keys[keys.length - 1]); } else { fits = false; }
    }
    (part.set || []).forEach(function (pair) { at(pair[0], function (node, key) { node[key] = pair[1]; }); });
    (part.unset || []).forEach(function (path) { at(path, function (node, key) { delete node[key]; }); });
    return fits ? current : null;
  }
  function onMessage(message) {
    // a panel older than what the page shows (built before a step that reached the page first:
    // the web process and the feed worker publish independently) would undo newer figures
    var revision = message.session ? message.session.revision : null;
    if (message.kind === "panel" && revision !== null && view.revision !== undefined && revision < view.revision) { return; }
    if (revision !== null && (message.kind === "snapshot" || view.revision === undefined || revision > view.revision)) {
      view.revision = revision;
    }
    if (message.kind === "snapshot") {
      view.layout = message.layout;
      view.state = message.state;
      view.step = message.state ? message.state.step : -1;
      view.alarms = message.alarms;
      view.assessment = message.assessment || {};
      showSession(message.session);
      if (view.layout && view.layout.substations) { fillSubstations(); drawState(null); }
      resetTimeline(message.timeline);
      showAssessment(message.assessment);
      showRecs(message.recommendations);
      showAlarms(message.alarms);
      showDecisions(message.decisions);
      return;
    }
    if (message.kind === "step") {
      if (message.step <= view.step) { return; }  // already in the snapshot
      if (message.state.delta && (!view.state || message.step !== view.step + 1)) { link.reconnect(); return; }
      if (!view.layout || !view.layout.substations) { link.reconnect(); return; }
      // the assessment and the cards come as what changed since the previous step: merged into what
      // the page has, then drawn as ever (a part that does not fit means a step was missed)
      var assessment = applyChanges(view.assessment, message.assessment);
      var recs = message.recommendations.map(function (entry) { return applyChanges(view.recsById[entry.id], entry); });
      if (assessment === null || recs.indexOf(null) >= 0) { link.reconnect(); return; }
      view.state = GridDiagram.applyDelta(view.state, message.state);
      view.step = message.step;
      view.assessment = assessment;
      showSession(message.session);
      drawState(message.stepped_at);
      showAssessment(assessment);
      Plotly.extendTraces(timeline, { x: [[message.step], [message.step]], y: [[view.state.max_rho], [view.state.overloads.length]] }, [0, 1]);
      showRecs(recs, message.expired);
      addAlarms(message.alarms);
      if (message.applied) {
        var d = message.applied;
        // the decision played to reach this step, now applied (or refused): update it in the list
        showDecisions([d].concat((view.decisions || []).filter(function (o) { return o.id !== d.id; })));
        notice("Step " + message.step + ": «" + d.description + "» " + d.status + " (" + d.decided_by + ")" +
          (d.outcome && d.outcome.refused ? ": " + d.outcome.refused : ""), d.status !== "applied");
      }
      return;
    }
    if (message.kind === "panel") {
      showSession(message.session);
      if (message.session.current_step === view.step) {
        showRecs(message.recommendations);
        if (message.assessment && message.assessment.security) { view.assessment = message.assessment; }
      }
      view.alarms = message.alarms;
      showAlarms(message.alarms);
      showDecisions(message.decisions);
    }
  }

  $("wi-kind").addEventListener("change", showKind);
  $("wi-with-line").addEventListener("change", function () { $("wi-second-line").hidden = !$("wi-with-line").checked; });
  $("wi-sub").addEventListener("change", function () { fillElements(); });
  $("wi-move-kind").addEventListener("change", function () { fillMoveUnits(); });
  $("wi-move-unit").addEventListener("change", showMoveLimits);
  $("wi-simulate").addEventListener("click", simulate);
  if ($("wi-apply")) { $("wi-apply").addEventListener("click", applyComposed); }
  document.querySelectorAll(".control").forEach(function (button) {
    button.addEventListener("click", function () {
      var command = button.dataset.command;
      control(command, command === "speed" ? { speed_seconds: Number($("speed-input").value) } : null);
    });
  });
  showKind();
  showSession(config.session);
  link = GridLive.connect(config.socket, {
    onMessage: onMessage,
    onState: function (text) { $("live-state").textContent = text; }
  });
})();
