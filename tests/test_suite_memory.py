"""The suite reports its peak memory and fails past TTS_TEST_MAX_RSS_MB (tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_pytest(bound: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TTS_TEST_MAX_RSS_MB": bound}
    env.pop("VAR_DIR", None)  # its own throwaway data dir
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/text/test_segment.py"]
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_it_reports_the_peak_and_passes_under_the_bound() -> None:
    result = run_pytest("3072")
    assert result.returncode == 0, result.stdout[-2000:]
    assert "peak RSS: pytest process" in result.stdout and "largest child process" in result.stdout


def test_it_fails_a_green_run_over_the_bound() -> None:
    result = run_pytest("1")
    assert result.returncode == 1, result.stdout[-2000:]
    assert "passed" in result.stdout and "over the bound" in result.stdout
