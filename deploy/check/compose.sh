#!/bin/sh
# `make deploy-check`, step 2 (and 4's per-container memory): deploy/compose.yaml up with podman
# (web with two daphne processes, worker, beat, wyoming, PostgreSQL, Redis, redis-cache),
# provisioned, smoked with real clients (deploy/check/smoke.py), the audio cache filled past its
# limit while jobs, quotas and slots go on (deploy/check/cache_full.py), every language spoken once
# while memory is read per container and per process (bench/bench_deploy_memory.py), a noisy
# neighbour beside a quiet tenant in the stack (bench/bench_neighbours.py --url), then torn down with
# its volumes, on failure too. Needs the images (deploy/local/images.sh) and the check's venv
# (run.sh makes both).
set -eu
cd "$(dirname "$0")/../.."
. deploy/local/podman-env.sh
WORK=var/deploy
PY="$WORK/venv/bin/python"
PROJECT="${CHECK_PROJECT:-ttsdeploycheck}"
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
SECRET_KEY="$("$PY" -c 'import secrets; print(secrets.token_urlsafe(50))')"
TTS_PORT="$(free_port)"
WYOMING_PORT="$(free_port)"
export SECRET_KEY TTS_PORT WYOMING_PORT
export POSTGRES_IMAGE=localhost/ttsplatform-postgres:bookworm REDIS_IMAGE=localhost/ttsplatform-redis:bookworm
export TTS_IMAGE=localhost/ttsplatform:cpu
# The Wyoming key's file, which compose mounts as a secret (made once the key exists, removed at the end).
SECRETS="$WORK/secrets"
WYOMING_API_KEY_FILE="$(pwd)/$SECRETS/wyoming_api_key"
export WYOMING_API_KEY_FILE
# Published on this machine's loopback only (the compose default publishes on every address).
export TTS_BIND=127.0.0.1 WYOMING_BIND=127.0.0.1
compose() { "$WORK/venv/bin/podman-compose" --podman-run-args=--pull=never -p "$PROJECT" -f deploy/compose.yaml "$@"; }
container() { podman ps -q --filter "label=io.podman.compose.project=$PROJECT" --filter "label=com.docker.compose.service=$1" | head -1; }

# Everything of the project's, by its label: containers, then volumes and networks (podman-compose's
# down leaves the network, and a run killed earlier left all three).
remove_project() {
  podman ps -aq --filter "label=io.podman.compose.project=$PROJECT" | xargs -r podman rm -f >/dev/null 2>&1 || true
  podman volume ls -q --filter "label=io.podman.compose.project=$PROJECT" | xargs -r podman volume rm -f >/dev/null 2>&1 || true
  podman network ls -q --filter "label=io.podman.compose.project=$PROJECT" | xargs -r podman network rm -f >/dev/null 2>&1 || true
}

down() {
  status=$?
  if [ "$status" != 0 ]; then
    echo "==> compose check failed; the services' last log lines:" >&2
    show_logs "io.podman.compose.project=$PROJECT"
  fi
  echo "==> compose down (containers, network and volumes)"
  compose --profile wyoming down -v -t 10 >"$WORK/compose-down.log" 2>&1 || true
  remove_project  # what podman-compose may leave when a start failed half-way, and the network
  rm -rf "$SECRETS"
  exit "$status"
}
# A killed earlier run's containers, volumes and network go first.
remove_project
trap down EXIT
trap 'exit 130' INT TERM

healthy() {  # healthy SERVICE SECONDS: the compose file's own health check, run until it passes
  deadline=$(( $(date +%s) + $2 ))
  until podman healthcheck run "$(container "$1")" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "$1: its health check did not pass within $2 s" >&2; return 1; }
    sleep 1
  done
}

# The order compose.yaml's depends_on conditions state (service_healthy, service_completed_successfully).
# Debian 12's podman (4.3) has no "healthy" condition and no systemd timer to run health checks, and
# podman-compose's --requires between containers fails on it ("not found in input list"): so each
# stage starts with --no-deps once the one before is healthy, and the health checks are run here.
start=$(date +%s)
echo "==> compose up: postgres, redis, redis-cache; setup; web, worker, beat (web on 127.0.0.1:$TTS_PORT)"
up() { compose up -d --no-deps "$@" >>"$WORK/compose-up.log" 2>&1 || { tail -30 "$WORK/compose-up.log" >&2; exit 1; }; }
: >"$WORK/compose-up.log"
up postgres redis redis-cache
healthy postgres 60
healthy redis 60
healthy redis-cache 60
up setup
code="$(podman wait "$(podman ps -aq --filter "label=io.podman.compose.project=$PROJECT" \
  --filter "label=com.docker.compose.service=setup")")"
[ "$code" = 0 ] || { echo "setup exited with $code" >&2; exit 1; }
up web worker beat
"$PY" deploy/check/wait_http.py "http://127.0.0.1:$TTS_PORT/readyz" --timeout 300
healthy web 30
echo "==> web ready after $(( $(date +%s) - start )) s; provisioning a tenant, a user, an admin and keys"
podman exec -i -e CHECK_NEIGHBOURS=1 "$(container web)" python manage.py shell <deploy/check/provision.py \
  >"$WORK/provision.out"
tail -n 1 "$WORK/provision.out" >"$WORK/credentials.json"
field() {  # a field of the provisioned credentials: a string as it is, anything else as JSON
  "$PY" -c 'import json,sys; v = json.load(open(sys.argv[1]))[sys.argv[2]]; print(v if isinstance(v, str) else json.dumps(v))' \
    "$WORK/credentials.json" "$1"
}
# Wyoming's key as an operator gives it: a file (mode 0444 in a 0700 directory), mounted as a secret.
rm -rf "$SECRETS" && install -d -m 700 "$SECRETS"
field wyoming_key >"$WYOMING_API_KEY_FILE" && chmod 444 "$WYOMING_API_KEY_FILE"
field neighbours >"$WORK/neighbour-keys.json"
compose --profile wyoming up -d --no-deps wyoming >>"$WORK/compose-up.log" 2>&1 || { tail -30 "$WORK/compose-up.log" >&2; exit 1; }
healthy wyoming 180
if podman inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$(container wyoming)" \
    | grep -qF "$(cat "$WYOMING_API_KEY_FILE")"; then
  echo "the Wyoming key is in the container's environment" >&2; exit 1
fi
echo "==> Wyoming speaks with the key from its secret file ($(podman exec "$(container wyoming)" sh -c \
  'echo $TTS_WYOMING_API_KEY_FILE')); not in its environment"
healthy worker 120
healthy beat 30
podman ps --filter "label=io.podman.compose.project=$PROJECT" --format '{{.Names}}  {{.Status}}'

echo "==> smoke (real clients)"
"$PY" deploy/check/smoke.py --base "http://127.0.0.1:$TTS_PORT" --wyoming "127.0.0.1:$WYOMING_PORT" \
  --credentials "$WORK/credentials.json"
echo "==> a full audio cache: redis-cache written past its maxmemory; jobs, quotas and slots go on"
"$PY" deploy/check/cache_full.py --base "http://127.0.0.1:$TTS_PORT" --credentials "$WORK/credentials.json" \
  --cache "$(container redis-cache)" --broker "$(container redis)"
echo "==> memory: every language once, per container and per process"
"$PY" bench/bench_deploy_memory.py --base "http://127.0.0.1:$TTS_PORT" --wyoming "127.0.0.1:$WYOMING_PORT" \
  --credentials "$WORK/credentials.json" --project "$PROJECT" --out "$WORK/memory.md"
# The web container as shipped: a non-root user, no CAP_SYS_NICE in its bounding set (bit 23).
caps="$(podman exec "$(container web)" grep -E '^Cap(Eff|Bnd)' /proc/1/status | tr -s '\t\n' '  ')"
[ $(( 0x$(echo "$caps" | sed 's/.*CapBnd: *\([0-9a-f]*\).*/\1/') >> 23 & 1 )) = 0 ] \
  || { echo "the web container holds CAP_SYS_NICE: $caps" >&2; exit 1; }
echo "==> neighbours in the stack: 3 runs of each flood (joe, Kokoro, Wyoming) beside a quiet tenant on joe;" \
  "web: its pools sized to $(podman exec "$(container web)" python -c \
  'from tts.inference.cpus import available_cpus; print(available_cpus())') CPUs (its limit), $caps"
# A missed target (exit 3) fails make deploy-check at its end (run.sh), once the two hosts have run too.
"$PY" bench/bench_neighbours.py --url "http://127.0.0.1:$TTS_PORT" --keys-from "$WORK/neighbour-keys.json" \
  --wyoming-port "$WYOMING_PORT" --runs 3 --fail-over 2.0 --markdown "$WORK/neighbours.md" \
  || { code=$?; [ "$code" = 3 ] || exit "$code"; touch "$WORK/neighbours.missed"; }
if [ -f "$WORK/neighbours.missed" ]; then
  echo "==> compose check done in $(( $(date +%s) - start )) s; the neighbour target was missed (fails at the end)"
else
  echo "==> compose check passed in $(( $(date +%s) - start )) s"
fi
