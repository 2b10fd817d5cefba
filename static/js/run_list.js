// The run list: states kept current from the run list's event stream (server-sent events), a
// selection of runs to compare that survives paging (sessionStorage, this tab only), and filter
// URLs that carry only the filters set.
(function () {
  "use strict";
  const table = document.getElementById("run-list");
  const SELECTION_KEY = "benchlab.runList.selected";

  function followStates() {
    if (!table || !window.EventSource) return;
    const reloadOnNew = table.dataset.reloadOnNew === "true";
    const notice = document.getElementById("new-runs");
    const source = new EventSource(table.dataset.events);
    source.addEventListener("state", (message) => {
      const event = JSON.parse(message.data);
      const cell = table.querySelector(`td.state[data-run="${event.run}"]`);
      if (cell) {
        cell.textContent = event.label;
        cell.className = `state state-${event.state}`;
        return;
      }
      // A run not on this page. Only a newly queued one can belong here, and only on the newest
      // unfiltered page; on any other page a reload would move the rows the user is reading.
      if (event.state !== "queued") return;
      if (reloadOnNew) window.location.reload();
      else if (notice) notice.hidden = false;
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
    const perPage = form.elements.namedItem("per_page");
    if (perPage) perPage.addEventListener("change", () => form.requestSubmit());
  }

  followStates();
  selectRuns();
  cleanFilterUrls();
})();
