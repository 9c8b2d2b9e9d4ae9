// Saves each answer as soon as it is entered, sizes the progress bars and runs the task timer.
(function () {
  "use strict";
  const form = document.querySelector("form[data-save-url]");
  const status = document.getElementById("save-status");
  document.addEventListener("change", function (event) {
    const fieldset = event.target.closest("fieldset.field");
    if (!fieldset) return;
    fieldset.querySelectorAll("label.option").forEach(function (l) {
      l.classList.toggle("chosen", l.contains(event.target));
    });
  });
  if (form) {
    form.addEventListener("change", async function (event) {
      const input = event.target;
      if (!input.dataset || !input.dataset.target) return;
      status.textContent = "Saving…";
      try {
        const response = await fetch(form.dataset.saveUrl, {
          method: "POST",
          credentials: "same-origin",
          headers: { "Content-Type": "application/json", "X-CSRF-Token": form.dataset.csrf },
          body: JSON.stringify({ target: input.dataset.target, field: input.dataset.field, value: input.value }),
        });
        status.textContent = response.ok ? "Saved" : "Not saved (" + response.status + ")";
        status.classList.toggle("error", !response.ok);
      } catch (err) {
        status.textContent = "Not saved: check your connection";
        status.classList.add("error");
      }
    });
  }
  // Progress bars: widths come from data-percent (the CSP forbids inline style attributes).
  document.querySelectorAll("[data-percent]").forEach(function (bar) {
    bar.style.width = (parseInt(bar.dataset.percent, 10) || 0) + "%";
  });
  const timer = document.getElementById("timer");
  if (timer) {
    let seconds = parseInt(timer.dataset.elapsed, 10) || 0;
    const show = function () {
      const m = Math.floor(seconds / 60), s = seconds % 60;
      timer.textContent = m + ":" + (s < 10 ? "0" : "") + s;
    };
    show();
    if (timer.dataset.running === "yes") setInterval(function () { seconds += 1; show(); }, 1000);
  }
})();
