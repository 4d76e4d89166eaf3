#!/usr/bin/env bash
# The agent frameworks' clients for tests/agents and bench/bench_agents.py, each apart from the
# platform's own virtualenv: pipecat and LiveKit Agents (tests/agents/requirements.txt, pinned in
# full) in var/agents/py, the Node SDKs (tests/agents/node/package-lock.json) in var/agents/node.
# Idempotent: each part is reinstalled only when its pinned file changed (its sha256 is kept
# beside it), so a second run takes well under a second. Usage: bash tests/agents/install.sh [python]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
HERE="$ROOT/tests/agents"
DEST="${AGENTS_DIR:-$ROOT/var/agents}"
PYTHON="${1:-python3}"
mkdir -p "$DEST"

stamp_of() { cat "$@" | sha256sum | cut -d" " -f1; }

py_stamp="$(stamp_of "$HERE/requirements.txt")"
if [ "$(cat "$DEST/py/.installed" 2>/dev/null)" != "$py_stamp" ]; then
  echo "==> Installing pipecat and LiveKit Agents into $DEST/py (first run: a minute or two)"
  rm -rf "$DEST/py"
  "$PYTHON" -m venv "$DEST/py"
  "$DEST/py/bin/pip" install -q --disable-pip-version-check -r "$HERE/requirements.txt"
  echo "$py_stamp" > "$DEST/py/.installed"
fi

node_stamp="$(stamp_of "$HERE/node/package.json" "$HERE/node/package-lock.json")"
if [ "$(cat "$DEST/node/.installed" 2>/dev/null)" != "$node_stamp" ]; then
  if command -v npm >/dev/null; then
    echo "==> Installing the Node SDKs (openai, @elevenlabs/elevenlabs-js) into $DEST/node"
    rm -rf "$DEST/node"
    mkdir -p "$DEST/node"
    cp "$HERE/node/package.json" "$HERE/node/package-lock.json" "$DEST/node/"
    (cd "$DEST/node" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
    echo "$node_stamp" > "$DEST/node/.installed"
  else
    echo "install.sh: no npm; the Node SDK tests will skip" >&2
  fi
fi
