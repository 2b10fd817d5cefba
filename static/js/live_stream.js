// A page's live events (server-sent events, runs/views/live.py), for every page that follows
// something live. The browser's EventSource reconnects by itself whenever a stream ends, and
// resumes after the last event id it saw. The server ends each stream after a maximum age,
// announcing it with a "renew" event: that end is planned, and nothing was missed. Any other end
// is a break (Redis restarted, the network dropped), after which `onBreak` may fill the gap from
// the database. The browser gives up only when the server refuses the stream (too many live
// pages open, the role taken away): the page then says so in the server's words.
window.benchlabLive = (function () {
  "use strict";

  const showStopped = (text) => {
    if (document.getElementById("live-stopped")) return;
    const notice = document.createElement("p");
    notice.id = "live-stopped";
    notice.className = "warning-box";
    notice.setAttribute("role", "alert");
    notice.textContent = `Live updates stopped. ${text}`;
    const main = document.getElementById("main");
    const messages = main.querySelector(".messages");
    if (messages) messages.after(notice);
    else main.prepend(notice);
  };

  // EventSource hides the refusal's answer: ask once more to read it (a stream that opens now is
  // closed at once, giving its slot back).
  const explainRefusal = async (url) => {
    const asking = new AbortController();
    try {
      const answer = await fetch(url, { headers: { Accept: "text/event-stream" }, signal: asking.signal });
      if (answer.ok) {
        asking.abort();
        showStopped("The server refused them a moment ago; reload the page to follow again.");
      } else {
        showStopped(await answer.text());
      }
    } catch (error) {
      showStopped("The server cannot be reached; reload the page once it is back.");
    }
  };

  const follow = (url, onBreak) => {
    const source = new EventSource(url);
    let renewing = false;
    let broken = false;
    source.addEventListener("renew", () => { renewing = true; });
    source.addEventListener("error", () => {
      if (source.readyState === EventSource.CLOSED) explainRefusal(url);
      else if (renewing) renewing = false;
      else broken = true;
    });
    source.addEventListener("open", () => {
      if (!broken) return;
      broken = false;
      if (onBreak) onBreak();
    });
    return source;
  };

  return { follow };
})();
