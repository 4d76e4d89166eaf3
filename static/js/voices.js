/* Voices page: play each voice's short preview on demand. */
(function () {
  "use strict";
  var current = null;
  document.querySelectorAll("button.preview").forEach(function (button) {
    var status = document.getElementById(button.getAttribute("aria-describedby"));
    button.addEventListener("click", function () {
      if (current) { current.pause(); }
      var audio = current = new Audio(button.dataset.previewUrl);
      status.textContent = "Loading…";
      audio.addEventListener("playing", function () { status.textContent = "Playing"; button.dataset.played = "1"; });
      audio.addEventListener("ended", function () { status.textContent = "Finished"; button.dataset.ended = "1"; });
      audio.addEventListener("error", function () { status.textContent = "The preview could not be loaded."; });
      audio.play().catch(function (e) { status.textContent = "Could not play: " + e.message; });
    });
  });
})();
