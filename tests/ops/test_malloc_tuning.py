"""Server processes bound glibc's malloc arenas (infra/malloc_tuning.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from infra.malloc_tuning import tune_malloc


def test_it_applies_the_limits_on_glibc() -> None:
    assert tune_malloc(arena_max=2, mmap_threshold=0) is True
    assert tune_malloc(arena_max=0, mmap_threshold=0) is True  # nothing asked, nothing refused


def test_threads_share_the_bounded_arenas() -> None:
    # Eight threads allocating at once: without a bound glibc makes an arena for each that
    # finds the others busy; with arena_max=2 there are at most two besides the main one.
    # 200 rounds each make all eight arenas as 2,000 did (8 against 1 here), in a tenth of the time.
    script = textwrap.dedent(
        """
        import sys, threading
        from infra.malloc_tuning import tune_malloc
        if sys.argv[1] == "bounded":
            assert tune_malloc(arena_max=2, mmap_threshold=0)
        start = threading.Barrier(8)
        def work():
            start.wait()
            for _ in range(200):
                blocks = [bytearray(4096) for _ in range(64)]
                del blocks
        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads: t.start()
        for t in threads: t.join()
        arenas = 0
        with open("/proc/self/maps") as maps:
            for line in maps:
                start_, end = (int(x, 16) for x in line.split()[0].split("-"))
                # Thread arenas are 64 MiB-aligned reservations of anonymous memory.
                if start_ % (64 << 20) == 0 and len(line.split()) == 5 and end - start_ <= 64 << 20:
                    arenas += 1
        print(arenas)
        """
    )
    counts = {}
    for mode in ("default", "bounded"):
        out = subprocess.run([sys.executable, "-c", script, mode], capture_output=True, text=True, check=True)
        counts[mode] = int(out.stdout.strip())
    assert counts["bounded"] <= 2 < counts["default"], counts
