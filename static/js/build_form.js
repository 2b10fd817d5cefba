// The Build form: choosing a host lists its sources at once (the host form's button does the
// same without a script).
"use strict";
(() => {
  const choice = document.getElementById("host-choice");
  if (choice) choice.addEventListener("change", () => choice.form.submit());
})();
