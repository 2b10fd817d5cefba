// The fio baseline page while it is queued or runs: its state, which test runs now (by the clock:
// fio reports at its end), the overall progress and fio's log lines. Everything comes from the
// baseline's event stream, replayed from its start; the page reloads once it has ended.
(function () {
  "use strict";
  const page = document.getElementById("baseline-page");
  if (!page || page.dataset.finished === "true" || !window.EventSource) return;

  const duration = window.benchlabUnits.duration;  // static/js/units.js
  const stateText = document.getElementById("baseline-state");
  const steps = Array.from(document.querySelectorAll("#baseline-steps .build-step"));
  const box = document.getElementById("baseline-progress-box");
  const bar = document.getElementById("baseline-progress");
  const text = document.getElementById("baseline-progress-text");
  const label = document.getElementById("baseline-progress-label");
  const wait = document.getElementById("baseline-wait");
  const log = document.getElementById("log");

  const markStep = (event) => {
    let reached = false;
    steps.forEach((item) => {
      const here = item.dataset.step === event.step;
      const status = here ? "current" : reached ? "pending" : "done";
      if (here) reached = true;
      item.className = `build-step step-${status}`;
      item.querySelector(".step-status").textContent = status;
    });
    label.textContent = `test ${event.index} of ${event.of}: ${event.label}`;
  };
  const showProgress = (event) => {
    box.hidden = false;
    bar.value = event.percent;
    const left = event.eta_s === null || event.eta_s === undefined ? "" : ` · about ${duration(event.eta_s)} left`;
    text.textContent = `${Math.round(event.percent)} %${left}`;
  };

  const source = window.benchlabLive.follow(page.dataset.events);
  source.addEventListener("log", (message) => {
    if (!log) return;
    log.append(document.createTextNode(`${JSON.parse(message.data).line}\n`));
    log.scrollTop = log.scrollHeight;
  });
  source.addEventListener("step", (message) => markStep(JSON.parse(message.data)));
  source.addEventListener("progress", (message) => showProgress(JSON.parse(message.data)));
  source.addEventListener("state", (message) => {
    const event = JSON.parse(message.data);
    stateText.textContent = event.label;
    stateText.className = `state state-${event.state}`;
    if (event.state !== "queued" && wait) wait.hidden = true;
    if (["done", "failed", "cancelled"].includes(event.state)) {
      source.close();
      setTimeout(() => window.location.reload(), 500);
    }
  });
})();
