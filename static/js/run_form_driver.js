// The queue form's driver (templates/runs/run_form.html): choosing pgbench or sysbench shows the
// fields that driver uses and hides the others, and the workload list offers the driver's own
// (runs/bench/driver_checks.py:driver_fields says which, in the page's #driver-fields). A hidden
// field is sent with the value that means "not used", so nothing invisible is refused. Without
// this script every field shows and the server refuses what the driver cannot run.
(function () {
  "use strict";
  const form = document.getElementById("run-form");
  const data = document.getElementById("driver-fields");
  if (!form || !data) return;
  const fields = JSON.parse(data.textContent);
  const driver = form.elements.namedItem("driver");
  const workload = form.elements.namedItem("workload");

  // The block that holds a field: its paragraph, or the group of boxes.
  function blockOf(name) {
    const control = form.querySelector(`[name='${name}']`);
    return control && (control.closest(".field") || control.closest("p"));
  }

  function blocks(name) {
    return name === "client_hosts" ? [document.getElementById("where-pgbench-runs")] : [blockOf(name)];
  }

  function show() {
    const chosen = driver.value;
    for (const [owner, names] of Object.entries(fields.only)) {
      for (const name of names) {
        for (const block of blocks(name)) if (block) block.hidden = owner !== chosen;
      }
    }
    // pgbench -i's options: the whole fieldset is pgbench's.
    const init = document.getElementById("init-options");
    if (init) init.hidden = chosen !== "pgbench";
    const own = fields.workloads[chosen] || [];
    for (const option of workload.options) {
      option.hidden = option.disabled = !own.includes(option.value);
    }
    if (!own.includes(workload.value)) workload.value = fields.default_workloads[chosen];
  }

  // Hidden fields go with the value that leaves them unused (the server refuses any other).
  form.addEventListener("submit", () => {
    for (const [owner, names] of Object.entries(fields.only)) {
      if (owner === driver.value) continue;
      for (const name of names) {
        if (!(name in fields.unused)) continue;
        const unused = fields.unused[name];
        for (const control of form.querySelectorAll(`[name='${name}']`)) {
          if (control.type === "checkbox") control.checked = Boolean(unused);
          else control.value = unused === null ? "" : String(unused);
        }
      }
    }
  });

  driver.addEventListener("change", show);
  show();
})();
