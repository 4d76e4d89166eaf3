"""The suite reports its peak memory and fails past TTS_TEST_MAX_RSS_MB (tests/conftest.py), naming the
tests that grew it most."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_pytest(bound: str, *options: str) -> subprocess.CompletedProcess[str]:
    """tests/memory_growth_cases.py in a pytest of its own (each such run imports the suite's
    conftest: a few seconds of CPU, so each of the runs below checks all it can)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_")}  # a run of its own
    env["TTS_TEST_MAX_RSS_MB"] = bound
    env.pop("VAR_DIR", None)  # its own throwaway data dir
    env.pop("PYTEST_ADDOPTS", None)
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options, "tests/memory_growth_cases.py"]
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_it_reports_the_peak_and_passes_under_the_bound() -> None:
    result = run_pytest("3072")
    assert result.returncode == 0, result.stdout[-2000:]
    assert "peak RSS: pytest process" in result.stdout and "largest child process" in result.stdout


def test_it_fails_a_green_run_over_the_bound_naming_the_test_that_grew_memory_most() -> None:
    """tests/memory_growth_cases.py keeps 200 MB in one test and holds 300 MB for a moment in another."""
    result = run_pytest("1")
    assert result.returncode == 1, result.stdout[-2000:]
    assert "passed" in result.stdout and "over the bound" in result.stdout
    failed = next(line for line in result.stdout.splitlines() if line.startswith("FAILED peak RSS"))
    held = re.search(r"memory grew most after (\S+) \(\+(\d+) MiB held\)", failed)
    assert held, failed
    assert held[1] == "tests/memory_growth_cases.py::test_it_keeps_200_mb"
    assert 180 <= int(held[2]) <= 260, failed
    peak = re.search(r"the peak rose most in (\S+) \(\+(\d+) MiB\)", failed)
    assert peak, failed
    assert peak[1] == "tests/memory_growth_cases.py::test_it_holds_300_mb_for_a_moment"
    assert 270 <= int(peak[2]) <= 360, failed
    assert "tests that held most more memory after them (VmRSS):" in result.stdout


def test_each_worker_of_a_parallel_run_is_bound_and_named() -> None:
    """make test runs the suite in pytest-xdist workers: each worker's peak is checked and reported by
    the controller, and the failed bound still names the test that grew that worker's memory most."""
    result = run_pytest("1", "-n", "1")
    assert result.returncode == 1, result.stdout[-2000:]
    failed = [line for line in result.stdout.splitlines() if line.startswith("FAILED peak RSS: pytest worker gw0 ")]
    assert len(failed) == 1, result.stdout[-2000:]
    assert "memory grew most after tests/memory_growth_cases.py::test_it_keeps_200_mb" in failed[0]
    assert "passed" in result.stdout and "tests that raised the peak most (VmHWM):" in result.stdout
