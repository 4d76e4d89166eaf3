"""One engine-seconds ledger for every process of a host: web, Wyoming, Celery workers.

Each process's engines share its cores with the other processes' engines on
the same host, so fairness kept per process lets a Wyoming listener's tenant
flooding its own process take the CPU from HTTP tenants in the web process
(and the reverse). With ``REDIS_URL`` set (and ``TTS_ENGINE_HOST_SHARE``), a
thread in every process that runs engines publishes, every
``TTS_ENGINE_HOST_SHARE_INTERVAL_MS``, its tenants' decaying engine-seconds
and the tenants it runs now into one Redis hash per machine (field: the
process's hostname and id), and reads the others' back into ``engine_share.merge_remote``: a tenant's
usage is then the host's, and a run of a cheaper tenant in another process
demotes this process's runs of dearer tenants as a local run would.

"Host" means the machine whose cores the processes share, not a container: its name is
``TTS_ENGINE_SHARE_HOST`` (the K8s manifests give it the node's name through the downward API;
compose gives every service one name), else the hostname, which is per container. The hash lives
under ``TTS_REDIS_KEY_PREFIX`` like every other key of the deployment.

Why Redis and not shared memory: every process that runs engines already
talks to it (cache, channel layer, broker), its hash with a short expiry
forgets a process that died without cleaning up, and a field per process
needs no lock between processes; one round trip (well under a millisecond) per
interval per process is the whole cost. What is shared is a hint, never a
gate: when Redis does not answer, each process goes on sharing its own
engine time fairly and no request waits for Redis. Without ``REDIS_URL`` (one
process, ``make run``) there is nothing to share.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Hashable
from typing import Any

from django.conf import settings

from tts.inference.engine_share import EngineShare, engine_share

logger = logging.getLogger(__name__)

#: Another process's entry older than this is ignored (it stopped, or its thread is stuck).
STALE_S = 2.0

_started_in: int | None = None
_lock = threading.Lock()


def host_name() -> str:
    """The machine whose cores this process shares: ``TTS_ENGINE_SHARE_HOST`` (the node's name in the
    shipped K8s files, one shared name in compose), else this container's or machine's hostname."""
    return settings.TTS_ENGINE_SHARE_HOST or socket.gethostname()


def host_share_key() -> str:
    """The Redis hash of this machine's ledger, under the deployment's key prefix."""
    return f"{settings.TTS_REDIS_KEY_PREFIX}:engine-share:{host_name()}"


def process_member() -> str:
    """This process's field in the hash: its hostname and pid (containers of one node may share a pid)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _tenant_key(raw: str) -> Hashable:
    # Tenants are keyed by primary key (an int) in the ledger; JSON object keys are strings.
    return int(raw) if raw.lstrip("-").isdigit() else raw


def start_host_share() -> bool:
    """Start this process's publishing thread (once per process); False when there is nothing to share."""
    global _started_in
    if not (settings.REDIS_URL and settings.TTS_ENGINE_HOST_SHARE):
        return False
    with _lock:
        if _started_in == os.getpid():
            return True
        _started_in = os.getpid()
    interval = settings.TTS_ENGINE_HOST_SHARE_INTERVAL_MS / 1000
    thread = threading.Thread(
        target=_publish_forever,
        args=(settings.REDIS_URL, host_share_key(), interval, engine_share),
        name="tts-engine-host-share",
        daemon=True,
    )
    thread.start()
    return True


def exchange(client: Any, key: str, member: str, share: EngineShare, *, now: float | None = None) -> int:
    """Publish ``share``'s own usage and running tenants under ``member``, merge the others'; how many merged."""
    now = time.time() if now is None else now
    mine = {
        "t": now,
        "u": {str(k): round(v, 4) for k, v in share.local_usage().items()},
        "r": [str(k) for k in share.running_keys()],
    }
    pipe = client.pipeline(transaction=False)
    pipe.hset(key, member, json.dumps(mine))
    pipe.expire(key, 30)
    pipe.hgetall(key)
    _, _, entries = pipe.execute()
    usage: dict[Hashable, float] = {}
    running: set[Hashable] = set()
    stale: list[Any] = []
    merged = 0
    for field, raw in entries.items():
        name = field.decode() if isinstance(field, bytes) else str(field)
        if name == member:
            continue
        try:
            entry = json.loads(raw)
            if now - float(entry["t"]) > STALE_S:
                stale.append(field)
                continue
            for tenant, value in entry["u"].items():
                usage[_tenant_key(tenant)] = usage.get(_tenant_key(tenant), 0.0) + float(value)
            running.update(_tenant_key(t) for t in entry["r"])
            merged += 1
        except (ValueError, KeyError, TypeError):
            stale.append(field)
    if stale:
        client.hdel(key, *stale)
    share.merge_remote(usage, running)
    return merged


def _publish_forever(url: str, key: str, interval: float, share: EngineShare) -> None:
    import redis

    client = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
    member = process_member()
    failing = False
    while True:
        try:
            exchange(client, key, member, share)
            if failing:
                logger.info("engine host share: Redis answers again")
            failing = False
        except Exception as exc:  # a hint only: never stop, never fail a request
            if not failing:
                logger.warning("engine host share: Redis did not answer (%s); sharing per process meanwhile", exc)
            failing = True
            share.merge_remote({}, set())
        time.sleep(interval)
