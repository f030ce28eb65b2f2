/* The launch page: choosing a recipe fills every setting under Advanced with the recipe's values
   (the data comes from the page's "recipe-presets" JSON), and a note counts the settings changed
   since. Without this script the recipe links reload the page filled from ?recipe=NAME. */
(function () {
  "use strict";
  var form = document.getElementById("launch-form");
  var data = document.getElementById("recipe-presets");
  var select = document.getElementById("id_recipe");
  if (!form || !data || !select) { return; }
  var presets = JSON.parse(data.textContent);
  var description = document.getElementById("recipe-description");
  var changes = document.getElementById("recipe-changes");

  function sameValue(element, value) {
    if (element.type === "checkbox") { return element.checked === Boolean(value); }
    if (typeof value === "number") { return Number(element.value) === value && element.value.trim() !== ""; }
    return element.value === String(value);
  }

  function setValue(element, value) {
    if (element.type === "checkbox") { element.checked = Boolean(value); }
    else { element.value = String(value); }
  }

  function eachSetting(values, callback) {
    Object.keys(values).forEach(function (name) {
      var element = form.elements.namedItem(name);
      if (element && element.tagName) { callback(element, values[name], name); }
    });
  }

  function showChanges() {
    var preset = presets[select.value];
    if (!preset) { return; }
    var changed = [];
    eachSetting(preset.values, function (element, value, name) {
      if (!sameValue(element, value)) { changed.push(name); }
    });
    changes.hidden = changed.length === 0;
    changes.textContent = changed.length
      ? changed.length + " setting(s) differ from " + (select.value || "the defaults") + ": " + changed.join(", ")
      : "";
    form.dataset.changedSettings = changed.length;
  }

  function markSelected() {
    document.querySelectorAll(".recipe-list dt").forEach(function (dt) {
      dt.classList.toggle("selected", dt.id === "recipe-" + select.value);
    });
  }

  function apply(name) {
    var preset = presets[name];
    if (!preset) { return; }
    select.value = name;
    eachSetting(preset.values, setValue);
    description.textContent = preset.description;
    markSelected();
    offerEnvMines();
    showChanges();
  }

  // pretrain mine: the mines are grouped by env; only the chosen env's can be picked
  var envSelect = form.elements.namedItem("env");
  var mineSelect = form.elements.namedItem("pretrain_mine");
  function offerEnvMines() {
    if (!envSelect || !mineSelect || !mineSelect.querySelectorAll) { return; }
    mineSelect.querySelectorAll("optgroup").forEach(function (group) {
      var other = group.label !== envSelect.value;
      group.disabled = other;
      group.hidden = other;
    });
    var chosen = mineSelect.options[mineSelect.selectedIndex];
    if (chosen && chosen.parentNode.disabled) { mineSelect.value = ""; }
  }
  if (envSelect) { envSelect.addEventListener("change", offerEnvMines); }
  offerEnvMines();

  select.addEventListener("change", function () { apply(select.value); });
  document.querySelectorAll("a[data-recipe]").forEach(function (link) {
    link.addEventListener("click", function (event) {
      event.preventDefault();
      apply(link.dataset.recipe);
      select.focus();
    });
  });
  form.addEventListener("input", function (event) { if (event.target !== select) { showChanges(); } });
  form.addEventListener("change", function (event) { if (event.target !== select) { showChanges(); } });
  markSelected();
  showChanges();
})();
