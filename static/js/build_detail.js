// The build page while the build is queued or runs: its state, the step it is at, make's
// progress bar with an estimate of the time left, and the log, which follows its newest line
// unless the reader has scrolled up. Everything comes from the build's event stream
// (static/js/job_detail.js: what every job's page does alike).
(function () {
  "use strict";
  const page = document.getElementById("build-page");
  if (!page || page.dataset.finished === "true" || !window.EventSource) return;
  const job = window.benchlabJob;

  const duration = window.benchlabUnits.duration;  // static/js/units.js
  const clock = (iso) => {
    const at = new Date(iso);
    if (Number.isNaN(at.getTime())) return "";
    try {
      return new Intl.DateTimeFormat("en-GB", {
        timeZone: page.dataset.timeZone, hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23",
      }).format(at);
    } catch (error) {
      return at.toISOString().slice(11, 19);
    }
  };

  // "Building for": the server's figure when the page was made, counted on by this page's clock.
  const took = document.getElementById("build-took");
  const loadedAt = performance.now();
  if (took.dataset.seconds) {
    const base = Number(took.dataset.seconds);
    setInterval(() => { took.textContent = duration(base + (performance.now() - loadedAt) / 1000); }, 1000);
  }

  // ---- steps and progress
  const stepItems = Array.from(document.querySelectorAll("#build-steps .build-step"));
  const progressBox = document.getElementById("build-progress-box");
  const progressBar = document.getElementById("build-progress");
  const progressLabel = document.getElementById("build-progress-label");
  const progressText = document.getElementById("build-progress-text");

  const timeOf = (iso, kind) => {
    const time = document.createElement("time");
    time.className = kind;
    time.dateTime = iso;
    time.textContent = clock(iso);
    return time;
  };
  // A step's times read "21:43:13–21:46:44"; the step in progress "21:46:44–…". The step before
  // ends as the next one starts.
  const markStep = (event) => {
    const at = event.at;
    job.markSteps(stepItems, event.step, (item, status, here) => {
      const open = item.querySelector("span.step-end");
      if (status === "done" && at && open) open.replaceWith(timeOf(at, "step-end"));
      if (here && at && !item.querySelector(".step-times")) {
        const times = document.createElement("span");
        times.className = "step-times";
        const end = document.createElement("span");
        end.className = "step-end";
        end.textContent = "…";
        times.append(timeOf(at, "step-start"), "–", end);
        item.append(" ", times);
      }
    });
    progressLabel.textContent = event.label;
    progressBox.hidden = true; // until this step reports progress
    progressBar.value = 0;
    progressText.textContent = "";
  };

  // ---- the log: make writes many lines, in bursts: appended once a frame, not one by one.
  const appendLog = job.followLog(2000, 10000);
  let pending = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    const lines = document.createDocumentFragment();
    pending.forEach((line) => lines.append(document.createTextNode(line)));
    pending = [];
    appendLog(lines);
  };
  const addLine = (line) => {
    pending.push(`${line}\n`);
    if (!scheduled) {
      scheduled = true;
      requestAnimationFrame(flush);
    }
  };

  job.follow(page, document.getElementById("build-state"), document.getElementById("build-wait"), {
    log: (event) => addLine(event.line),
    step: markStep,
    progress: (event) => job.showProgress(progressBox, progressBar, progressText, event),
  });
})();
