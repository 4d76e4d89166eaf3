#!/usr/bin/env bash
# System tools some tests drive, from Debian's packages (called by `make test`):
# chromium for the browser tests (never `playwright install`: no browser builds
# are downloaded), docker-compose to validate deploy/compose.yaml (no Docker
# engine is needed for `config`) and npm, which fetches Kokoro's voices.
# Installs only what is missing, only as root.
set -euo pipefail
PIP="${1:-.venv/bin/pip}"
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v docker-compose >/dev/null || docker compose version >/dev/null 2>&1 || missing+=(docker-compose)
# npm fetches Kokoro's voices (kokoro-js, make test's first step after this one).
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
  else
    echo "install_system_deps.sh: missing ${missing[*]} and not root; the tests that need them will skip" >&2
  fi
fi
"$PIP" show -q playwright >/dev/null 2>&1 || "$PIP" install -q "playwright>=1.45"
