/* The playground's dialogue mode: turns (a voice and a text each, rows added and removed) spoken as
 * one synthesis. It posts text-to-dialogue's body to /playground/dialogue/stream, the dashboard
 * session's twin of POST /v1/text-to-dialogue/stream (an API route takes only keys), reads the
 * chunked raw s16le as it arrives and plays it with the single-voice mode's Web Audio path
 * (window.playgroundCore); at the end the page's audio element gets the whole run.
 * window.playgroundStats.dialogue holds what the last run sent, for the browser tests. */
(function () {
  "use strict";
  var core = window.playgroundCore;
  if (!core) return;
  var el = core.el, form = core.form;
  var single = el("pg-mode-single"), dialogue = el("pg-mode-dialogue");
  var turns = el("pg-turns"), template = el("pg-turn-template");
  var modelSelect = el("pg-model"), voiceSelect = el("pg-voice");
  var SAMPLE = ["Is the harbour open today?", "Yes, the boats left at dawn."];

  function active() { return dialogue.checked; }

  // The chosen model's voices (a dialogue is one synthesis on one model), as the voice list offers them.
  function modelVoices() {
    return Array.prototype.filter.call(voiceSelect.options, function (o) { return o.dataset.model === modelSelect.value; });
  }
  function fillVoices(select, wanted) {
    var voices = modelVoices();
    select.textContent = "";
    voices.forEach(function (o) {
      var option = document.createElement("option");
      option.value = o.value;
      option.textContent = o.textContent;
      select.appendChild(option);
    });
    var keep = voices.some(function (o) { return o.value === wanted; });
    if (keep) select.value = wanted;
  }
  function rows() { return Array.prototype.slice.call(turns.querySelectorAll(".pg-turn")); }
  function relabel() {
    var all = rows();
    all.forEach(function (row, i) {
      row.querySelector(".pg-turn-voice").setAttribute("aria-label", "Turn " + (i + 1) + " voice");
      row.querySelector(".pg-turn-text").setAttribute("aria-label", "Turn " + (i + 1) + " text");
      var remove = row.querySelector(".pg-turn-remove");
      remove.setAttribute("aria-label", "Remove turn " + (i + 1));
      remove.disabled = all.length < 2;  // a dialogue has at least one turn
    });
    count();
    core.renderCode();
  }
  function addTurn(text) {
    var row = template.content.firstElementChild.cloneNode(true);
    var voices = modelVoices();
    // Each new turn takes the next voice of the model, so two turns start as two voices.
    var next = voices.length ? voices[rows().length % voices.length].value : "";
    fillVoices(row.querySelector(".pg-turn-voice"), next);
    row.querySelector(".pg-turn-text").value = text || "";
    row.querySelector(".pg-turn-remove").addEventListener("click", function () { row.remove(); relabel(); });
    row.querySelector(".pg-turn-text").addEventListener("input", function () { count(); core.renderCode(); });
    row.querySelector(".pg-turn-voice").addEventListener("change", function () { core.renderCode(); });
    turns.appendChild(row);
    relabel();
    return row;
  }
  el("pg-turn-add").addEventListener("click", function () {
    addTurn("").querySelector(".pg-turn-text").focus();
  });
  modelSelect.addEventListener("change", function () {
    rows().forEach(function (row) {
      var select = row.querySelector(".pg-turn-voice");
      fillVoices(select, select.value);
    });
    core.renderCode();
  });

  function inputs() {
    return rows().map(function (row) {
      return { text: row.querySelector(".pg-turn-text").value.trim(), voice_id: row.querySelector(".pg-turn-voice").value };
    });
  }
  // Characters as the server counts them (code points), all the turns together.
  function count() {
    var n = inputs().reduce(function (sum, t) { return sum + core.codePoints(t.text).length; }, 0);
    el("pg-turns-count-n").textContent = core.fmtNumber(n);
    el("pg-turns-count").classList.toggle("over", n > core.maxChars());
    return n;
  }

  function setMode() {
    var on = active();
    el("pg-dialogue").hidden = !on;
    ["pg-single", "pg-voice-field", "pg-speed-field"].forEach(function (id) { el(id).hidden = on; });
    if (on && !rows().length) SAMPLE.forEach(function (text) { addTurn(text); });
    core.renderCode();
  }
  single.addEventListener("change", setMode);
  dialogue.addEventListener("change", setMode);

  function failure(response) {
    return response.json().then(function (body) {
      var detail = body && body.detail;
      var message = detail && detail.message ? detail.message : "The server refused the dialogue (" + response.status + ").";
      var param = detail && detail.param ? " (" + detail.param + ")" : "";
      throw new Error(message + param);
    }, function () { throw new Error("The server refused the dialogue (" + response.status + ")."); });
  }

  function speak() {
    var body = { inputs: inputs(), model_id: modelSelect.value };
    var blank = body.inputs.findIndex(function (t) { return !t.text; });
    window.playgroundStats.dialogue = body;
    if (!body.inputs.length || blank >= 0) {
      core.showError("Turn " + (blank + 1) + ": type something to speak.");
      if (blank >= 0) rows()[blank].querySelector(".pg-turn-text").focus();
      return;
    }
    window.playgroundStats.sentChars = count();
    var abort = window.AbortController ? new AbortController() : null;
    var state = core.start({ abort: abort, player: true });
    core.setStatus("Synthesizing…");
    var url = form.dataset.dialogueUrl + "?output_format=" + encodeURIComponent(core.outputFormat);
    fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Content-Type": "application/json",
        "X-CSRFToken": form.querySelector("[name=csrfmiddlewaretoken]").value
      },
      body: JSON.stringify(body),
      signal: abort ? abort.signal : undefined
    }).then(function (response) {
      if (!response.ok) return failure(response);
      var reader = response.body.getReader();
      var stats = window.playgroundStats;
      function pump() {
        return reader.read().then(function (part) {
          if (state.finished) return;
          if (part.done) { core.finish(state, "Done"); return; }
          var bytes = part.value;
          stats.bytes += bytes.length;
          stats.chunks += 1;
          if (stats.firstAudioMs === null) {
            stats.firstAudioMs = Math.round(performance.now() - state.started);
            el("pg-ttfa").textContent = stats.firstAudioMs + " ms";
            core.setStatus("Playing…");
          }
          core.playPcm(state, bytes);
          el("pg-bytes").textContent = core.received(stats.bytes, stats.audioSeconds);
          return pump();
        });
      }
      return pump();
    }).catch(function (err) {
      if (state.finished) return;  // stopped: the abort ends the read
      core.showError(err && err.message ? err.message : "The dialogue could not be spoken.");
      core.finish(state);
    });
  }

  // "View code": the same dialogue from the API (the whole file).
  function renderCode() {
    var base = form.dataset.apiBase, model = modelSelect.value, fmt = el("pg-format").value;
    var ext = fmt.split("_")[0] === "opus" ? "ogg" : fmt.split("_")[0];
    var url = base + "/v1/text-to-dialogue?output_format=" + fmt;
    var body = { inputs: inputs(), model_id: model };
    el("code-curl").firstChild.textContent =
      "curl -X POST " + core.shellQuote(url) + " \\\n" +
      "  -H 'xi-api-key: YOUR_API_KEY' \\\n" +
      "  -H 'Content-Type: application/json' \\\n" +
      "  -d " + core.shellQuote(JSON.stringify(body)) + " \\\n" +
      "  -o dialogue." + ext;
    el("code-python").firstChild.textContent =
      "# pip install elevenlabs\n" +
      "from elevenlabs.client import ElevenLabs\n\n" +
      "client = ElevenLabs(api_key=\"YOUR_API_KEY\", base_url=" + JSON.stringify(base) + ")\n" +
      "audio = client.text_to_dialogue.convert(\n" +
      "    inputs=" + JSON.stringify(body.inputs) + ",\n" +
      "    model_id=" + JSON.stringify(model) + ",\n" +
      "    output_format=" + JSON.stringify(fmt) + ",\n" +
      ")\n" +
      "with open(\"dialogue." + ext + "\", \"wb\") as f:\n" +
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

  core.dialogue = { active: active, speak: speak, renderCode: renderCode };
  setMode();
})();
