// Keyboard shortcuts for the review pages. Served as a file (the pages' Content-Security-Policy
// allows no inline script); every action is also a plain link or form that works without it.
(function () {
  "use strict";
  var rows = Array.prototype.slice.call(document.querySelectorAll("tr[data-href]"));
  var current = -1;

  function select(i) {
    if (!rows.length) return;
    if (current >= 0) rows[current].classList.remove("current");
    current = Math.max(0, Math.min(rows.length - 1, i));
    rows[current].classList.add("current");
    rows[current].scrollIntoView({ block: "nearest" });
  }

  function toggleKeys() {
    var keys = document.getElementById("keys");
    if (keys) keys.hidden = !keys.hidden;
  }

  var help = document.getElementById("show-keys");
  if (help) help.addEventListener("click", toggleKeys);

  rows.forEach(function (row, i) {
    row.addEventListener("click", function (ev) {
      if (ev.target.closest("a")) return;
      select(i);
      window.location.href = row.dataset.href;
    });
  });

  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    var field = ev.target.closest && ev.target.closest("input, textarea, select");
    if (field) {
      if (ev.key === "Escape") field.blur();
      return;
    }
    if (ev.key === "j") { select(current + 1); ev.preventDefault(); return; }
    if (ev.key === "k") { select(current - 1); ev.preventDefault(); return; }
    if ((ev.key === "o" || ev.key === "Enter") && current >= 0) {
      window.location.href = rows[current].dataset.href;
      ev.preventDefault();
      return;
    }
    if (ev.key === "?") { toggleKeys(); ev.preventDefault(); return; }
    var target = null;
    document.querySelectorAll("[data-key]").forEach(function (el) {
      if (el.dataset.key === ev.key && el.id !== "show-keys") target = target || el;
    });
    if (!target) return;
    ev.preventDefault();
    if (target.matches("input, textarea")) {
      target.focus();
      if (target.tagName === "TEXTAREA") target.setSelectionRange(target.value.length, target.value.length);
    } else {
      target.click();
    }
  });
})();
