#!/bin/sh
# `make deploy-check`: the deployment files built and run as a user runs them, then everything torn
# down. Builds what is missing (the base from Debian's packages, the CPU and GPU images, PostgreSQL
# and Redis images; docs/deploy.md), brings deploy/compose.yaml up with podman and smokes it with
# real clients, fills its audio cache past its limit, measures memory per container with every language
# spoken, runs the noisy-neighbour bench against its web container (3 runs of each flood, target 2.0x),
# runs two hosts in network namespaces sharing one database, Redis and audio store, kills one mid-job
# and mid-stream. Exits non-zero on any failure (a missed neighbour target at the end, once everything
# else has run) and leaves nothing running (each step's trap). Needs root (rootful podman, network
# namespaces). DEPLOY_CHECK_GPU=0 skips building the GPU image.
set -eu
cd "$(dirname "$0")/../.."
WORK=var/deploy
start=$(date +%s)
[ "$(id -u)" = 0 ] || { echo "make deploy-check needs root: rootful podman and network namespaces" >&2; exit 1; }
mkdir -p "$WORK"

missing=""
for tool in podman:podman buildah:buildah runc:runc debootstrap:debootstrap ip:iproute2 nsenter:util-linux; do
  command -v "${tool%%:*}" >/dev/null || missing="$missing ${tool##*:}"
done
if [ -n "$missing" ]; then
  echo "==> installing Debian's$missing"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing >"$WORK/apt.log" 2>&1 || { tail -20 "$WORK/apt.log" >&2; exit 1; }
fi
if [ ! -x "$WORK/venv/bin/python" ] || ! cmp -s deploy/check/requirements.txt "$WORK/venv/requirements.txt"; then
  echo "==> the check's clients into $WORK/venv (deploy/check/requirements.txt)"
  python3 -m venv "$WORK/venv"
  "$WORK/venv/bin/pip" install -q -r deploy/check/requirements.txt
  cp deploy/check/requirements.txt "$WORK/venv/requirements.txt"
fi

# The GPU image's PyTorch comes from PyPI, or from the local wheel indexes this machine's pip uses.
GPU_PIP_EXTRA_INDEX_URL="${GPU_PIP_EXTRA_INDEX_URL:-$(python3 -m pip config get global.extra-index-url 2>/dev/null || true)}"
export GPU_PIP_EXTRA_INDEX_URL
if [ "${DEPLOY_CHECK_GPU:-1}" = 0 ]; then sh deploy/local/images.sh; else sh deploy/local/images.sh --gpu; fi
. deploy/local/podman-env.sh
if podman image exists localhost/ttsplatform:gpu; then
  echo "==> the GPU image starts (no GPU here: CUDA is reported absent, the engine would run on the CPU)"
  podman run --rm --pull=never --no-healthcheck localhost/ttsplatform:gpu python -c \
    "import torch; print('torch', torch.__version__, 'CUDA build', torch.version.cuda, 'GPU present:', torch.cuda.is_available())"
fi

rm -f "$WORK/neighbours.missed"
sh deploy/check/compose.sh
sh deploy/check/two_hosts.sh

left="$(podman ps -aq --filter label=ttsck=1; podman ps -aq --filter label=io.podman.compose.project=ttsdeploycheck)"
[ -z "$left" ] || { echo "containers left running: $left" >&2; exit 1; }
left="$(podman volume ls -q --filter label=io.podman.compose.project=ttsdeploycheck; \
  podman network ls -q --filter label=io.podman.compose.project=ttsdeploycheck)"
[ -z "$left" ] || { echo "volumes or networks left: $left" >&2; exit 1; }
! ip netns list | grep -q '^ttsck-' || { echo "network namespaces left: $(ip netns list | grep '^ttsck-')" >&2; exit 1; }
podman image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E 'ttsplatform|debian-python'
if [ -f "$WORK/neighbours.missed" ]; then
  echo "==> make deploy-check FAILED after $(( $(date +%s) - start )) s: the quiet tenant's p95 under a flood" \
    "passed 2.0x its p95 alone, or a 5xx ($WORK/neighbours.md); nothing left running" >&2
  exit 1
fi
echo "==> make deploy-check passed in $(( $(date +%s) - start )) s; nothing left running"
