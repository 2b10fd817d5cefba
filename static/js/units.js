// The pages' units, as the units template filters (runs/common/units.py) write them, for
// text a page's script writes after it has loaded (a live step's time, a time left).
window.benchlabUnits = (function () {
  "use strict";
  // As the filter `duration`: "14 s", "2 min 5 s", "1 h 3 min".
  const duration = (seconds) => {
    const whole = Math.max(0, Math.round(seconds));
    const hours = Math.floor(whole / 3600), minutes = Math.floor((whole % 3600) / 60), rest = whole % 60;
    if (hours) return `${hours} h ${minutes} min`;
    return minutes ? `${minutes} min ${rest} s` : `${rest} s`;
  };
  return { duration };
})();
