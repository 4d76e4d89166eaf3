/* The playground: speak text through the stream-input WebSocket and play the
 * raw s16le chunks with Web Audio as they arrive, so the first sentence plays
 * while the rest is still being synthesized. Exposes its counters on
 * window.playgroundStats for the browser tests, and what its dialogue mode
 * (playground-dialogue.js) shares on window.playgroundCore. */
(function () {
  "use strict";
  var form = document.getElementById("playground");
  if (!form) return;
  var rate = parseInt(form.dataset.sampleRate, 10);
  var outputFormat = form.dataset.outputFormat;
  var el = function (id) { return document.getElementById(id); };
  var playBtn = el("pg-play"), stopBtn = el("pg-stop"), download = el("pg-download");
  var errorBox = el("pg-error"), textBox = el("pg-text"), overBox = el("pg-over");
  var maxChars = parseInt(form.dataset.maxChars, 10);
  var monthLeft = form.dataset.monthLeft === "" ? null : parseInt(form.dataset.monthLeft, 10);
  var ctx = null, socket = null, run = null, lastItemId = null;
  // One way to write every number on the page: 10,000 (as the server's pages do).
  var fmtNumber = function (n) { return n.toLocaleString("en-US"); };

  // --- the character counter and the cut at the limit ---------------------------
  // Characters are counted as the server counts them: code points (an emoji is one, not two UTF-16
  // units), of the text that is sent, which is the typed text without leading and trailing blanks.
  function codePoints(text) { return Array.from(text); }
  // What Play sends: the text, trimmed, cut at the last whole word within the limit.
  function textToSend(full) {
    var chars = codePoints(full.trim());
    if (chars.length <= maxChars) return chars.join("");
    var head = chars.slice(0, maxChars + 1);
    var at = -1;
    for (var i = head.length - 1; i > 0; i--) { if (/\s/.test(head[i])) { at = i; break; } }
    return head.slice(0, at > 0 ? at : maxChars).join("").trim();
  }
  function updateCounter() {
    var full = textBox.value;
    var n = codePoints(full.trim()).length;
    el("pg-count-n").textContent = fmtNumber(n);
    el("pg-max").textContent = fmtNumber(maxChars);
    if (monthLeft !== null) el("pg-month-left").textContent = fmtNumber(monthLeft);
    el("pg-count").classList.toggle("over", n > maxChars);
    if (n > maxChars) {
      var sent = textToSend(full), keep = codePoints(sent).length;
      overBox.textContent = fmtNumber(n - maxChars) + " characters over the limit of " + fmtNumber(maxChars) +
        ". Play speaks only the first " + fmtNumber(keep) + " characters, up to the last whole word: “…" +
        codePoints(sent).slice(-40).join("").trim() + "”.";
      overBox.hidden = false;
    } else {
      overBox.hidden = true;
      overBox.textContent = "";
    }
    window.playgroundStats && (window.playgroundStats.counter = n);
  }
  textBox.addEventListener("input", function () { updateCounter(); renderCode(); });

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

  function received(bytes, seconds) {
    var size = bytes < 1048576 ? (bytes / 1024).toFixed(1) + " KiB" : (bytes / 1048576).toFixed(1) + " MiB";
    return size + " · " + seconds.toFixed(1) + " s";
  }

  function finish(state, message) {
    if (state.finished) return;
    state.finished = true;
    if (state.abort) state.abort.abort();
    var stats = window.playgroundStats;
    stats.totalMs = Math.round(performance.now() - state.started);
    stats.done = true;
    stats.contextState = ctx.state;
    el("pg-total").textContent = stats.totalMs + " ms";
    playBtn.disabled = false;
    stopBtn.disabled = true;
    if (state.samples) {
      state.wav = wavBlob(state.pcmChunks, state.samples);
      offerDownload(state);
      if (state.player) {
        // The whole run in the page's audio element too (replay, seek), from what arrived.
        var player = el("pg-audio");
        if (player.src && player.src.indexOf("blob:") === 0) URL.revokeObjectURL(player.src);
        player.src = URL.createObjectURL(state.wav);
        player.hidden = false;
      }
    }
    if (message) setStatus(message);
    refreshRecent(state, 0);
  }

  // --- the download: WAV from what arrived, other formats from the history item -----
  // Both named by the server's one rule (voice, time, first words), given with the history item.
  function offerDownload(state) {
    var fmt = el("pg-format").value;
    if (download.href && download.href.indexOf("blob:") === 0) URL.revokeObjectURL(download.href);
    download.removeAttribute("href");
    download.hidden = true;
    if (!state || !state.samples) return;
    if (fmt === "wav_22050" && state.itemId !== undefined) {
      download.href = URL.createObjectURL(state.wav);
      download.setAttribute("download", state.fileStem ? state.fileStem + ".wav" : "playground.wav");
      download.textContent = "Download WAV";
      download.hidden = false;
    } else if (state.itemId) {
      download.href = "/history/" + state.itemId + "/download/?format=" + encodeURIComponent(fmt);
      download.removeAttribute("download");
      download.setAttribute("download", "");
      download.textContent = "Download " + el("pg-format").selectedOptions[0].textContent.split(" ")[0];
      download.hidden = false;
    }
  }
  el("pg-format").addEventListener("change", function () { if (run && run.finished) offerDownload(run); renderCode(); });

  // --- recent generations (and this run's history item) ---------------------------
  function refreshRecent(state, attempt) {
    fetch(form.dataset.recentUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
      .then(function (data) {
        var items = data.items || [];
        var newest = items[0];
        // The run's own item is the newest one not seen before; it may take a moment to be stored
        // (a stopped run's too: it keeps, and bills, what was spoken).
        var ended = newest && (newest.status === "success" || (newest.status === "cancelled" && newest.download_url));
        if (state && state.samples && (!newest || newest.id === lastItemId || !ended) && attempt < 20) {
          setTimeout(function () { refreshRecent(state, attempt + 1); }, 300 + 100 * attempt);
          return;
        }
        renderRecent(items);
        if (state && state.samples) {
          var mine = newest && newest.id !== lastItemId && ended;
          state.itemId = mine ? newest.id : null;  // null: not stored; the WAV of what arrived is still offered
          state.fileStem = mine ? newest.file_stem : "";
          window.playgroundStats.itemId = state.itemId;
          offerDownload(state);
        }
        if (newest) lastItemId = newest.id;
        if (typeof data.max_chars === "number") maxChars = data.max_chars;
        if (typeof data.month_left === "number") monthLeft = data.month_left;
        updateCounter();
        renderCode();
        window.playgroundStats.recentRefreshed = (window.playgroundStats.recentRefreshed || 0) + 1;
      })
      .catch(function () {
        // The list stays as it was; the WAV of what arrived is still offered.
        if (state && state.samples && state.itemId === undefined) { state.itemId = null; offerDownload(state); }
      });
  }
  function renderRecent(items) {
    var list = el("pg-recent");
    list.textContent = "";
    items.forEach(function (item) {
      var li = document.createElement("li");
      li.dataset.itemId = item.id;
      var a = document.createElement("a");
      a.href = item.history_url;
      a.textContent = item.voice + " · " + (item.text || "(text not logged)");
      var meta = document.createElement("span");
      meta.className = "muted small";
      meta.textContent = " " + fmtNumber(item.characters) + " chars · " + item.duration_s + " s · " + item.status;
      li.appendChild(a); li.appendChild(document.createTextNode(" ")); li.appendChild(meta);
      list.appendChild(li);
    });
    el("pg-recent-empty").hidden = items.length > 0;
  }
  var firstRecent = el("pg-recent").querySelector("li");
  if (firstRecent) lastItemId = firstRecent.dataset.itemId;

  function stop() {
    if (!run) return;
    if (run.abort) run.abort.abort();
    run.sources.forEach(function (s) { try { s.stop(); } catch (e) { /* already ended */ } });
    if (socket && socket.readyState <= 1) socket.close(1000, "stopped");
    finish(run, "Stopped");
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    if (run && !run.finished) stop();
    // Every run starts from blank figures, whatever the last one left (a failure included).
    resetStats();
    ["pg-ttfa", "pg-total", "pg-bytes"].forEach(function (id) { el(id).textContent = "–"; });
    setStatus("Ready");
    download.hidden = true;
    errorBox.hidden = true;
    el("pg-audio").hidden = true;
    if (core && core.dialogue && core.dialogue.active()) { core.dialogue.speak(); return; }
    var full = textBox.value;
    var text = textToSend(full);
    var voice = el("pg-voice").value;
    var model = el("pg-model").value;
    var speed = parseFloat(el("pg-speed").value) || 1.0;
    window.playgroundStats.sentChars = codePoints(text).length;
    window.playgroundStats.sentText = text;
    window.playgroundStats.cut = codePoints(text).length < codePoints(full.trim()).length;
    if (!text) { showError("Text: type something to speak."); textBox.focus(); return; }
    // Created on the click: browsers only let a user gesture start audio.
    if (!ctx) ctx = new (window.AudioContext || window.webkitAudioContext)();
    if (ctx.state === "suspended") ctx.resume();
    var state = run = {
      started: performance.now(), nextStart: 0, carry: null, pcmChunks: [], samples: 0,
      sources: [], finished: false
    };
    playBtn.disabled = true;
    stopBtn.disabled = false;
    setStatus("Connecting…");
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    var url = scheme + location.host + "/v1/text-to-speech/" + encodeURIComponent(voice) +
      "/stream-input?output_format=" + encodeURIComponent(outputFormat) + "&model_id=" + encodeURIComponent(model);
    try {
      socket = new WebSocket(url);
    } catch (e) {
      showError("Could not open the streaming connection: " + e.message);
      finish(state);
      return;
    }
    socket.onopen = function () {
      setStatus("Synthesizing…");
      socket.send(JSON.stringify({ text: " ", voice_settings: { speed: speed } }));
      // Exactly the text the counter counted: no trailing space (flush speaks it whole).
      socket.send(JSON.stringify({ text: text, flush: true }));
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
        el("pg-bytes").textContent = received(stats.bytes, stats.audioSeconds);
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

  // --- "view code": the same request as curl, Python (elevenlabs) and JavaScript ----
  function shellQuote(v) { return "'" + String(v).replace(/'/g, "'\\''") + "'"; }
  function renderCode() {
    if (core && core.dialogue && core.dialogue.active()) { core.dialogue.renderCode(); return; }
    var base = form.dataset.apiBase;
    var voice = el("pg-voice").value;
    var model = el("pg-model").value;
    var fmt = el("pg-format").value;
    var speed = parseFloat(el("pg-speed").value) || 1.0;
    var text = textToSend(textBox.value);
    var ext = fmt.split("_")[0] === "opus" ? "ogg" : fmt.split("_")[0];
    var url = base + "/v1/text-to-speech/" + encodeURIComponent(voice) + "?output_format=" + fmt;
    var body = { text: text, model_id: model, voice_settings: { speed: speed } };
    el("code-curl").firstChild.textContent =
      "curl -X POST " + shellQuote(url) + " \\\n" +
      "  -H 'xi-api-key: YOUR_API_KEY' \\\n" +
      "  -H 'Content-Type: application/json' \\\n" +
      "  -d " + shellQuote(JSON.stringify(body)) + " \\\n" +
      "  -o speech." + ext;
    el("code-python").firstChild.textContent =
      "# pip install elevenlabs\n" +
      "from elevenlabs import VoiceSettings\n" +
      "from elevenlabs.client import ElevenLabs\n\n" +
      "client = ElevenLabs(api_key=\"YOUR_API_KEY\", base_url=" + JSON.stringify(base) + ")\n" +
      "audio = client.text_to_speech.convert(\n" +
      "    voice_id=" + JSON.stringify(voice) + ",\n" +
      "    text=" + JSON.stringify(text) + ",\n" +
      "    model_id=" + JSON.stringify(model) + ",\n" +
      "    output_format=" + JSON.stringify(fmt) + ",\n" +
      "    voice_settings=VoiceSettings(speed=" + speed.toFixed(2).replace(/0$/, "") + "),\n" +
      ")\n" +
      "with open(\"speech." + ext + "\", \"wb\") as f:\n" +
      "    for chunk in audio:\n" +
      "        f.write(chunk)\n";
    el("code-js").firstChild.textContent =
      "const response = await fetch(" + JSON.stringify(url) + ", {\n" +
      "  method: \"POST\",\n" +
      "  headers: { \"xi-api-key\": \"YOUR_API_KEY\", \"Content-Type\": \"application/json\" },\n" +
      "  body: JSON.stringify(" + JSON.stringify(body, null, 2).replace(/\n/g, "\n  ") + "),\n" +
      "});\n" +
      "if (!response.ok) throw new Error(await response.text());\n" +
      "const audio = await response.blob(); // " + fmt + "\n";
  }
  // Every voice is offered, grouped by its model (a voice is served by one model): choosing a voice
  // chooses its model; choosing a model chooses its first voice unless the voice is already its own.
  var modelSelect = el("pg-model"), voiceSelect = el("pg-voice");
  function syncVoices() {
    var current = voiceSelect.options[voiceSelect.selectedIndex];
    if (current && current.dataset.model === modelSelect.value) return;
    var first = Array.prototype.find.call(voiceSelect.options, function (o) { return o.dataset.model === modelSelect.value; });
    if (first) voiceSelect.value = first.value;
  }
  function syncModel() {
    var current = voiceSelect.options[voiceSelect.selectedIndex];
    if (current && current.dataset.model) modelSelect.value = current.dataset.model;
  }
  modelSelect.addEventListener("change", function () { chosen = true; syncVoices(); renderCode(); });
  syncModel();
  el("pg-voice").addEventListener("change", function () { chosen = true; syncModel(); renderCode(); });
  // The voice follows the text's language (its configured voice) until one is chosen by hand.
  var chosen = false;
  var languageVoices = JSON.parse(el("pg-language-voices").textContent || "{}");
  function scriptLanguage(text) {
    if (/[\u3040-\u30ff]/.test(text)) return "ja";
    if (/[\u3400-\u9fff]/.test(text)) return "zh";
    if (/[\u0900-\u097f]/.test(text)) return "hi";
    return "en";
  }
  el("pg-text").addEventListener("input", function () {
    var voiceId = languageVoices[scriptLanguage(el("pg-text").value)];
    if (chosen || !voiceId || voiceSelect.value === voiceId) return;
    var option = Array.prototype.find.call(voiceSelect.options, function (o) { return o.value === voiceId; });
    if (!option) return;
    voiceSelect.value = voiceId;
    syncModel();
    renderCode();
  });
  el("pg-speed").addEventListener("change", renderCode);
  var codeToggle = el("pg-code-toggle"), codePanel = el("pg-code");
  codeToggle.addEventListener("click", function () {
    var open = codePanel.hidden;
    codePanel.hidden = !open;
    codeToggle.setAttribute("aria-expanded", String(open));
    codeToggle.textContent = open ? "Hide code" : "View code";
    if (open) renderCode();
  });
  var tabs = codePanel.querySelectorAll("[role=tab]");
  tabs.forEach(function (tab) {
    tab.addEventListener("click", function () {
      tabs.forEach(function (t) {
        var selected = t === tab;
        t.setAttribute("aria-selected", String(selected));
        el(t.getAttribute("aria-controls")).hidden = !selected;
      });
    });
  });
  el("pg-code-copy").addEventListener("click", function () {
    var panel = codePanel.querySelector("pre:not([hidden])");
    var status = el("pg-code-status");
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(panel.textContent).then(function () { status.textContent = "Copied."; },
        function () { status.textContent = "Select the code and copy it by hand."; });
    } else {
      status.textContent = "Select the code and copy it by hand.";
    }
  });
  // --- what Play will bill, where a default dictionary can make it more than the count ---------
  // The server applies the dictionaries as a run does; asked a moment after typing stops, and its
  // answer kept only if the text is still the same.
  var billedUrl = form.dataset.billedUrl, billedTimer = null, billedAsked = null;
  function scheduleBilled() {
    if (!billedUrl) return;
    clearTimeout(billedTimer);
    billedTimer = setTimeout(askBilled, 300);
  }
  function askBilled() {
    var text = textToSend(textBox.value);
    billedAsked = text;
    var body = new URLSearchParams({ text: text });
    fetch(billedUrl, {
      method: "POST", body: body, credentials: "same-origin",
      headers: { "X-CSRFToken": form.querySelector("[name=csrfmiddlewaretoken]").value }
    }).then(function (r) { return r.ok ? r.json() : null; }).then(function (data) {
      if (!data || billedAsked !== text) return;
      el("pg-billed-n").textContent = fmtNumber(data.billed);
      el("pg-billed").hidden = data.billed === data.characters;
      window.playgroundStats && (window.playgroundStats.billed = data.billed);
    }).catch(function () { el("pg-billed").hidden = true; });
  }
  textBox.addEventListener("input", scheduleBilled);
  // What the dialogue mode (playground-dialogue.js) shares: one run at a time, played and offered
  // for download as the single-voice mode's, and its history item found the same way.
  var core = window.playgroundCore = {
    el: el, form: form, rate: rate, outputFormat: outputFormat, fmtNumber: fmtNumber, codePoints: codePoints,
    maxChars: function () { return maxChars; }, setStatus: setStatus, showError: showError, playPcm: playPcm,
    finish: finish, received: received, renderCode: renderCode, shellQuote: shellQuote, dialogue: null,
    start: function (extra) {
      if (!ctx) ctx = new (window.AudioContext || window.webkitAudioContext)();
      if (ctx.state === "suspended") ctx.resume();
      var state = run = {
        started: performance.now(), nextStart: 0, carry: null, pcmChunks: [], samples: 0,
        sources: [], finished: false
      };
      Object.keys(extra || {}).forEach(function (k) { state[k] = extra[k]; });
      playBtn.disabled = true;
      stopBtn.disabled = false;
      return state;
    }
  };
  updateCounter();
  renderCode();
  scheduleBilled();
})();
