/* The playground: speak text through the stream-input WebSocket and play the
 * raw s16le chunks with Web Audio as they arrive, so the first sentence plays
 * while the rest is still being synthesized. Exposes its counters on
 * window.playgroundStats for the browser tests. */
(function () {
  "use strict";
  var form = document.getElementById("playground");
  if (!form) return;
  var rate = parseInt(form.dataset.sampleRate, 10);
  var outputFormat = form.dataset.outputFormat;
  var el = function (id) { return document.getElementById(id); };
  var playBtn = el("pg-play"), stopBtn = el("pg-stop"), download = el("pg-download");
  var errorBox = el("pg-error");
  var ctx = null, socket = null, run = null;

  function resetStats() {
    window.playgroundStats = {
      bytes: 0, chunks: 0, samples: 0, firstAudioMs: null, totalMs: null,
      scheduled: 0, ended: 0, done: false, error: null, contextState: null, audioSeconds: 0
    };
  }
  resetStats();

  function setStatus(text) { el("pg-status").textContent = text; }
  function showError(text) {
    errorBox.textContent = text;
    errorBox.hidden = false;
    window.playgroundStats.error = text;
    setStatus("Failed");
  }

  function base64ToBytes(b64) {
    var bin = atob(b64), out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }

  function wavBlob(chunks, totalSamples) {
    var header = new DataView(new ArrayBuffer(44));
    var dataBytes = totalSamples * 2;
    function str(off, s) { for (var i = 0; i < s.length; i++) header.setUint8(off + i, s.charCodeAt(i)); }
    str(0, "RIFF"); header.setUint32(4, 36 + dataBytes, true); str(8, "WAVE");
    str(12, "fmt "); header.setUint32(16, 16, true); header.setUint16(20, 1, true); header.setUint16(22, 1, true);
    header.setUint32(24, rate, true); header.setUint32(28, rate * 2, true); header.setUint16(32, 2, true);
    header.setUint16(34, 16, true); str(36, "data"); header.setUint32(40, dataBytes, true);
    return new Blob([header.buffer].concat(chunks), { type: "audio/wav" });
  }

  function playPcm(state, bytes) {
    // Chunks may split a sample; keep the odd byte for the next one.
    if (state.carry) {
      var joined = new Uint8Array(state.carry.length + bytes.length);
      joined.set(state.carry); joined.set(bytes, state.carry.length);
      bytes = joined; state.carry = null;
    }
    if (bytes.length % 2) { state.carry = bytes.slice(bytes.length - 1); bytes = bytes.slice(0, bytes.length - 1); }
    if (!bytes.length) return;
    var pcm = new Int16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
    state.pcmChunks.push(pcm);
    state.samples += pcm.length;
    var buffer = ctx.createBuffer(1, pcm.length, rate);
    var channel = buffer.getChannelData(0);
    for (var i = 0; i < pcm.length; i++) channel[i] = pcm[i] / 32768;
    var source = ctx.createBufferSource();
    source.buffer = buffer;
    source.connect(ctx.destination);
    var stats = window.playgroundStats;
    source.onended = function () { stats.ended += 1; stats.contextState = ctx.state; };
    var at = Math.max(ctx.currentTime + 0.03, state.nextStart);
    source.start(at);
    state.sources.push(source);
    state.nextStart = at + buffer.duration;
    stats.scheduled += 1;
    stats.samples = state.samples;
    stats.audioSeconds = state.samples / rate;
  }

  function finish(state, message) {
    if (state.finished) return;
    state.finished = true;
    var stats = window.playgroundStats;
    stats.totalMs = Math.round(performance.now() - state.started);
    stats.done = true;
    stats.contextState = ctx.state;
    el("pg-total").textContent = stats.totalMs + " ms";
    playBtn.disabled = false;
    stopBtn.disabled = true;
    if (state.samples) {
      if (download.href) URL.revokeObjectURL(download.href);
      download.href = URL.createObjectURL(wavBlob(state.pcmChunks, state.samples));
      download.hidden = false;
    }
    if (message) setStatus(message);
  }

  function stop() {
    if (!run) return;
    run.sources.forEach(function (s) { try { s.stop(); } catch (e) { /* already ended */ } });
    if (socket && socket.readyState <= 1) socket.close(1000, "stopped");
    finish(run, "Stopped");
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var text = el("pg-text").value.trim();
    var voice = el("pg-voice").value;
    errorBox.hidden = true;
    if (!text) { showError("Text: type something to speak."); el("pg-text").focus(); return; }
    if (run && !run.finished) stop();
    // Created on the click: browsers only let a user gesture start audio.
    if (!ctx) ctx = new (window.AudioContext || window.webkitAudioContext)();
    if (ctx.state === "suspended") ctx.resume();
    resetStats();
    var state = run = {
      started: performance.now(), nextStart: 0, carry: null, pcmChunks: [], samples: 0,
      sources: [], finished: false
    };
    ["pg-ttfa", "pg-total", "pg-bytes"].forEach(function (id) { el(id).textContent = "–"; });
    download.hidden = true;
    playBtn.disabled = true;
    stopBtn.disabled = false;
    setStatus("Connecting…");
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    var url = scheme + location.host + "/v1/text-to-speech/" + encodeURIComponent(voice) +
      "/stream-input?output_format=" + encodeURIComponent(outputFormat);
    try {
      socket = new WebSocket(url);
    } catch (e) {
      showError("Could not open the streaming connection: " + e.message);
      finish(state);
      return;
    }
    socket.onopen = function () {
      setStatus("Synthesizing…");
      socket.send(JSON.stringify({ text: " " }));
      socket.send(JSON.stringify({ text: text + " ", flush: true }));
      socket.send(JSON.stringify({ text: "" }));
    };
    socket.onmessage = function (event) {
      if (state.finished) return;
      var msg;
      try { msg = JSON.parse(event.data); } catch (e) { return; }
      var stats = window.playgroundStats;
      if (msg.audio) {
        var bytes = base64ToBytes(msg.audio);
        stats.bytes += bytes.length;
        stats.chunks += 1;
        if (stats.firstAudioMs === null) {
          stats.firstAudioMs = Math.round(performance.now() - state.started);
          el("pg-ttfa").textContent = stats.firstAudioMs + " ms";
          setStatus("Playing…");
        }
        playPcm(state, bytes);
        el("pg-bytes").textContent = (stats.bytes / 1024).toFixed(1) + " KiB · " + stats.audioSeconds.toFixed(1) + " s";
      }
      if (msg.error || (msg.message && !msg.audio && !msg.isFinal)) {
        showError(msg.message || msg.error);
        finish(state);
        socket.close();
        return;
      }
      if (msg.isFinal) {
        finish(state, "Done");
        socket.close(1000, "done");
      }
    };
    socket.onerror = function () {
      if (!state.finished) showError("The streaming connection failed. Check that you are still logged in.");
    };
    socket.onclose = function (event) {
      if (!state.finished) {
        if (!window.playgroundStats.error && event.code !== 1000) {
          showError("The server closed the stream" + (event.reason ? ": " + event.reason : " (code " + event.code + ")."));
        }
        finish(state, window.playgroundStats.error ? null : "Done");
      }
    };
  });
  stopBtn.addEventListener("click", stop);
})();
