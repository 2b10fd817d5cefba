// The workload library's fields (templates/runs/_library_fields.html, on the queue form and the
// campaign page's base run): the script list only with the library workload, and only the chosen
// script's description and parameters. The server reads the chosen script's inputs alone.
(function () {
  "use strict";
  const box = document.getElementById("library-params");
  if (!box) return;
  const form = box.closest("form");
  const workload = form.elements.namedItem(box.dataset.workload);
  const script = form.elements.namedItem(box.dataset.script);
  const sets = [...box.querySelectorAll("fieldset.library-script")];
  function show() {
    const library = workload && workload.value === "library";
    if (script) script.closest(".field").hidden = !library;
    box.hidden = !library;
    for (const set of sets) {
      const shown = library && script && set.dataset.script === script.value;
      set.hidden = !shown;
      set.disabled = !shown; // a hidden set's inputs are neither checked by the browser nor sent
    }
  }
  if (workload) workload.addEventListener("change", show);
  if (script) script.addEventListener("change", show);
  show();
})();
