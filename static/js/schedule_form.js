// The schedule form (templates/runs/_schedule_form.html, on a campaign's page and a schedule's
// page, and the admin's: runs/admin/schedules.py): the five crontab fields are shown only while
// "crontab" is chosen under "When"; a preset ("every night at 02:00", "Mondays") needs none.
// Without this script they stay shown, and the server ignores them for a preset
// (runs/forms/schedules.py).
(function () {
  "use strict";

  function enhance() {
    for (const fields of document.querySelectorAll("fieldset.crontab-fields")) {
      const times = fields.form && fields.form.elements.namedItem("times");
      if (!(times instanceof HTMLSelectElement)) continue;
      const shownFor = fields.dataset.shownFor || "custom"; // the admin's fieldset has only its class
      const show = () => { fields.hidden = times.value !== shownFor; };
      times.setAttribute("aria-controls", fields.id || (fields.id = `${times.id}-crontab`));
      times.addEventListener("change", show);
      show();
    }
  }

  // The admin loads a form's script in the page's head, before the form: wait for the form there.
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", enhance);
  else enhance();
})();
