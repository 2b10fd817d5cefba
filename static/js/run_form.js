// The queue form (templates/runs/run_form.html): the device and PostgreSQL install lists narrowed
// to the chosen server host, what the chosen device is, the number and the pgbench of each ticked
// client host (from the data-* attributes runs/forms/runs.py writes), "one database for all client
// hosts" only offered with two of them, and the error summary brought into view. The server checks
// everything again; without this script the lists are just longer.
(function () {
  "use strict";
  const form = document.getElementById("run-form");
  if (!form) return;
  const server = form.elements.namedItem("server_host");
  const device = form.elements.namedItem("device");
  const install = form.elements.namedItem("pg_install");
  const clientBoxes = [...form.querySelectorAll("input[name='client_hosts']")];
  const shared = form.elements.namedItem("shared_database");

  // A note under a field (its hint), read out when it changes and tied to the field for readers.
  function noteFor(select, id) {
    let note = document.getElementById(id);
    if (!note) {
      note = document.createElement("small");
      note.id = id;
      note.className = "field-note";
      note.setAttribute("aria-live", "polite");
      select.closest(".field").appendChild(note);
      const described = select.getAttribute("aria-describedby");
      select.setAttribute("aria-describedby", described ? `${described} ${id}` : id);
    }
    return note;
  }

  function chosenText(select) {
    const option = select.selectedOptions[0];
    return option && option.value ? option.textContent.trim() : "";
  }

  // Show only the rows of the chosen host; what the list then lacks, or "". A choice of another
  // host is dropped (the blank is chosen instead), unless the host has exactly one row: that one is
  // then the only sensible pick. On loading, a choice stays as the server rendered it (a refused
  // one keeps its message meaningful, and a disabled option would not be sent).
  function narrow(select, what, keepChoice) {
    const host = server.value;
    const rows = [...select.options].filter((option) => option.dataset.host !== undefined);
    const mine = rows.filter((option) => !host || option.dataset.host === host);
    for (const option of rows) {
      const hidden = !mine.includes(option) && !(keepChoice && option.selected);
      option.hidden = hidden;
      option.disabled = hidden;
    }
    if (!keepChoice) {
      const selected = select.selectedOptions[0];
      if (selected && selected.disabled) select.value = "";
      if (host && mine.length === 1 && !select.value) select.value = mine[0].value;
    }
    if (!host) return `Choose a server host first: this lists every host's ${what}.`;
    return mine.length ? "" : `${chosenText(server)} has no ${what} in the inventory.`;
  }

  function describe(select, id, text) {
    const note = noteFor(select, id);
    note.textContent = text;
    note.hidden = !text;
  }

  function describeDevice(missing) {
    const option = device.selectedOptions[0];
    describe(device, "device-note", missing || (option && option.dataset.facts) || "");
  }

  function pgbenchText(box) {
    let pgbench = {};
    try {
      pgbench = JSON.parse(box.dataset.pgbench || "{}");
    } catch (error) {
      pgbench = {};
    }
    const name = box.closest("label").textContent.trim();
    if (!install.value) return "choose a PostgreSQL install to see which pgbench it runs";
    if (pgbench[install.value]) return `runs the ${pgbench[install.value]} over TCP`;
    return `${name} has no PostgreSQL install, so no pgbench, in the inventory`;
  }

  // A client host may not be the server itself. Each ticked one is numbered in the list's order
  // (the order the server gives them: client 1 against bench_1, …) and says which pgbench it runs.
  function describeClients(keepChoice) {
    for (const box of clientBoxes) {
      const isServer = box.value === server.value;
      if (isServer && !(keepChoice === true && box.checked)) box.checked = false;
      box.disabled = isServer && !box.checked;
      const title = "the server host: pgbench runs there when no client host is ticked";
      box.closest("label").title = isServer ? title : "";
    }
    const ticked = clientBoxes.filter((box) => box.checked);
    for (const box of clientBoxes) {
      const note = document.getElementById(`client-note-${box.value}`);
      if (!note) continue;
      const position = ticked.indexOf(box);
      note.textContent = position < 0 ? "" : `client ${position + 1}: ${pgbenchText(box)}`;
      note.hidden = position < 0;
    }
    if (shared) {
      // Only with two client hosts or more is there a database to share.
      shared.disabled = ticked.length < 2;
      if (shared.disabled) shared.checked = false;
      let text = "With two client hosts or more.";
      if (ticked.length >= 2) {
        text = shared.checked
          ? "All of them run against one database, bench."
          : `Each runs against its own database: bench_1 … bench_${ticked.length}.`;
      }
      describe(shared, "shared-note", text);
    }
  }

  function update(keepChoice) {
    describeDevice(narrow(device, "devices", keepChoice));
    describe(install, "install-note", narrow(install, "PostgreSQL installs", keepChoice));
    describeClients(keepChoice);
  }

  server.addEventListener("change", () => update(false));
  device.addEventListener("change", () => describeDevice(""));
  install.addEventListener("change", () => describeClients(false));
  for (const box of clientBoxes) box.addEventListener("change", () => describeClients(false));
  if (shared) shared.addEventListener("change", () => describeClients(false));
  update(true);

  // The error summary: in view and read out first; its links put the cursor in the field.
  const summary = document.getElementById("error-summary");
  if (summary) {
    summary.focus();
    summary.addEventListener("click", (event) => {
      const link = event.target.closest("a[href^='#']");
      const field = link && document.getElementById(link.getAttribute("href").slice(1));
      if (!field) return;
      event.preventDefault();
      field.scrollIntoView({ block: "center" });
      field.focus();
    });
  }
})();
