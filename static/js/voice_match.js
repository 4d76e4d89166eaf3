/* A voice match's page: while the match is queued or running, its state (status, progress bar,
   then the result or the error) is fetched again every 1.5 s and swapped in, without reloading. */
(function () {
  "use strict";
  var stats = window.voiceMatchStats = { polls: 0, statuses: [] };
  var state = document.getElementById("match-state");
  if (!state) return;
  stats.statuses.push(state.dataset.status);

  function poll() {
    fetch(window.location.href, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (response) {
        if (!response.ok) throw new Error("status " + response.status);
        return response.text();
      })
      .then(function (html) {
        stats.polls += 1;
        var next = new DOMParser().parseFromString(html, "text/html").getElementById("match-state");
        if (next) {
          state.replaceWith(next);
          state = next;
          if (stats.statuses[stats.statuses.length - 1] !== state.dataset.status) stats.statuses.push(state.dataset.status);
        }
        if (state.dataset.finished !== "true") window.setTimeout(poll, 1500);
      })
      .catch(function () { window.setTimeout(poll, 5000); });
  }

  if (state.dataset.finished !== "true") window.setTimeout(poll, 1500);
})();
