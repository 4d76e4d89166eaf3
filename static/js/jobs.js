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

  // --- the time left between progress events -------------------------------------------------
  // The worker reports progress as each sentence is spoken (at most every second), with the time
  // left at the pace it measured (eta_seconds); between reports that time counts down. Before the
  // first report, this tenant's recent pace (seconds per character, from the server) stands in.
  var timing = {};
  function track(item) {
    var id = item.dataset.jobId, t = timing[id];
    if (!t) {
      var started = Date.parse(item.dataset.started || "");
      t = timing[id] = { started: isNaN(started) ? null : started, eta: null, at: 0, progress: 0 };
    }
    if (t.started === null && item.dataset.status === "running") t.started = Date.now();
    return t;
  }
  function humanize(seconds) {
    if (seconds < 60) return "about " + Math.max(5, Math.round(seconds / 5) * 5) + " s left";
    return "about " + Math.round(seconds / 60) + " min left";
  }
  var paceSeconds = list ? parseFloat(list.dataset.secondsPerCharacter || "") : NaN;
  function tick() {
    if (!list) return;
    list.querySelectorAll("li[data-status='running']").forEach(function (item) {
      var t = track(item), eta = part(item, "eta"), now = Date.now();
      var left;
      if (t.eta !== null) {
        left = Math.max(0, t.eta - (now - t.at) / 1000);
      } else if (paceSeconds > 0 && t.started) {
        var characters = parseInt(item.dataset.characters, 10) || 0;
        left = Math.max(0, paceSeconds * characters * (1 - t.progress) - (now - t.started) / 1000);
      } else {
        eta.textContent = "· estimating time left…";
        return;
      }
      eta.textContent = "· " + humanize(left);
      part(item, "bar").setAttribute("aria-valuetext",
        Math.round(100 * t.progress) + "% done, " + humanize(left) + " (estimated)");
      window.jobsStats.estimated = (window.jobsStats.estimated || 0) + 1;
      if (!(parseInt(item.dataset.done, 10) || 0)) {
        window.jobsStats.firstChunkEstimated = (window.jobsStats.firstChunkEstimated || 0) + 1;
        window.jobsStats.firstChunk = { width: 100 * t.progress, eta: eta.textContent };
      }
    });
  }
  setInterval(tick, 500);

  function showRefund(item, jobId) {
    fetch(list.dataset.summaryUrl.replace("JOB_ID", jobId), { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
      .then(function (s) {
        if (s.characters_charged === null) return;
        var refund = part(item, "refund");
        refund.textContent = "Refunded " + s.refunded.toLocaleString("en-US") + " characters; charged " +
          s.characters_charged.toLocaleString("en-US") + " for what was spoken.";
        refund.hidden = false;
      })
      .catch(function () { /* the refund shows after a reload */ });
  }

  function update(item, msg) {
    var status = msg.status;
    // aria-valuenow: the finished chunks (kept); the bar's width: where the worker is, inside a chunk too.
    var percent = msg.total_chunks ? Math.round(100 * msg.done_chunks / msg.total_chunks) : 0;
    var progress = typeof msg.progress === "number" ? msg.progress : percent / 100;
    var bar = part(item, "bar");
    bar.setAttribute("aria-valuenow", String(percent));
    bar.firstElementChild.style.width = (100 * progress).toFixed(1) + "%";
    part(item, "chunks").textContent = msg.done_chunks + " of " + msg.total_chunks + " chunks";
    part(item, "seconds").textContent = (msg.audio_seconds || 0).toFixed(1);
    var badge = part(item, "status");
    badge.textContent = LABELS[status] || status;
    badge.className = "badge " + (status === "succeeded" ? "ok" : FINAL[status] ? "bad" : "warn");
    item.dataset.status = status;
    item.dataset.done = String(msg.done_chunks);
    item.dataset.total = String(msg.total_chunks);
    if (status === "running") {
      var t = track(item);
      t.progress = progress;
      if (typeof msg.eta_seconds === "number") { t.eta = msg.eta_seconds; t.at = Date.now(); }
    }
    if (FINAL[status]) {
      var cancel = part(item, "cancel");
      if (cancel) cancel.remove();
      part(item, "eta").textContent = "";
      bar.removeAttribute("aria-valuetext");
      if (status !== "succeeded") showRefund(item, msg.job_id);
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
        // The socket's first messages (snapshot) restate what the page may have missed before it
        // connected; a job the page already shows as ended needs nothing from them.
        if (msg.snapshot && FINAL[item.dataset.status]) return;
        update(item, msg);
        stats.updated += 1;
      } else if (msg.snapshot) {
        return;  // a job on another page of the list
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
