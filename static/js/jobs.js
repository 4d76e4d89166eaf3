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

  // --- an estimate between chunk events: where the bar should be, and the time left ---------
  // Per job: when it started (or was first seen running), and when its last chunk finished.
  var timing = {};
  var pageLoaded = Date.now();
  function track(item, done) {
    var id = item.dataset.jobId, t = timing[id];
    if (!t) {
      var started = Date.parse(item.dataset.started || "");
      t = timing[id] = { started: isNaN(started) ? null : started, lastAt: pageLoaded, done: done };
    }
    if (done !== t.done) { t.done = done; t.lastAt = Date.now(); }
    if (t.started === null && item.dataset.status === "running") t.started = Date.now();
    return t;
  }
  function humanize(seconds) {
    if (seconds < 60) return "about " + Math.max(5, Math.round(seconds / 5) * 5) + " s left";
    return "about " + Math.round(seconds / 60) + " min left";
  }
  // This tenant's recent pace (seconds per character, from the server), for the first chunk: until a
  // chunk is done the job has no pace of its own.
  var paceSeconds = list ? parseFloat(list.dataset.secondsPerCharacter || "") : NaN;
  function tick() {
    if (!list) return;
    list.querySelectorAll("li[data-status='running']").forEach(function (item) {
      var done = parseInt(item.dataset.done, 10) || 0, total = parseInt(item.dataset.total, 10) || 0;
      var t = track(item, done);
      var eta = part(item, "eta");
      var now = Date.now();
      var perChunk, chunkStart;
      if (done) {
        perChunk = (t.lastAt - t.started) / done;
        chunkStart = t.lastAt;
      } else {
        var characters = parseInt(item.dataset.characters, 10) || 0;
        perChunk = paceSeconds > 0 && total ? 1000 * paceSeconds * characters / total : 0;
        chunkStart = t.started;
      }
      if (!total || !t.started || !(perChunk > 0)) { eta.textContent = done ? "" : "· estimating time left…"; return; }
      // Within the current chunk: move by the average chunk time, but never claim it is finished.
      var within = Math.min(0.9, Math.max(0, now - chunkStart) / perChunk);
      var estimate = Math.min(total, done + within);
      item.querySelector(".meter-fill").style.width = (100 * estimate / total).toFixed(1) + "%";
      var left = Math.max(0, perChunk * (total - done) - (now - chunkStart)) / 1000;
      eta.textContent = "· " + humanize(left);
      part(item, "bar").setAttribute("aria-valuetext",
        Math.round(100 * done / total) + "% done, " + humanize(left) + " (estimated)");
      window.jobsStats.estimated = (window.jobsStats.estimated || 0) + 1;
      if (!done) {
        window.jobsStats.firstChunkEstimated = (window.jobsStats.firstChunkEstimated || 0) + 1;
        window.jobsStats.firstChunk = { width: 100 * estimate / total, eta: eta.textContent };
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
    item.dataset.done = String(msg.done_chunks);
    item.dataset.total = String(msg.total_chunks);
    if (status === "running") track(item, msg.done_chunks);
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
