/* The top menu on phones: folded behind a "Menu" button under 600 px, always shown wider. */
(function () {
  "use strict";
  var bar = document.querySelector(".topbar");
  var toggle = document.getElementById("menu-toggle");
  if (!bar || !toggle) return;
  var narrow = window.matchMedia("(max-width: 600px)");

  function show(open) {
    bar.classList.toggle("menu-folded", !open);
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
  }

  function fit() {
    toggle.hidden = !narrow.matches;
    show(!narrow.matches);
  }

  toggle.addEventListener("click", function () {
    show(toggle.getAttribute("aria-expanded") !== "true");
  });
  narrow.addEventListener("change", fit);
  fit();
})();
