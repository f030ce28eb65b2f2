// Small behaviours of forms, kept out of the templates (the Content-Security-Policy refuses
// inline scripts and event handler attributes).
// <select data-auto-submit>: submit its form as soon as the choice changes.
(function () {
  "use strict";
  document.querySelectorAll("select[data-auto-submit]").forEach(function (select) {
    select.addEventListener("change", function () { select.form.submit(); });
  });
})();
