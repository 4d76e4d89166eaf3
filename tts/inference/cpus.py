"""How many CPUs this process may use: the one figure every pool sizes itself by.

``os.cpu_count()`` is the host's count. In a container limited to 2 CPUs on a
64-core node it says 64, and each engine would then run 64 syntheses at once
(each with its activations), the scheduler start 128 workers and ``make
serve`` 64 web processes: the memory of a machine many times the size the
limit pays for, and no more speed. ``available_cpus`` is the affinity mask
(``taskset``, cpusets) capped by the cgroup's CPU quota (v2 ``cpu.max``, v1
``cpu.cfs_quota_us``), rounded up; ``TTS_CPUS`` overrides both.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP_V2_MAX = "/sys/fs/cgroup/cpu.max"
CGROUP_V1_DIR = "/sys/fs/cgroup/cpu"


def available_cpus() -> int:
    """``TTS_CPUS`` if set (a whole number >= 1), else the CPUs this process may run on, capped by its quota."""
    raw = os.environ.get("TTS_CPUS", "").strip()
    if raw:
        try:
            value = int(raw)
        except ValueError:
            raise ValueError(f"TTS_CPUS={raw!r} is not a whole number") from None
        if value < 1:
            raise ValueError(f"TTS_CPUS={raw!r}: at least 1")
        return value
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cpus = os.cpu_count() or 1
    quota = cgroup_cpu_quota()
    return max(1, min(cpus, quota) if quota else cpus)


def cgroup_cpu_quota(v2_path: str = CGROUP_V2_MAX, v1_dir: str = CGROUP_V1_DIR) -> int | None:
    """A container's CPU limit, rounded up; ``None`` when unlimited or unknown (cgroup v2, else v1)."""
    try:
        quota, period = Path(v2_path).read_text(encoding="ascii").split()[:2]
    except (OSError, ValueError):
        try:
            quota = Path(v1_dir, "cpu.cfs_quota_us").read_text(encoding="ascii").strip()
            period = Path(v1_dir, "cpu.cfs_period_us").read_text(encoding="ascii").strip()
        except OSError:
            return None
    if quota == "max" or quota.startswith("-"):
        return None
    try:
        return max(1, math.ceil(int(quota) / int(period)))
    except (ValueError, ZeroDivisionError):
        return None
