// The campaign form (templates/runs/campaign_form.html): a preset is filled in again as soon as its
// host choice changes. Without this script the "Fill in the preset" button does the same.
(function () {
  "use strict";
  const chooser = document.getElementById("preset-hosts");
  if (!chooser) return;
  chooser.addEventListener("change", () => chooser.requestSubmit());
})();
