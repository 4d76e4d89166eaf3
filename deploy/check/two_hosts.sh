#!/bin/sh
# `make deploy-check`, step 3: two hosts sharing one PostgreSQL, one Redis and one audio store.
#
# Network namespaces made (and removed, on failure too) here: ttsck-db (PostgreSQL, Redis, beat and
# the one-shot setup: the "services" machine), ttsck-h1 and ttsck-h2 (each a web container, one
# daphne, and a Celery worker), ttsck-cl (the clients). Each has its own loopback and one veth into
# the bridge ttsck-br of ttsck-sw, on 10.234.34.0/24; the machine's own network namespace is not
# touched. Every container runs from ttsplatform:cpu (PostgreSQL and Redis from their local images)
# with --network ns:/run/netns/..., so the hosts share nothing but the network, the database, Redis
# and two shared directories, mounted in every container as NFS would be: the audio store and the
# model files (var/deploy/two-hosts/{audio,models}). deploy/check/two_hosts.py then drives them with
# real clients from ttsck-cl, and kills host 1 mid-job and mid-stream.
set -eu
cd "$(dirname "$0")/../.."
. deploy/local/podman-env.sh
WORK=var/deploy
PY="$(pwd)/$WORK/venv/bin/python"
NS=ttsck
NET=10.234.34
DATA="$(pwd)/$WORK/two-hosts"
IMAGE=localhost/ttsplatform:cpu

cleanup() {
  status=$?
  if [ "$status" != 0 ]; then
    echo "==> two-host check failed; the containers' last log lines:" >&2
    show_logs ttsck=1
  fi
  podman ps -aq --filter "label=ttsck=1" | xargs -r podman rm -f -t 2 >/dev/null 2>&1 || true
  for n in cl h1 h2 db sw; do ip netns del "$NS-$n" 2>/dev/null || true; done
  rm -rf "$DATA"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for n in cl h1 h2 db sw; do ip netns del "$NS-$n" 2>/dev/null || true; done
podman ps -aq --filter "label=ttsck=1" | xargs -r podman rm -f >/dev/null 2>&1 || true
rm -rf "$DATA"
mkdir -p "$DATA/audio" "$DATA/models"
chown 10001:10001 "$DATA/audio" "$DATA/models"

echo "==> network: ttsck-sw (bridge) + db, h1, h2, cl on $NET.0/24"
ip netns add "$NS-sw"
ip -n "$NS-sw" link add "$NS-br" type bridge
ip -n "$NS-sw" link set "$NS-br" up
ip -n "$NS-sw" link set lo up
for pair in db:1 h1:11 h2:12 cl:100; do
  n="${pair%%:*}"; last="${pair##*:}"
  ip netns add "$NS-$n"
  ip -n "$NS-sw" link add "p-$n" type veth peer name eth0 netns "$NS-$n"
  ip -n "$NS-sw" link set "p-$n" master "$NS-br" up
  ip -n "$NS-$n" addr add "$NET.$last/24" dev eth0
  ip -n "$NS-$n" link set eth0 up
  ip -n "$NS-$n" link set lo up
done

SECRET_KEY="$("$PY" -c 'import secrets; print(secrets.token_urlsafe(50))')"
env_file="$DATA/app.env"
cat >"$env_file" <<EOF
SECRET_KEY=$SECRET_KEY
DATABASE_URL=postgres://tts:tts@$NET.1:5432/tts
REDIS_URL=redis://$NET.1:6379/0
ALLOWED_HOSTS=*
LOG_FORMAT=json
TTS_ENGINE_THREADS=1
TTS_MODEL_POLL_SECONDS=2
TTS_JOB_CHUNK_CHARS=300
TTS_JOB_STALE_AFTER_S=10
TTS_RECORD_HEARTBEAT_S=2
TTS_RECORD_STALE_AFTER_S=10
EOF
app() {  # app NAME NETNS [podman run args...] -- COMMAND...
  name="$1"; netns="$2"; shift 2
  podman run -d --pull=never --no-healthcheck --name "$NS-$name" --label ttsck=1 --network "ns:/run/netns/$NS-$netns" \
    --env-file "$env_file" -v "$DATA/audio:/var/lib/tts/media" -v "$DATA/models:/var/lib/tts/models" "$@" >/dev/null
}

echo "==> services host: PostgreSQL, Redis"
podman run -d --pull=never --no-healthcheck --name "$NS-postgres" --label ttsck=1 --network "ns:/run/netns/$NS-db" \
  -e POSTGRES_USER=tts -e POSTGRES_PASSWORD=tts -e POSTGRES_DB=tts localhost/ttsplatform-postgres:bookworm >/dev/null
podman run -d --pull=never --no-healthcheck --name "$NS-redis" --label ttsck=1 --network "ns:/run/netns/$NS-db" \
  localhost/ttsplatform-redis:bookworm redis-server --protected-mode no --save "" --appendonly no >/dev/null
for _ in $(seq 60); do podman exec "$NS-postgres" pg_isready -q -h 127.0.0.1 -U tts -d tts && break; sleep 1; done
echo "==> setup (migrations, voices), then beat on the services host"
# The shared model directory starts with the image's (Kokoro's assembled graph), as compose's volume does.
podman run --rm --pull=never --no-healthcheck --label ttsck=1 --network none -v "$DATA/models:/mnt" "$IMAGE" \
  sh -c 'cp -a /var/lib/tts/models/. /mnt/'
podman run --rm --pull=never --no-healthcheck --label ttsck=1 --network "ns:/run/netns/$NS-db" --env-file "$env_file" \
  -v "$DATA/audio:/var/lib/tts/media" -v "$DATA/models:/var/lib/tts/models" \
  "$IMAGE" sh deploy/bootstrap.sh >"$WORK/two-hosts-setup.log" 2>&1 || { tail -20 "$WORK/two-hosts-setup.log" >&2; exit 1; }
app beat db "$IMAGE" celery -A ttsplatform beat --loglevel INFO --schedule /tmp/celerybeat-schedule
echo "==> hosts 1 and 2: web (one daphne on :8000) and a Celery worker each (host 2's starts later)"
for h in h1 h2; do
  app "$h-web" "$h" "$IMAGE" python -m ttsplatform.serve --port 8000 --processes 1
done
app h1-worker h1 "$IMAGE" celery -A ttsplatform worker -P solo --loglevel INFO -n worker@h1
podman create --pull=never --no-healthcheck --name "$NS-h2-worker" --label ttsck=1 --network "ns:/run/netns/$NS-h2" \
  --env-file "$env_file" -v "$DATA/audio:/var/lib/tts/media" -v "$DATA/models:/var/lib/tts/models" "$IMAGE" \
  celery -A ttsplatform worker -P solo --loglevel INFO -n worker@h2 >/dev/null
for h in 11 12; do
  nsenter --net="/run/netns/$NS-cl" "$PY" deploy/check/wait_http.py "http://$NET.$h:8000/readyz" --timeout 300
done
podman exec -i "$NS-h1-web" python manage.py shell <deploy/check/provision.py >"$DATA/provision.out"
tail -n 1 "$DATA/provision.out" >"$DATA/credentials.json"

echo "==> the checks, from the client host"
nsenter --net="/run/netns/$NS-cl" "$PY" deploy/check/two_hosts.py --net "$NET" --prefix "$NS" \
  --credentials "$DATA/credentials.json" --out "$WORK/two-hosts.md"
