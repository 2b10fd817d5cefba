// The build page while the build is queued or runs: its state, the step it is at, make's
// progress bar with an estimate of the time left, and the log, which follows its newest line
// unless the reader has scrolled up. Everything comes from the build's event stream, replayed
// from its start (a page opened mid-build misses nothing); the page reloads once it has ended.
(function () {
  "use strict";
  const page = document.getElementById("build-page");
  if (!page || page.dataset.finished === "true" || !window.EventSource) return;

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

  // ---- state and steps
  const stateText = document.getElementById("build-state");
  const stepItems = Array.from(document.querySelectorAll("#build-steps .build-step"));
  const progressBox = document.getElementById("build-progress-box");
  const progressBar = document.getElementById("build-progress");
  const progressLabel = document.getElementById("build-progress-label");
  const progressText = document.getElementById("build-progress-text");
  const wait = document.getElementById("build-wait");

  const timeOf = (iso, kind) => {
    const time = document.createElement("time");
    time.className = kind;
    time.dateTime = iso;
    time.textContent = clock(iso);
    return time;
  };
  // A step's times read "21:43:13–21:46:44"; the step in progress "21:46:44–…". The step before
  // ends as the next one starts.
  const markStep = (name, label, at) => {
    let reached = false;
    stepItems.forEach((item) => {
      const here = item.dataset.step === name;
      const status = here ? "current" : reached ? "pending" : "done";
      if (here) reached = true;
      item.className = `build-step step-${status}`;
      item.querySelector(".step-status").textContent = status;
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
    progressLabel.textContent = label;
    progressBox.hidden = true; // until this step reports progress
    progressBar.value = 0;
    progressText.textContent = "";
  };

  const showProgress = (event) => {
    progressBox.hidden = false;
    progressBar.value = event.percent;
    progressBar.textContent = `${Math.round(event.percent)} %`;
    const left = event.eta_s === null || event.eta_s === undefined ? "" : ` · about ${duration(event.eta_s)} left`;
    progressText.textContent = `${Math.round(event.percent)} %${left}`;
  };

  // ---- the log: follows its newest line unless the reader scrolled up; again once they are
  // back at the bottom (or press the button).
  const log = document.getElementById("log");
  const follow = document.getElementById("log-follow");
  const logStatus = document.getElementById("log-status");
  const KEEP_LINES = 2000, KEEP_LINES_UNFOLLOWED = 10000; // make writes many; a reader's place is not pulled away
  let following = true;
  const atBottom = () => log.scrollHeight - log.scrollTop - log.clientHeight <= 4;
  const setFollowing = (value) => {
    if (value === following) return;
    following = value;
    follow.hidden = value;
    logStatus.textContent = value
      ? "Follows the newest line; scroll up to stop."
      : "Not following: you scrolled up. Scroll to the bottom to follow again, or";
  };
  log.addEventListener("scroll", () => setFollowing(atBottom()));
  follow.addEventListener("click", () => {
    log.scrollTop = log.scrollHeight;
    setFollowing(true);
  });
  // Lines come in bursts (make): appended once a frame, not one by one.
  let pending = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    const lines = document.createDocumentFragment();
    pending.forEach((line) => lines.append(document.createTextNode(line)));
    log.append(lines);
    pending = [];
    const keep = following ? KEEP_LINES : KEEP_LINES_UNFOLLOWED;
    while (log.childNodes.length > keep) log.firstChild.remove();
    if (following) log.scrollTop = log.scrollHeight;
  };
  const addLine = (line) => {
    pending.push(`${line}\n`);
    if (!scheduled) {
      scheduled = true;
      requestAnimationFrame(flush);
    }
  };

  const source = window.benchlabLive.follow(page.dataset.events);
  source.addEventListener("log", (message) => addLine(JSON.parse(message.data).line));
  source.addEventListener("step", (message) => {
    const event = JSON.parse(message.data);
    markStep(event.step, event.label, event.at);
  });
  source.addEventListener("progress", (message) => showProgress(JSON.parse(message.data)));
  source.addEventListener("state", (message) => {
    const event = JSON.parse(message.data);
    stateText.textContent = event.label;
    stateText.className = `state state-${event.state}`;
    if (event.state !== "queued" && wait) wait.hidden = true;
    if (["done", "failed", "cancelled"].includes(event.state)) {
      source.close();
      setTimeout(() => window.location.reload(), 500); // the finished page, from the database
    }
  });
})();
