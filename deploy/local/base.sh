#!/bin/sh
# The base image built from Debian's packages, for machines that reach Debian's mirror but no image
# registry: debootstrap (minbase) of bookworm with Python 3.11 and its venv module, imported into
# podman as localhost/debian-python:3.11-bookworm. It stands in for python:3.11-slim-bookworm (the
# Dockerfiles' default PYTHON_IMAGE): `python` on PATH, no compiler, apt kept for the stages that
# add packages. The CAs this machine adds to its own trust store (/usr/local/share/ca-certificates)
# are trusted inside too, so pip and npm reach their registries the way the host does.
#   sh deploy/local/base.sh [WORK_DIR]      (default var/deploy; idempotent, skips an existing image)
set -eu
IMAGE="${BASE_IMAGE:-localhost/debian-python:3.11-bookworm}"
WORK="${1:-var/deploy}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
if podman image exists "$IMAGE"; then
  echo "==> base image $IMAGE exists"
  exit 0
fi
command -v debootstrap >/dev/null || { echo "debootstrap is missing (apt-get install debootstrap)" >&2; exit 1; }
mkdir -p "$WORK"
root="$WORK/rootfs-base"
rm -rf "$root"
echo "==> debootstrap bookworm into $root (a few minutes)"
debootstrap --variant=minbase --include=python3,python3-venv,python-is-python3,ca-certificates,netbase \
  bookworm "$root" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 || { tail -20 "$WORK/debootstrap.log" >&2; exit 1; }
if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  chroot "$root" update-ca-certificates >/dev/null
fi
# What python:3.11-slim leaves out too: apt's lists and caches, docs, man pages, locales but C.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
  "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/var/log/*.log
find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name 'locale.alias' -exec rm -rf {} +
echo "==> podman import $IMAGE"
tar -C "$root" --numeric-owner -c . | podman import \
  --change 'CMD ["python3"]' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
  --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
  --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
  - "$IMAGE" >/dev/null
rm -rf "$root"
podman image ls "$IMAGE"
