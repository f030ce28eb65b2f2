/* The review queue: counts refinements that arrived or were decided since the page loaded. */
(function () {
  "use strict";
  var news = document.getElementById("queue-news");
  var text = document.getElementById("queue-news-text");
  if (!news || !window.GridLive) { return; }
  var arrived = {};
  var decided = {};
  window.GridLive.connect("/ws/review/", {
    onMessage: function (message) {
      if (message.kind !== "refinement") { return; }
      if (message.status === "pending") { arrived[message.id] = true; } else { decided[message.id] = true; }
      var parts = [];
      var nArrived = Object.keys(arrived).length;
      var nDecided = Object.keys(decided).length;
      if (nArrived) { parts.push(nArrived + " new refinement" + (nArrived > 1 ? "s" : "")); }
      if (nDecided) { parts.push(nDecided + " decided by reviewers"); }
      text.textContent = parts.join(", ") + " since this page loaded.";
      news.hidden = false;
    }
  });
})();
