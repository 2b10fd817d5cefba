// The run list: states kept current from the run list's event stream (server-sent events), with
// where a running run is ("measuring, second 16 of 30") and what a queued one waits for; a
// selection of runs to compare that survives paging (sessionStorage, this tab only); filter
// URLs that carry only the filters set; and the device list narrowed to the chosen host's.
(function () {
  "use strict";
  const table = document.getElementById("run-list");
  const SELECTION_KEY = "benchlab.runList.selected";
  const FINAL_STATES = new Set(["done", "failed", "cancelled"]);
  const REFRESH_DELAY_MS = 1000;

  // pgbench's second within its phase, counted on from the last one the server told (data-second,
  // at data-since): it moves one a second of wall time (-T), up to the phase's length (data-of).
  function showPosition(cell) {
    if (cell.dataset.of === undefined || cell.dataset.of === "") return;
    const of = Number(cell.dataset.of);
    const elapsed = Math.floor((performance.now() - Number(cell.dataset.since || 0)) / 1000);
    setDetail(cell, `, second ${Math.min(of, Number(cell.dataset.second) + elapsed)} of ${of}`);
  }

  function setDetail(cell, text) {
    let detail = cell.querySelector(".state-detail");
    if (!detail) {
      detail = document.createElement("span");
      detail.className = "state-detail";
      cell.append(detail);
    }
    detail.textContent = text;
  }

  function startClock(cell, second, of) {
    cell.dataset.second = String(second);
    cell.dataset.of = String(of);
    cell.dataset.since = String(performance.now());
    showPosition(cell);
  }

  // A state event, shown at once; the page is then asked again for the details (refreshRows).
  function showState(cell, state, label) {
    cell.className = `state state-${state}`;
    cell.dataset.state = state;
    cell.querySelector(".state-label").textContent = label;
    if (state === "warming_up") startClock(cell, 0, Number(cell.dataset.warmup));
    else if (state === "measuring") startClock(cell, 0, Number(cell.dataset.duration));
    else {
      cell.dataset.of = "";
      cell.querySelector(".state-detail")?.remove();
    }
  }

  function unfinishedRows() {
    return [...table.querySelectorAll("td.state")].some((cell) => !FINAL_STATES.has(cell.dataset.state));
  }

  // The page itself, asked again, says what changed: each row's live cells (state with position or
  // wait, tps, start) are replaced by the server's. One request at a time, one more if events came
  // meanwhile; the server's text is the one way these read (no second formatter here).
  let refreshTimer = null;
  let refreshing = false;
  let refreshAgain = false;

  function refreshSoon() {
    if (refreshing) refreshAgain = true;
    else if (!refreshTimer) refreshTimer = window.setTimeout(refreshRows, REFRESH_DELAY_MS);
  }

  async function refreshRows() {
    refreshTimer = null;
    refreshing = true;
    try {
      const response = await fetch(window.location.href, { headers: { Accept: "text/html" } });
      if (response.ok) replaceLiveCells(new DOMParser().parseFromString(await response.text(), "text/html"));
    } catch (error) {
      // Offline for a moment: the next event asks again.
    } finally {
      refreshing = false;
      if (refreshAgain) {
        refreshAgain = false;
        refreshSoon();
      }
    }
  }

  function replaceLiveCells(fresh) {
    for (const row of table.tBodies[0].rows) {
      const freshRow = fresh.getElementById(row.id);
      if (!freshRow) continue;
      for (const cell of row.querySelectorAll("td[data-live]")) {
        const freshCell = freshRow.querySelector(`td[data-live="${cell.dataset.live}"]`);
        if (!freshCell) continue;
        const copy = document.importNode(freshCell, true);
        copy.dataset.since = String(performance.now());
        cell.replaceWith(copy);
        showPosition(copy);
      }
    }
  }

  function followStates() {
    if (!table || !window.EventSource) return;
    const reloadOnNew = table.dataset.reloadOnNew === "true";
    const notice = document.getElementById("new-runs");
    const source = window.benchlabLive.follow(table.dataset.events);
    for (const cell of table.querySelectorAll("td.state")) cell.dataset.since = String(performance.now());
    window.setInterval(() => table.querySelectorAll("td.state").forEach(showPosition), 1000);
    source.addEventListener("state", (message) => {
      const event = JSON.parse(message.data);
      const cell = table.querySelector(`td.state[data-run="${event.run}"]`);
      if (cell) {
        showState(cell, event.state, event.label);
        refreshSoon();
        return;
      }
      // A run not on this page. A newly queued one can only belong on the newest unfiltered page;
      // on any other page a reload would move the rows the user is reading.
      if (event.state === "queued") {
        if (reloadOnNew) window.location.reload();
        else if (notice) notice.hidden = false;
      }
      // Whatever it did, what the queued runs here wait for may have changed with it.
      if (unfinishedRows()) refreshSoon();
    });
  }

  function loadSelection() {
    try {
      const ids = JSON.parse(window.sessionStorage.getItem(SELECTION_KEY) || "[]");
      return new Set(Array.isArray(ids) ? ids.filter(Number.isInteger) : []);
    } catch (error) {
      return new Set();  // unreadable (edited by hand, or storage refused): start afresh
    }
  }

  function saveSelection(selected) {
    window.sessionStorage.setItem(SELECTION_KEY, JSON.stringify([...selected]));
  }

  function describeSelection(count, elsewhere) {
    if (count === 0) return "Select runs to compare them; the selection is kept across pages.";
    const runs = count === 1 ? "1 run selected" : `${count} runs selected`;
    const where = elsewhere ? ` (${elsewhere} on other pages or filters)` : "";
    return count === 1 ? `${runs}${where}; select one more to compare.` : `${runs}${where}.`;
  }

  function selectRuns() {
    const bar = document.getElementById("run-selection");
    if (!table || !bar) return;
    const boxes = [...table.querySelectorAll("input.pick-run")];
    const pageBox = document.getElementById("select-page");
    const compare = document.getElementById("compare-selected");
    let selected = loadSelection();

    function show() {
      const ids = [...selected].sort((a, b) => a - b);
      const here = boxes.filter((box) => selected.has(Number(box.value)));
      for (const box of boxes) {
        box.checked = selected.has(Number(box.value));
        box.closest("tr").classList.toggle("picked", box.checked);
      }
      pageBox.checked = boxes.length > 0 && here.length === boxes.length;
      pageBox.indeterminate = here.length > 0 && here.length < boxes.length;
      document.getElementById("selected-count").textContent = ids.length;
      document.getElementById("selection-note").textContent = describeSelection(ids.length, ids.length - here.length);
      document.getElementById("clear-selection").hidden = ids.length === 0;
      compare.disabled = ids.length < 2;
      // The comparison page's path comes from the page (data-compare); the ids in ascending order.
      compare.dataset.href = ids.length >= 2 ? `${bar.dataset.compare}?runs=${ids.join(",")}` : "";
    }

    function change(update) {
      update();
      saveSelection(selected);
      show();
    }

    for (const box of boxes) {
      box.addEventListener("change", () => change(() => {
        if (box.checked) selected.add(Number(box.value));
        else selected.delete(Number(box.value));
      }));
    }
    pageBox.addEventListener("change", () => change(() => {
      for (const box of boxes) {
        if (pageBox.checked) selected.add(Number(box.value));
        else selected.delete(Number(box.value));
      }
    }));
    document.getElementById("clear-selection").addEventListener("click", () => change(() => selected.clear()));
    compare.addEventListener("click", () => {
      if (compare.dataset.href) window.location.href = compare.dataset.href;
    });
    // Back to this page from another (the browser may restore it as it was): what is stored wins.
    window.addEventListener("pageshow", () => {
      selected = loadSelection();
      show();
    });
    show();
  }

  function cleanFilterUrls() {
    const form = document.getElementById("run-filters");
    if (!form) return;
    // "?host=3" rather than every field with "=" after it: a URL worth pasting to a colleague.
    form.addEventListener("formdata", (event) => {
      for (const [name, value] of [...event.formData.entries()]) {
        if (value === "") event.formData.delete(name);
      }
    });
    // The order and the page size apply at once; the filters wait for "Filter".
    for (const name of ["sort", "per_page"]) {
      const select = form.elements.namedItem(name);
      if (select) select.addEventListener("change", () => form.requestSubmit());
    }
  }

  // The devices of the chosen host only, as the queue form narrows them (run_form.js): another
  // host's device with it would list only runs whose pgbench ran on the chosen host. Its options
  // say their host (data-host, runs/forms/run_filters.py). A device chosen in the URL stays shown, so
  // the form says what was filtered by (the empty list then says why it is empty).
  function narrowDevices() {
    const form = document.getElementById("run-filters");
    const host = form && form.elements.namedItem("host");
    const device = form && form.elements.namedItem("device");
    if (!host || !device) return;
    const narrow = (keepChoice) => {
      for (const option of device.options) {
        if (option.dataset.host === undefined) continue;  // "any device"
        const hidden = host.value !== "" && option.dataset.host !== host.value && !(keepChoice && option.selected);
        option.hidden = hidden;
        option.disabled = hidden;
      }
      if (!keepChoice && device.selectedOptions[0] && device.selectedOptions[0].disabled) device.value = "";
    };
    host.addEventListener("change", () => narrow(false));
    narrow(true);
  }

  followStates();
  selectRuns();
  cleanFilterUrls();
  narrowDevices();
})();
