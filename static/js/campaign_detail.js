// Keeps a campaign's page current while its runs run: when one of its runs changes state (the
// run list's event stream), its confound warnings, the progress, the matrix and the statistics
// are fetched again and swapped in, at most every two seconds, without reloading the page.
(function () {
  const page = document.getElementById("campaign-page");
  if (!page || page.dataset.finished === "true" || !window.EventSource) return;
  const runs = new Set(JSON.parse(document.getElementById("campaign-runs").textContent));
  const sections = ["campaign-confounds", "progress", "matrix", "statistics"];
  let pending = null;

  const refresh = async () => {
    pending = null;
    const answer = await fetch(window.location.href, { headers: { Accept: "text/html" } });
    if (!answer.ok) return;
    const fresh = new DOMParser().parseFromString(await answer.text(), "text/html");
    for (const id of sections) {
      const now = document.getElementById(id);
      const next = fresh.getElementById(id);
      if (now && next) now.replaceWith(next);
    }
    const freshRuns = fresh.getElementById("campaign-runs");
    if (freshRuns) JSON.parse(freshRuns.textContent).forEach((id) => runs.add(id));  // retried runs
  };

  const source = window.benchlabLive.follow(page.dataset.events);
  source.addEventListener("state", (message) => {
    const event = JSON.parse(message.data);
    if (!runs.has(event.run) || pending) return;
    pending = setTimeout(refresh, 2000);
  });
})();
