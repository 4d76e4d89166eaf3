"use strict";
// The API docs page (Swagger UI): audio answers become a "Download file" link of the bytes already
// received. Swagger UI's own audio player points at the URL instead, and fetching it again carries
// no API key (and uses GET on a POST route), so it gets a 401.
(function () {
  const EXTENSIONS = { mpeg: "mp3", wav: "wav", "x-wav": "wav", ogg: "ogg", flac: "flac", aac: "aac", basic: "ulaw", pcm: "pcm" };

  function asDownload(response) {
    const headers = response && response.headers;
    if (!headers) return response;
    const type = String(headers["content-type"] || "");
    const match = /^audio\/([\w.+-]+)/i.exec(type);
    if (match && !headers["content-disposition"]) {
      const ext = EXTENSIONS[match[1].toLowerCase()] || "audio";
      const item = headers["history-item-id"] ? "-" + headers["history-item-id"] : "";
      headers["content-disposition"] = 'attachment; filename="speech' + item + "." + ext + '"';
    }
    return response;
  }

  if (typeof ui === "undefined") return;
  const configs = ui.getConfigs();
  const previous = configs.responseInterceptor;
  configs.responseInterceptor = function (response, ...rest) {
    const out = previous ? previous(response, ...rest) : response;
    return asDownload(out || response);
  };
})();
