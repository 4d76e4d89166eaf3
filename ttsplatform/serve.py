"""The production web tier: several daphne processes serving one port.

``python -m ttsplatform.serve [--host H] [--port P] [--processes N] [-- daphne options]``

The supervisor binds one listening socket per process, all on the same port
with ``SO_REUSEPORT`` (Linux), and starts ``N`` daphne processes, each
accepting on its own (``daphne --fd``): the kernel spreads new connections over
the sockets by their addresses, so HTTP, streams and WebSockets are served by
every process, each with its own model lifecycle thread (started by
``ttsplatform.asgi`` in each). One socket shared by all the processes
(``--shared-socket``, and where ``SO_REUSEPORT`` is missing) balances badly:
Twisted accepts every pending connection when it wakes, so a burst of
keep-alive connections (a load balancer's pool, ``wrk -c8``) all went to one
process and stayed there (bench/bench_cache.py: 2 processes served no more
than 1). A socket's connections wait in its queue while its process restarts.
``N`` defaults to ``WEB_PROCESSES`` or, unset,
the number of CPUs this process may run on (its affinity, capped by a
container's CPU limit): Python-bound work (cache hits, authentication,
history writes) then uses every core.

A process that dies is started again (after a short pause; the supervisor
gives up if they keep dying at once). SIGTERM or SIGINT stops them all
gracefully: each gets SIGTERM and up to ``--grace`` seconds to finish its
requests before SIGKILL. Nothing here imports Django. The web processes never
read a checkout's development settings (``DEV_SETTINGS=off``,
``ttsplatform/dev_settings.py``): production needs ``SECRET_KEY``.

daphne runs without ``--proxy-headers``: that flag replaces the socket's peer
with the leftmost ``X-Forwarded-For`` entry, which any client can write. The
client's address is derived by the application instead, trusting only the
hops ``TRUSTED_PROXIES`` names (``infra.client_address``); passing the flag
after ``--`` still works, with a warning.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from tts.inference.cpus import available_cpus

logger = logging.getLogger("ttsplatform.serve")

APPLICATION = "ttsplatform.asgi:application"
# daphne's flag that trusts the leftmost X-Forwarded-For: off by default (infra/client_address.py).
PROXY_HEADERS = "--proxy-headers"
# A process that dies this soon after its start counts as failing to start.
EARLY_DEATH_S = 10.0
MAX_EARLY_DEATHS = 5


def default_processes() -> int:
    """``WEB_PROCESSES`` if set, else the CPUs this process may use (affinity and cgroup quota)."""
    configured = os.environ.get("WEB_PROCESSES", "").strip()
    if configured:
        return max(1, int(configured))
    return available_cpus()


def bind(host: str, port: int, backlog: int = 2048, *, reuse_port: bool = False) -> socket.socket:
    """A listening socket processes accept on (inheritable, so children can adopt it)."""
    if ":" in host:
        raise SystemExit("serve: IPv4 addresses only (daphne adopts the socket as AF_INET); put a proxy in front")
    sock = socket.create_server((host, port), backlog=backlog, reuse_port=reuse_port)
    sock.set_inheritable(True)
    return sock


def bind_all(host: str, port: int, processes: int, *, shared: bool = False) -> list[socket.socket]:
    """One socket per process on ``port`` (``SO_REUSEPORT``), or one for all (``shared``, or no ``SO_REUSEPORT``)."""
    if shared or processes == 1 or not hasattr(socket, "SO_REUSEPORT"):
        return [bind(host, port)]
    first = bind(host, port, reuse_port=True)
    # Port 0: the others join the port the kernel chose for the first.
    return [first] + [bind(host, first.getsockname()[1], reuse_port=True) for _ in range(processes - 1)]


@dataclass
class Supervisor:
    #: One listening socket per process (slot ``i`` accepts on ``sockets[i]``), or one they all share.
    sockets: list[socket.socket]
    processes: int
    daphne_args: list[str] = field(default_factory=list)
    grace: float = 30.0
    children: dict[int, tuple[subprocess.Popen[bytes], float]] = field(default_factory=dict)
    stopping: bool = False

    def socket_for(self, slot: int) -> socket.socket:
        return self.sockets[slot % len(self.sockets)]

    def command(self, slot: int = 0) -> list[str]:
        fd = self.socket_for(slot).fileno()
        return [sys.executable, "-m", "daphne", "--fd", str(fd), *self.daphne_args, APPLICATION]

    def child_env(self, slot: int) -> dict[str, str]:
        """A web process's environment: this one's, its slot, never a checkout's development settings,
        and its share of the CPUs (``TTS_CPUS``, unless set): each process sizes its engines' pools to
        its share, not to every CPU the container has, so the processes together run one engine call
        per CPU, each on one ONNX Runtime thread, whose CPU the fair-share ledger charges in full
        (bench/bench_engine_charge.py)."""
        env = dict(os.environ, WEB_PROCESS_INDEX=str(slot), DEV_SETTINGS="off")
        if not env.get("TTS_CPUS"):
            env["TTS_CPUS"] = str(max(1, available_cpus() // max(1, self.processes)))
        return env

    def start_one(self, slot: int) -> None:
        env = self.child_env(slot)
        child = subprocess.Popen(self.command(slot), pass_fds=(self.socket_for(slot).fileno(),), env=env)
        self.children[slot] = (child, time.monotonic())
        logger.info("web process %d started (pid %d)", slot, child.pid)

    def stop(self, *_: object) -> None:
        self.stopping = True

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self.stop)
        signal.signal(signal.SIGINT, self.stop)
        for slot in range(self.processes):
            self.start_one(slot)
        early_deaths = 0
        status = 0
        while not self.stopping:
            time.sleep(0.2)
            for slot, (child, started) in list(self.children.items()):
                code = child.poll()
                if code is None or self.stopping:
                    continue
                early_deaths = early_deaths + 1 if time.monotonic() - started < EARLY_DEATH_S else 0
                logger.warning("web process %d (pid %d) exited with %s", slot, child.pid, code)
                if early_deaths >= MAX_EARLY_DEATHS:
                    logger.error("web processes keep dying at start; giving up")
                    self.stopping, status = True, 1
                    break
                time.sleep(min(5.0, 0.5 * early_deaths))
                self.start_one(slot)
        self.shutdown()
        return status

    def shutdown(self) -> None:
        for child, _ in self.children.values():
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        for child, _ in self.children.values():
            try:
                child.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        for sock in self.sockets:
            sock.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ttsplatform.serve", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default=os.environ.get("HOST", "0.0.0.0"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--processes", type=int, default=None, help="default: WEB_PROCESSES, else the CPUs")
    parser.add_argument("--grace", type=float, default=30.0, help="seconds a process gets to finish on stop")
    parser.add_argument(
        "--shared-socket",
        action="store_true",
        help="one listening socket for all processes instead of one each (SO_REUSEPORT)",
    )
    parser.add_argument("daphne_args", nargs="*", help="after --: passed to every daphne (e.g. --verbosity 2)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    if PROXY_HEADERS in args.daphne_args:
        logger.warning(
            "%s makes daphne take the client's address from the leftmost X-Forwarded-For entry, which "
            "the client writes itself; leave it off and set TRUSTED_PROXIES (docs/operations.md)",
            PROXY_HEADERS,
        )
    processes = args.processes or default_processes()
    sockets = bind_all(args.host, args.port, processes, shared=args.shared_socket)
    logger.info(
        "serving http://%s:%d with %d web processes (%s)",
        args.host,
        args.port,
        processes,
        "one socket each" if len(sockets) > 1 else "one socket",
    )
    if processes > 1 and not os.environ.get("REDIS_URL"):
        # Without Redis each process keeps its own rate limits, stream slots, caches and job events.
        logger.warning("no REDIS_URL: limits, caches and job progress events are per process")
    return Supervisor(sockets, processes, list(args.daphne_args), args.grace).run()


if __name__ == "__main__":
    sys.exit(main())
