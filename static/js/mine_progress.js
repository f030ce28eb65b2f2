/* A mine's page while it is queued or running: every few seconds, read its progress (episodes on
   disk out of those it plays) from the page's progress URL; reload the page once it has ended,
   so the summary, coverage and top topologies (or the error) show. */
(function () {
  "use strict";
  var section = document.getElementById("mine-status");
  if (!section) { return; }
  var url = section.dataset.progressUrl;
  var bar = document.getElementById("mine-progress");
  var text = document.getElementById("mine-progress-text");
  var state = document.getElementById("mine-state");
  var PERIOD_MS = 3000;

  function show(progress) {
    if (state) {
      state.textContent = progress.status;
      state.className = "status status-" + progress.status;
    }
    if (bar && progress.total) { bar.max = progress.total; bar.value = progress.done; }
    if (text) { text.textContent = progress.done + " / " + (progress.total || "?") + " episodes on disk"; }
  }

  function poll() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (progress) {
        if (!progress) { return; }
        show(progress);
        if (progress.status === "succeeded" || progress.status === "failed") {
          window.location.reload();
          return;
        }
        window.setTimeout(poll, PERIOD_MS);
      })
      .catch(function () { window.setTimeout(poll, PERIOD_MS * 2); });
  }

  if (section.dataset.status === "queued" || section.dataset.status === "running") {
    window.setTimeout(poll, PERIOD_MS);
  }
})();
