// The fio baseline page while it is queued or runs: its state, which test runs now (by the clock:
// fio reports at its end), the overall progress and fio's log lines. Everything comes from the
// baseline's event stream (static/js/job_detail.js: what every job's page does alike).
(function () {
  "use strict";
  const page = document.getElementById("baseline-page");
  if (!page || page.dataset.finished === "true" || !window.EventSource) return;
  const job = window.benchlabJob;

  const steps = Array.from(document.querySelectorAll("#baseline-steps .build-step"));
  const box = document.getElementById("baseline-progress-box");
  const bar = document.getElementById("baseline-progress");
  const text = document.getElementById("baseline-progress-text");
  const label = document.getElementById("baseline-progress-label");
  const log = document.getElementById("log");

  job.follow(page, document.getElementById("baseline-state"), document.getElementById("baseline-wait"), {
    log: (event) => {
      if (!log) return;
      log.append(document.createTextNode(`${event.line}\n`));
      log.scrollTop = log.scrollHeight;
    },
    step: (event) => {
      job.markSteps(steps, event.step);
      label.textContent = `test ${event.index} of ${event.of}: ${event.label}`;
    },
    progress: (event) => job.showProgress(box, bar, text, event),
  });
})();
