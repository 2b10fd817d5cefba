// The queue form (templates/runs/run_form.html): the device and PostgreSQL install lists narrowed
// to the chosen server host, what the chosen device is and which pgbench a client host would run
// (from the options' data-* attributes, written by runs/forms.py), and the error summary brought
// into view. The server checks everything again; without this script the lists are just longer.
(function () {
  "use strict";
  const form = document.getElementById("run-form");
  if (!form) return;
  const server = form.elements.namedItem("server_host");
  const device = form.elements.namedItem("device");
  const install = form.elements.namedItem("pg_install");
  const client = form.elements.namedItem("client_host");

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

  // The client host may not be the server itself, and runs the pgbench benchlab picks for it.
  function describeClient(keepChoice) {
    for (const option of client.options) {
      const isServer = Boolean(option.value) && option.value === server.value;
      option.disabled = isServer && !(keepChoice === true && option.selected);
      option.title = isServer ? "the server host: leave the client host empty to run pgbench there" : "";
    }
    if (client.selectedOptions[0] && client.selectedOptions[0].disabled) client.value = "";
    const option = client.selectedOptions[0];
    if (!option || !option.value) {
      describe(client, "client-note", "pgbench runs on the server host itself.");
      return;
    }
    let pgbench = {};
    try {
      pgbench = JSON.parse(option.dataset.pgbench || "{}");
    } catch (error) {
      pgbench = {};
    }
    let text = `${chosenText(client)} has no PostgreSQL install, so no pgbench, in the inventory.`;
    if (!install.value) text = "Choose a PostgreSQL install to see which pgbench it runs.";
    else if (pgbench[install.value]) text = `Runs the ${pgbench[install.value]} over TCP.`;
    describe(client, "client-note", text);
  }

  function update(keepChoice) {
    describeDevice(narrow(device, "devices", keepChoice));
    describe(install, "install-note", narrow(install, "PostgreSQL installs", keepChoice));
    describeClient(keepChoice);
  }

  server.addEventListener("change", () => update(false));
  device.addEventListener("change", () => describeDevice(""));
  install.addEventListener("change", () => describeClient(false));
  client.addEventListener("change", () => describeClient(false));
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
