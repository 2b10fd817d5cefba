// "Read health now" under way (templates/runs/device_detail.html, #health-ask): a worker reads the
// device's health, so the page asks every two seconds whether the reading is stored
// (runs/views/devices.py:device_health_state) and, once it is, or once the server counts it as
// failed (not stored within its bound), reloads to show the reading or the failure. There is no
// live stream for this: one small JSON answer every two seconds for at most a few minutes.
(function () {
  "use strict";
  const notice = document.getElementById("health-ask");
  if (!notice || !notice.dataset.state || !window.fetch) return;
  const EVERY_MS = 2000;

  const ask = async () => {
    try {
      const answer = await fetch(notice.dataset.state, { headers: { Accept: "application/json" } });
      if (answer.ok && !(await answer.json()).pending) {
        window.location.reload();
        return;
      }
    } catch (error) {
      // the server is away for a moment (a restart): ask again, as a live stream would reconnect
    }
    setTimeout(ask, EVERY_MS);
  };
  setTimeout(ask, EVERY_MS);
})();
