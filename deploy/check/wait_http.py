"""Waits until a URL answers 200 (http://...) or a port accepts a connection (tcp://HOST:PORT).

python deploy/check/wait_http.py URL [--timeout SECONDS]
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
import urllib.error
import urllib.request


def ready(url: str) -> bool:
    try:
        if url.startswith("tcp://"):
            host, _, port = url[len("tcp://") :].rpartition(":")
            socket.create_connection((host, int(port)), 2).close()
            return True
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status) == 200
    except (OSError, urllib.error.URLError):
        return False


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        if ready(args.url):
            return 0
        time.sleep(1.0)
    print(f"{args.url} not ready after {args.timeout:.0f} s", file=sys.stderr)
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
