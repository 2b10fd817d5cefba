// The schedule form (templates/runs/_schedule_form.html, on a campaign's page and a schedule's
// page): the five crontab fields are shown only while "crontab" is chosen under "When"; a preset
// ("every night at 02:00", "Mondays") needs none. Without this script they stay shown, and the
// server ignores them for a preset (runs/forms/schedules.py).
(function () {
  "use strict";
  for (const fields of document.querySelectorAll("fieldset.crontab-fields[data-shown-for]")) {
    const times = fields.form && fields.form.elements.namedItem("times");
    if (!(times instanceof HTMLSelectElement)) continue;
    const show = () => { fields.hidden = times.value !== fields.dataset.shownFor; };
    times.setAttribute("aria-controls", fields.id || (fields.id = `${times.id}-crontab`));
    times.addEventListener("change", show);
    show();
  }
})();
