// Keeps the state column of the run list current (server-sent events from the run list stream).
(function () {
  const table = document.getElementById("run-list");
  if (!table || !window.EventSource) return;
  const source = new EventSource(table.dataset.events);
  source.addEventListener("state", (message) => {
    const event = JSON.parse(message.data);
    const cell = table.querySelector(`td.state[data-run="${event.run}"]`);
    if (!cell) { window.location.reload(); return; }  // a run queued elsewhere
    cell.textContent = event.label;
    cell.className = `state state-${event.state}`;
  });
})();
