#!/usr/bin/env bash
# Browser tests need Debian's chromium and the playwright package (never
# `playwright install`: no browser builds are downloaded). Called by `make test`.
set -euo pipefail
PIP="${1:-.venv/bin/pip}"
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null
  else
    echo "install_chromium.sh: /usr/bin/chromium is missing and I am not root; browser tests will skip" >&2
  fi
fi
"$PIP" show -q playwright >/dev/null 2>&1 || "$PIP" install -q "playwright>=1.45"
