// The share links page: copies a new link to the clipboard. Where the clipboard is out of reach
// (no permission, an insecure context), the link is left selected for the user to copy.
(function () {
  const button = document.getElementById("copy-share");
  if (!button) return;
  const field = document.getElementById(button.dataset.copy);
  const status = document.getElementById("copy-status");
  button.addEventListener("click", async () => {
    field.focus();
    field.select();
    try {
      await navigator.clipboard.writeText(field.value);
      status.textContent = "Copied.";
    } catch (error) {
      status.textContent = "Selected: press Ctrl+C (⌘C on a Mac) to copy it.";
    }
  });
})();
