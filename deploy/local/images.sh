#!/bin/sh
# Builds, with podman, what is missing of: the base (base.sh), ttsplatform:cpu, PostgreSQL and Redis
# from Debian's packages (for compose.yaml without a registry), and with --gpu
# ttsplatform:gpu. An image is rebuilt when what it copies changed (a hash of those files is kept
# beside its id). Build caches and logs go to var/deploy (git ignores var/).
#   sh deploy/local/images.sh [--gpu]
set -eu
cd "$(dirname "$0")/../.."
WORK=var/deploy
mkdir -p "$WORK"
. deploy/local/podman-env.sh
BASE="${BASE_IMAGE:-localhost/debian-python:3.11-bookworm}"
BASE_IMAGE="$BASE" sh deploy/local/base.sh "$WORK"

source_hash() {  # what the Dockerfile copies, as git sees it now (committed or not)
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --exclude=__pycache__ --exclude='*.pyc' \
    -cf - "$1" pyproject.toml manage.py deploy/bootstrap.sh accounts infra tts ttsplatform templates static \
    | sha256sum | cut -c1-16
}

build() {  # build TAG DOCKERFILE [extra podman build args...]
  # The hash of what the image copies is kept beside the image's id in var/deploy (a --label would
  # change every layer's cache key, the slow apt and pip layers included).
  tag="$1"; file="$2"; shift 2
  want="$(source_hash "$file")"
  stamp="$WORK/image-${tag#*:}.source"
  id="$(podman image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)"
  if [ -n "$id" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want $id" ]; then
    echo "==> $tag is up to date ($want)"
    return 0
  fi
  echo "==> building $tag from $file (log: $WORK/build-${tag#*:}.log)"
  start=$(date +%s)
  if ! podman build --format docker --pull=never -f "$file" --build-arg PYTHON_IMAGE="$BASE" -t "$tag" "$@" . \
      >"$WORK/build-${tag#*:}.log" 2>&1; then
    tail -30 "$WORK/build-${tag#*:}.log" >&2
    echo "building $tag failed (whole log: $WORK/build-${tag#*:}.log)" >&2
    exit 1
  fi
  echo "$want $(podman image inspect --format '{{.Id}}' "$tag")" >"$stamp"
  echo "==> built $tag in $(( $(date +%s) - start )) s"
  # The build stage's layers are left in place (untagged): they are the cache that lets a code change
  # rebuild in minutes. `podman image prune` frees them (a few GB).
}

build localhost/ttsplatform:cpu deploy/Dockerfile.cpu
# Stand-ins for the official postgres and redis images compose.yaml names (POSTGRES_IMAGE, REDIS_IMAGE).
for service in postgres redis; do
  tag="localhost/ttsplatform-$service:bookworm"
  if podman image exists "$tag"; then
    echo "==> $tag exists"
  else
    echo "==> building $tag"
    podman build --pull=never -f "deploy/local/Containerfile.$service" --build-arg BASE_IMAGE="$BASE" -t "$tag" . \
      >"$WORK/build-$service.log" 2>&1 || { tail -20 "$WORK/build-$service.log" >&2; exit 1; }
  fi
done
if [ "${1:-}" = "--gpu" ]; then
  # PyTorch's CUDA wheels: from PyPI, or from local wheel indexes (GPU_PIP_EXTRA_INDEX_URL, file:// URLs
  # whose directory's parent, where the index's pages link its files, is mounted read-only at the same path).
  set --
  for url in ${GPU_PIP_EXTRA_INDEX_URL:-}; do
    dir="${url#file://}"
    [ "$dir" != "$url" ] && [ -d "$dir" ] && set -- "$@" -v "$(dirname "$dir"):$(dirname "$dir"):ro"
  done
  build localhost/ttsplatform:gpu deploy/Dockerfile.gpu --build-arg PIP_EXTRA_INDEX_URL="${GPU_PIP_EXTRA_INDEX_URL:-}" \
    --build-arg TORCH_SPEC="${TORCH_SPEC:-torch==2.14.1}" "$@"
fi
podman image ls --filter reference='localhost/ttsplatform*' --filter reference="$BASE"
