# Sourced by the deploy/local and deploy/check scripts: podman settings this kind of machine needs, kept in
# var/deploy/containers.conf (the machine's own /etc/containers stays as it is).
# - runc, not crun: crun refuses a hybrid cgroup tree with a controller on cgroup v2
#   ("cgroups in hybrid mode not supported, drop all controllers from cgroupv2");
# - rlimits no higher than this shell's: podman's defaults (nofile 1048576) fail with
#   "setrlimit `RLIMIT_NOFILE`: Operation not permitted" where the hard limit is lower.
mkdir -p var/deploy
printf '[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=4096:4096"]\n\n[engine]\nruntime = "runc"\n' \
  "$(ulimit -Hn)" "$(ulimit -Hn)" >var/deploy/containers.conf
CONTAINERS_CONF="$(pwd)/var/deploy/containers.conf"
export CONTAINERS_CONF

# The last log lines of each container with this label (a failed check shows them).
show_logs() {
  for c in $(podman ps -aq --filter "label=$1"); do
    echo "--- $(podman inspect --format '{{.Name}}' "$c")" >&2
    podman logs --tail 15 "$c" >&2 2>&1 || true
  done
}
