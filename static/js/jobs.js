/* Jobs page: progress bars follow the tenant's jobs over the job-progress
   WebSocket (session-authenticated, no key), without reloading the page. */
(function () {
  "use strict";
  var list = document.getElementById("job-list");
  var live = document.getElementById("jobs-live");
  var LABELS = { queued: "Queued", running: "Running", succeeded: "Succeeded", failed: "Failed", cancelled: "Cancelled" };
  var FINAL = { succeeded: true, failed: true, cancelled: true };
  var stats = window.jobsStats = { connected: false, messages: 0, updated: 0, unknown: 0, closeCode: null };
  var retryMs = 1000;
  var leaving = false;

  function part(item, role) { return item.querySelector("[data-role='" + role + "']"); }

  function update(item, msg) {
    var status = msg.status;
    var percent = msg.total_chunks ? Math.round(100 * msg.done_chunks / msg.total_chunks) : 0;
    var bar = part(item, "bar");
    bar.setAttribute("aria-valuenow", String(percent));
    bar.firstElementChild.style.width = percent + "%";
    part(item, "chunks").textContent = msg.done_chunks + " of " + msg.total_chunks + " chunks";
    part(item, "seconds").textContent = (msg.audio_seconds || 0).toFixed(1);
    var badge = part(item, "status");
    badge.textContent = LABELS[status] || status;
    badge.className = "badge " + (status === "succeeded" ? "ok" : FINAL[status] ? "bad" : "warn");
    item.dataset.status = status;
    if (FINAL[status]) {
      var cancel = part(item, "cancel");
      if (cancel) cancel.remove();
    }
    if (status === "succeeded" && !part(item, "download")) {
      var link = document.createElement("a");
      link.href = list.dataset.audioUrl.replace("JOB_ID", msg.job_id);
      link.className = "button";
      link.dataset.role = "download";
      link.textContent = "Download";
      var hint = document.createElement("span");
      hint.className = "visually-hidden";
      hint.textContent = " audio of this job";
      link.append(hint);
      item.querySelector(".item-actions").prepend(link);
    }
    var error = part(item, "error");
    if (status === "failed" && msg.error_code && !error.textContent.trim()) {
      error.textContent = msg.error_code;
      error.hidden = false;
    }
  }

  function connect() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    var socket;
    try {
      socket = new WebSocket(scheme + location.host + "/v1/jobs/progress");
    } catch (e) {
      live.textContent = "Live progress is unavailable: " + e.message;
      return;
    }
    socket.onopen = function () { stats.connected = true; retryMs = 1000; };
    socket.onmessage = function (event) {
      var msg;
      try { msg = JSON.parse(event.data); } catch (e) { return; }
      stats.messages += 1;
      if (msg.type === "error") {
        live.textContent = "Live progress is unavailable: " + msg.message;
        return;
      }
      if (msg.type !== "progress") return;
      var item = document.getElementById("job-" + msg.job_id);
      if (item && list && list.contains(item)) {
        update(item, msg);
        stats.updated += 1;
      } else if (!stats.unknown++) {
        live.innerHTML = "";
        live.append("Another job is making progress. ");
        var link = document.createElement("a");
        link.href = location.pathname;
        link.textContent = "Reload to see it";
        live.append(link);
      }
    };
    socket.onclose = function (event) {
      stats.connected = false;
      stats.closeCode = event.code;
      if (leaving || event.code === 4401) return;  // logged out or no longer a member: no retries
      setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, 30000);
    };
  }

  window.addEventListener("pagehide", function () { leaving = true; });
  connect();
})();
