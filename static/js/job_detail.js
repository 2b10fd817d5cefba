// What the pages of jobs (a run, a PostgreSQL build, a fio baseline) do alike while the job is
// queued or runs, written once: follow the job's event stream (static/js/live_stream.js) and show
// its state, mark its steps, show a step's progress with the time left, and follow the log's
// newest line. Each page's own script (build_detail.js, baseline_detail.js, run_detail.js) says
// which of its elements these are and adds what only it shows.
window.benchlabJob = (function () {
  "use strict";
  const duration = window.benchlabUnits.duration; // static/js/units.js
  const ENDED = ["done", "failed", "cancelled"];

  // The job's stream, replayed from its start (a page opened mid-job misses nothing): each of
  // `handlers` ({event name: function of the event's data}) gets its events; the state is shown
  // in `stateText`, the wait is hidden once the job has started, and the page reloads once the
  // job has ended (the finished page, from the database).
  const follow = (page, stateText, wait, handlers) => {
    const source = window.benchlabLive.follow(page.dataset.events);
    for (const [name, handle] of Object.entries(handlers)) {
      source.addEventListener(name, (message) => handle(JSON.parse(message.data)));
    }
    source.addEventListener("state", (message) => {
      const event = JSON.parse(message.data);
      stateText.textContent = event.label;
      stateText.className = `state state-${event.state}`;
      if (event.state !== "queued" && wait) wait.hidden = true;
      if (ENDED.includes(event.state)) {
        source.close();
        setTimeout(() => window.location.reload(), 500);
      }
    });
    return source;
  };

  // The steps before `name` done, `name` current, the ones after pending (class and status word);
  // `each(item, status, here)`, if given, adds what a page shows more of each step.
  const markSteps = (items, name, each) => {
    let reached = false;
    items.forEach((item) => {
      const here = item.dataset.step === name;
      const status = here ? "current" : reached ? "pending" : "done";
      if (here) reached = true;
      item.className = `build-step step-${status}`;
      item.querySelector(".step-status").textContent = status;
      if (each) each(item, status, here);
    });
  };

  // A progress event ({percent, eta_s}) in the step's bar and its text: "41 % · about 35 s left".
  const showProgress = (box, bar, text, event) => {
    box.hidden = false;
    bar.value = event.percent;
    bar.textContent = `${Math.round(event.percent)} %`;
    const left = event.eta_s === null || event.eta_s === undefined ? "" : ` · about ${duration(event.eta_s)} left`;
    text.textContent = `${Math.round(event.percent)} %${left}`;
  };

  // The log (#log): follows its newest line unless the reader scrolled up; again once they are
  // back at the bottom (or press #log-follow; #log-status says which). Returns what adds text (a
  // string or a fragment) at its end: the oldest lines are dropped past `keep` lines (past
  // `keepUnfollowed` while the reader is elsewhere: their place is not pulled away).
  const followLog = (keep, keepUnfollowed) => {
    const log = document.getElementById("log");
    const button = document.getElementById("log-follow");
    const status = document.getElementById("log-status");
    let following = true;
    const atBottom = () => log.scrollHeight - log.scrollTop - log.clientHeight <= 4;
    const setFollowing = (value) => {
      if (value === following) return;
      following = value;
      button.hidden = value;
      status.textContent = value
        ? "Follows the newest line; scroll up to stop."
        : "Not following: you scrolled up. Scroll to the bottom to follow again, or";
    };
    log.addEventListener("scroll", () => setFollowing(atBottom()));
    button.addEventListener("click", () => {
      log.scrollTop = log.scrollHeight;
      setFollowing(true);
    });
    return (text) => {
      log.append(text);
      const limit = following ? keep : keepUnfollowed;
      while (log.childNodes.length > limit) log.firstChild.remove();
      if (following) log.scrollTop = log.scrollHeight;
    };
  };

  return { follow, markSteps, showProgress, followLog };
})();
