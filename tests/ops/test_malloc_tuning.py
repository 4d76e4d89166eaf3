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


def test_trimming_gives_free_pages_between_live_blocks_back() -> None:
    # Blocks freed between blocks that stay (what a churning cache leaves) are kept by glibc; malloc_trim
    # returns their pages. Measured in a child process, whose heap is this test's alone.
    script = textwrap.dedent(
        """
        import re
        from infra.malloc_tuning import trim_free_memory, tune_malloc
        tune_malloc(arena_max=1, mmap_threshold=0)
        def rss():
            return int(re.search(r"VmRSS:\\s+(\\d+)", open("/proc/self/status").read()).group(1)) // 1024
        blocks = [bytearray(60_000) for _ in range(4000)]  # 240 MB under the mmap threshold: on the heap
        kept = blocks[::20]  # one in twenty stays, spread over the whole heap
        del blocks
        before = rss()
        assert trim_free_memory()
        print(before, rss(), len(kept))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    before, after, _ = (int(x) for x in out.stdout.split())
    assert after < before - 100, (before, after)


def test_the_trimming_thread_runs_once_per_process() -> None:
    script = textwrap.dedent(
        """
        import threading
        from infra.malloc_tuning import start_trimming
        assert start_trimming(0) is None
        first = start_trimming(0.05)
        assert first is not None and first.daemon and start_trimming(0.05) is first
        print(sum(t.name == "malloc-trim" for t in threading.enumerate()))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"
