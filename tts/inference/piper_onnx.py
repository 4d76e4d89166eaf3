"""ONNX Runtime engine for Piper voices: the CPU default (CUDA provider if present).

A voice imported by this platform comes with its graph split in three
(``onnx_split``: encoder, flow, decoder; ``ModelSpec.options["windowed"]``,
hash-checked here before use). The engine then synthesizes a sentence in two
steps, like the PyTorch engine:

1. the **encoder** (text encoder, durations, the sampled prior) once per
   sentence;
2. the **flow and decoder** over overlapping windows of the prior, each
   widened by their measured receptive fields, so the audio kept from each
   window is what decoding the whole sentence gives. A stream's first window
   is small (``window_frames``, 16 latent frames: about 0.19 s of joe's
   audio), so its first audio comes after a fraction of the sentence's work.

Every ONNX run goes through one ``WorkPool`` per engine: one worker per core
at ``TTS_ENGINE_THREADS`` (default 1) intra-op threads each. A sentence's
windows are queued together, so a request alone spreads them over every core,
and concurrent requests share the same workers side by side; nothing to tune.
Three priorities (``tts.inference.pacing``): a stream's encoder runs and
windows while it is within the lead margin of playback (the listener waits)
first, then whole-file work, then streams comfortably ahead (and, for a
stream without a pace, its later windows). A whole-file
request (``synthesize_ids``) cuts the sentence into as many equal windows as
there are workers free for it (one window, no overlap, when the engine is
busy with work as urgent; workers decoding streams' later windows count as
free: they come to it next).

A model without parts (an older import, a graph that cannot be split) runs
whole, one sentence per pool task, as before; its durations output is added
in memory when the export lacks it (``piper.patch_voice_with_alignment``),
so every voice reports where its phonemes are (timestamps, the cuts of
request stitching).

Seeded noise (``onnx_noise``): on both paths the ``RandomNormalLike`` nodes
(the duration predictor's noise and the prior's sampling, all in the encoder
part: ``onnx_split`` refuses flow or decoder parts that draw noise) are
replaced when the sessions are created by inputs fed from NumPy generators
seeded with ``SynthesisParams.seed`` (fresh ones when unseeded). The same
seed gives the same audio, windowed or whole; the edit is made in memory, so
the files on disk, parts included, keep their hashes.
"""

from __future__ import annotations

import collections
import logging
import weakref
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import onnx
import onnxruntime

from tts.inference.cpus import available_cpus

from .engine import EngineError, EngineOutput, ModelSpec, StreamPace, SynthesisParams, check_phoneme_ids
from .onnx_arena import use_shared_arena
from .onnx_attention import banded_relative_attention
from .onnx_conv2d import convs_as_2d
from .onnx_noise import noise_size, run_with_noise, seedable_graph
from .onnx_split import WindowedParts
from .pacing import AHEAD, LATE, WHOLE, is_ahead, window_seconds
from .piper_frontend import PiperFrontend, read_piper_config
from .windows import Window, plan_windows, split_evenly
from .work_pool import PoolClosed, WorkPool

logger = logging.getLogger(__name__)

# Latent frames: a stream's first window, the most a later window holds, and
# the least a window holds when a sentence is cut to spread over idle workers
# (smaller ones would spend more on their overlap than they save).
WINDOW_FRAMES = 16
CHUNK_FRAMES = 256
MIN_SPLIT_FRAMES = 96
# The most one whole-file window decodes: the process's ONNX Runtime arena keeps about what the
# largest concurrent runs needed, so this bounds it whatever the sentence (stream windows are smaller).
MAX_WINDOW_FRAMES = 512

ResultT = TypeVar("ResultT")


@dataclass
class _Prior:
    """One sentence's encoder outputs: the flow's inputs (and g), durations in samples."""

    feed: dict[str, np.ndarray]
    frames: int
    samples: np.ndarray | None


class _Parts:
    """The three sessions of a split model and how to run one window through flow and decoder.

    Kept apart from the engine so queued work holds this, not the engine: a
    dropped engine is collected and its finalizer closes the pool.
    """

    def __init__(
        self,
        parts: WindowedParts,
        options: onnxruntime.SessionOptions,
        providers: list[str],
        *,
        wide_threads: int,
    ) -> None:
        self.parts = parts
        self.names = parts.names
        self.hop = parts.hop_length
        # Windowed runs are bounded (max_window_frames): they share the process's arena.
        use_shared_arena(options)
        # The noise is drawn in the encoder (the split refuses flow or decoder parts that draw any).
        encoder = seedable_graph(_load_graph(parts.paths["encoder"]))
        self.noise_keys = encoder.keys
        self.encoder = onnxruntime.InferenceSession(encoder.model, sess_options=options, providers=providers)
        self.flow, self.decoder = (
            onnxruntime.InferenceSession(
                _load_graph(parts.paths[part]).SerializeToString(), sess_options=options, providers=providers
            )
            for part in ("flow", "decoder")
        )
        self.encoder_outputs = [out.name for out in self.encoder.get_outputs()]
        # The encoder is the one step a sentence cannot cut in windows: on an
        # otherwise idle engine it runs on every core (threads that sleep, not
        # spin, when done, so they never hold cores the workers need).
        self.wide_encoder: onnxruntime.InferenceSession | None = None
        if wide_threads > options.intra_op_num_threads and providers[0] == "CPUExecutionProvider":
            wide = onnxruntime.SessionOptions()
            use_shared_arena(wide)
            wide.enable_mem_pattern = False
            wide.intra_op_num_threads = wide_threads
            wide.inter_op_num_threads = 1
            wide.add_session_config_entry("session.intra_op.allow_spinning", "0")
            self.wide_encoder = onnxruntime.InferenceSession(encoder.model, sess_options=wide, providers=providers)

    def prior(self, feed: dict[str, np.ndarray], seed: int | None, *, alone: bool = False) -> _Prior:
        session = self.wide_encoder if alone and self.wide_encoder is not None else self.encoder
        size = noise_size(int(feed["input"].shape[-1]), float(feed["scales"][1]))
        result = run_with_noise(lambda f: session.run(None, f), feed, self.noise_keys, seed, size)
        outputs = dict(zip(self.encoder_outputs, result, strict=True))
        flow_feed = {name: outputs[name] for name in self.names.flow_inputs}
        samples = None
        if self.names.durations:
            samples = (np.asarray(outputs[self.names.durations]).reshape(-1) * self.hop).astype(np.int64)
        return _Prior(flow_feed, int(flow_feed[self.names.latent].shape[-1]), samples)

    def window(self, prior: _Prior, window: Window) -> np.ndarray:
        names = self.names
        f0, f1 = window.flow
        feed = dict(prior.feed)
        feed[names.latent] = np.ascontiguousarray(prior.feed[names.latent][:, :, f0:f1])
        feed[names.mask] = np.ascontiguousarray(prior.feed[names.mask][:, :, f0:f1])
        z = self.flow.run(None, feed)[0]
        d0, d1 = window.decoder
        decoder_feed = {name: prior.feed[name] for name in names.decoder_inputs if name != names.z}
        decoder_feed[names.z] = np.ascontiguousarray(z[:, :, d0 - f0 : d1 - f0])
        audio = np.asarray(self.decoder.run(None, decoder_feed)[0], dtype=np.float32).reshape(-1)
        c0, c1 = window.core
        return np.clip(audio[(c0 - d0) * self.hop : (c1 - d0) * self.hop], -1.0, 1.0)


class PiperOnnxEngine:
    """A Piper voice on ONNX Runtime; thread-safe; windowed when its graph was split at import."""

    name = "piper-onnx"
    #: Every run is queued in the engine's ``WorkPool`` under the caller's ``work_key``, tenants in
    #: turn: a caller may step a stream's windows on its own thread (``tts.synthesis.engine_time.scheduler``).
    queues_fairly = True

    def __init__(self, spec: ModelSpec, *, threads: int = 1) -> None:
        try:
            self.config = read_piper_config(spec.config_path)
        except (OSError, ValueError, KeyError) as exc:
            raise EngineError(f"cannot read voice config {spec.config_path}: {exc}") from exc
        self.frontend = PiperFrontend(self.config)
        self.sample_rate = int(self.config.sample_rate)
        self.num_speakers = int(self.config.num_speakers)
        self.hop_length = int(self.config.hop_length)
        self.default_length_scale = float(self.config.length_scale)
        self.window_frames = int(str(spec.options.get("window_frames", WINDOW_FRAMES)))
        self.chunk_frames = int(str(spec.options.get("chunk_frames", CHUNK_FRAMES)))
        self.max_window_frames = int(str(spec.options.get("max_window_frames", MAX_WINDOW_FRAMES)))

        threads = max(1, threads)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        # No arena of its own: a split model's sessions share the process's (onnx_arena), and the
        # whole graph, whose runs are as long as the sentence, keeps none (an arena would hold the
        # longest's activations, 900 MB for 349 characters at half speed; such a voice is about
        # 4x slower for it). No memory pattern: ONNX Runtime keeps one per input shape it has
        # seen, and every sentence has its own shape, so a server's memory grew with each new
        # length (bench/bench_soak.py).
        options.enable_cpu_mem_arena = False
        options.enable_mem_pattern = False
        providers = ["CPUExecutionProvider"]
        if spec.device in ("auto", "cuda") and "CUDAExecutionProvider" in onnxruntime.get_available_providers():
            providers.insert(0, "CUDAExecutionProvider")
        self._parts: _Parts | None = None
        self.session: onnxruntime.InferenceSession | None = None
        self._noise_keys: tuple[str, ...] = ()
        try:
            parts = _usable_parts(spec)
            if parts is not None:
                self._parts = _Parts(parts, options, providers, wide_threads=available_cpus())
                self.hop_length = parts.hop_length
                self._input_names = {i.name for i in self._parts.encoder.get_inputs()}
                self._has_alignment = bool(parts.names.durations)
            else:
                graph = seedable_graph(_load_graph(spec.model_path), add_durations=True)
                self._noise_keys = graph.keys
                self.session = onnxruntime.InferenceSession(graph.model, sess_options=options, providers=providers)
                self._input_names = {i.name for i in self.session.get_inputs()}
                self._has_alignment = len(self.session.get_outputs()) > 1
        except Exception as exc:  # onnxruntime (and onnx) raise their own exception types
            raise EngineError(f"cannot load ONNX model {spec.model_path}: {exc}") from exc
        # One worker per core at this thread count (2 cores, 1 thread: 2 workers).
        self.concurrency = max(1, available_cpus() // threads)
        self._pool = WorkPool(self.concurrency, name=f"onnx-{spec.id}")
        self._finalizer = weakref.finalize(self, self._pool.close)

    @property
    def windowed(self) -> bool:
        """Whether sentences are decoded in windows (the model was split at import)."""
        return self._parts is not None

    def phonemize(self, text: str) -> list[list[str]]:
        return self.frontend.phonemize(text)

    def phonemes_to_ids(self, phonemes: Sequence[str]) -> list[int]:
        return self.frontend.phonemes_to_ids(phonemes)

    def synthesize_ids(self, phoneme_ids: Sequence[int], params: SynthesisParams) -> EngineOutput:
        """One sentence at once: over every idle worker in equal windows, else in one piece."""
        if not phoneme_ids:
            return EngineOutput(np.zeros(0, dtype=np.float32), self.sample_rate)
        feed = self._feed(phoneme_ids, params)
        parts = self._parts
        if parts is None:
            return self._result(self._pool.submit(lambda: self._run_whole(feed, params.seed), priority=WHOLE))
        prior = self._prior(parts, feed, params.seed, priority=WHOLE)
        # Over the workers that take WHOLE work next: those decoding later windows of streams
        # come to these windows before their own queue, so a short request beside busy streams
        # still uses every core (and waits for at most one window on each).
        idle = self._pool.idle(WHOLE)
        size = split_evenly(prior.frames, idle, minimum=MIN_SPLIT_FRAMES, maximum=self.max_window_frames)
        windows = self._plan(prior.frames, first=size, size=size)
        futures = [self._pool.submit(_window_task(parts, prior, w), priority=WHOLE) for w in windows]
        try:
            audio = np.concatenate([self._result(f) for f in futures])
        finally:
            for future in futures:
                future.cancel()
        return EngineOutput(audio, self.sample_rate, prior.samples)

    def iter_synthesize_ids(
        self,
        phoneme_ids: Sequence[int],
        params: SynthesisParams,
        *,
        window_frames: int | None = None,
        pace: StreamPace | None = None,
    ) -> Iterator[EngineOutput]:
        """Audio in pieces, the first after ``window_frames`` latent frames are decoded.

        The pieces concatenate to the whole-sentence decode's audio (up to
        float rounding); the first carries ``phoneme_samples`` for the whole
        sentence. Without a split model, one piece.

        With ``pace`` (the stream's lead over playback, ``tts.inference.pacing``): small
        windows, one per worker at a time at the late streams' priority, while the stream
        is within the lead margin, each holding about what the lead covers (growing with
        it from ``window_frames``); once it is further ahead, the rest of the sentence in
        the few large windows a whole-file request would use, behind whole-file work.
        """
        if not phoneme_ids or self._parts is None:
            yield self.synthesize_ids(phoneme_ids, params)
            return
        parts = self._parts
        feed = self._feed(phoneme_ids, params)
        first = max(1, window_frames or self.window_frames)
        if pace is not None:
            yield from self._iter_paced(parts, feed, params.seed, first, pace)
            return
        prior = self._prior(parts, feed, params.seed)
        rest = max(0, prior.frames - first)
        # Later windows: enough of them for every worker, none larger than chunk_frames.
        size = min(self.chunk_frames, split_evenly(rest, self.concurrency, minimum=MIN_SPLIT_FRAMES)) if rest else first
        windows = self._plan(prior.frames, first=first, size=max(size, 1))
        futures = [
            self._pool.submit(_window_task(parts, prior, w), priority=LATE if i == 0 else AHEAD)
            for i, w in enumerate(windows)
        ]
        try:
            for index, future in enumerate(futures):
                yield EngineOutput(self._result(future), self.sample_rate, prior.samples if index == 0 else None)
        finally:
            for future in futures:  # a caller that stops early frees the workers
                future.cancel()

    def _iter_paced(
        self, parts: _Parts, feed: dict[str, np.ndarray], seed: int | None, first: int, pace: StreamPace
    ) -> Iterator[EngineOutput]:
        """``iter_synthesize_ids`` for a stream: the window size follows the stream's lead, window by window."""
        prior = self._prior(parts, feed, seed, priority=AHEAD if is_ahead(pace) else LATE)
        frames = prior.frames
        start = 0
        pending: collections.deque[Future[np.ndarray]] = collections.deque()
        index = 0
        try:
            while start < frames or pending:
                if start < frames and len(pending) < self.concurrency:
                    if is_ahead(pace):
                        # Comfortably ahead: the rest as a whole-file request cuts it, behind that work.
                        size = split_evenly(
                            frames - start,
                            self._pool.idle(AHEAD),
                            minimum=MIN_SPLIT_FRAMES,
                            maximum=self.max_window_frames,
                        )
                        windows = self._plan(frames, first=size, size=size, start=start)
                        priority = AHEAD
                    else:
                        # The listener waits: one window per worker, ahead of whole-file work, each
                        # holding about what the lead covers (they grow with it), none over chunk_frames.
                        grow = int(window_seconds(pace.lead_s()) * self.sample_rate / self.hop_length)
                        size = max(first, min(self.chunk_frames, grow))
                        windows = self._plan(
                            frames,
                            first=first if start == 0 else size,
                            size=size,
                            start=start,
                            count=self.concurrency - len(pending),
                        )
                        priority = LATE
                    for window in windows:
                        pending.append(self._pool.submit(_window_task(parts, prior, window), priority=priority))
                    start = windows[-1].core[1]
                future = pending.popleft()
                audio = self._result(future)
                yield EngineOutput(audio, self.sample_rate, prior.samples if index == 0 else None)
                index += 1
        finally:
            for future in pending:  # a caller that stops early frees the workers
                future.cancel()

    def close(self) -> None:
        self._finalizer()
        self.session = None
        self._parts = None

    def _prior(self, parts: _Parts, feed: dict[str, np.ndarray], seed: int | None, *, priority: int = LATE) -> _Prior:
        pool = self._pool
        # Decided when the run starts: alone = no other worker busy and nothing queued.
        return self._result(
            pool.submit(lambda: parts.prior(feed, seed, alone=pool.idle() == pool.workers - 1), priority=priority)
        )

    def _plan(self, frames: int, *, first: int, size: int, start: int = 0, count: int = 0) -> list[Window]:
        assert self._parts is not None
        parts = self._parts.parts
        return plan_windows(
            frames,
            first=first,
            size=size,
            decoder_overlap=parts.decoder_overlap,
            flow_overlap=parts.flow_overlap,
            start=start,
            count=count,
        )

    def _feed(self, phoneme_ids: Sequence[int], params: SynthesisParams) -> dict[str, np.ndarray]:
        check_phoneme_ids(phoneme_ids)  # the engine's own door (every call of this engine feeds through here)
        cfg = self.config
        scales = np.array(
            [
                (cfg.noise_scale if params.noise_scale is None else params.noise_scale) * params.variation,
                cfg.length_scale if params.length_scale is None else params.length_scale,
                (cfg.noise_w_scale if params.noise_w is None else params.noise_w) * params.variation,
            ],
            dtype=np.float32,
        )
        feed: dict[str, np.ndarray] = {
            "input": np.asarray([phoneme_ids], dtype=np.int64),
            "input_lengths": np.asarray([len(phoneme_ids)], dtype=np.int64),
            "scales": scales,
        }
        if "sid" in self._input_names:
            sid = cfg.default_speaker_id if params.speaker_id is None else params.speaker_id
            if not 0 <= sid < max(1, self.num_speakers):
                raise EngineError(f"speaker {sid} out of range 0..{self.num_speakers - 1}")
            feed["sid"] = np.asarray([sid], dtype=np.int64)
        return feed

    def _run_whole(self, feed: dict[str, np.ndarray], seed: int | None) -> EngineOutput:
        session = self.session
        if session is None:
            raise EngineError("engine is closed", retryable=True)
        size = noise_size(int(feed["input"].shape[-1]), float(feed["scales"][1]))
        result = run_with_noise(lambda f: session.run(None, f), feed, self._noise_keys, seed, size)
        audio = np.clip(np.asarray(result[0], dtype=np.float32).reshape(-1), -1.0, 1.0)
        samples = None
        if self._has_alignment and len(result) > 1:
            samples = (np.asarray(result[1]).reshape(-1) * self.hop_length).astype(np.int64)
        return EngineOutput(audio, self.sample_rate, samples)

    @staticmethod
    def _result(future: Future[ResultT]) -> ResultT:
        try:
            return future.result()
        except EngineError:
            raise
        except PoolClosed as exc:
            raise EngineError("engine closed during synthesis", retryable=True) from exc
        except Exception as exc:  # onnxruntime raises its own exception types
            raise EngineError(f"ONNX inference failed: {exc}", retryable=True) from exc


def _load_graph(path: str) -> Any:
    """The ONNX graph at ``path``, rewritten for speed in memory: the same numbers up to float rounding.

    The text encoder's relative attention on its band (``onnx_attention``), then every 1-D
    convolution as a 2-D one (``onnx_conv2d``: ONNX Runtime's faster kernels).
    """
    model = onnx.load(path)
    banded_relative_attention(model)
    convs_as_2d(model)
    return model


def _window_task(parts: _Parts, prior: _Prior, window: Window) -> Any:
    return lambda: parts.window(prior, window)


def _usable_parts(spec: ModelSpec) -> WindowedParts | None:
    """The split model of ``spec`` if its import made one and every part matches its hash."""
    raw = spec.options.get("windowed")
    if not isinstance(raw, dict):
        return None
    try:
        parts = WindowedParts.from_options(raw)
    except (KeyError, TypeError, ValueError) as exc:
        logger.warning("model version %s: unreadable windowed parts (%s); decoding whole sentences", spec.id, exc)
        return None
    problem = parts.verify()
    if problem:
        logger.warning("model version %s: %s; decoding whole sentences", spec.id, problem)
        return None
    return parts
