"""PyTorch engine for Piper voices: the GPU path, with dynamic batching and windowed decoding.

It serves the same voice files as ``piper_onnx`` (the ``.onnx`` export, or a
Piper ``.ckpt``) through this project's own VITS implementation
(``tts.inference.vits``). Synthesis runs in two steps:

1. the *prior*: text encoder, durations and the sampled prior, for a whole
   segment (float32);
2. *windows*: the reverse flows and the decoder over overlapping windows of
   the prior. Each window carries enough context on both sides (the flows'
   and the decoder's receptive fields) that the audio it keeps is what
   whole-segment decoding computes, so windows can be streamed as soon as
   each is ready (``iter_synthesize_ids``) and, on CPU, stay cache-sized.

With batching (default on CUDA, off on CPU where it measured slower) both
steps go through a ``DynamicBatcher``: concurrent requests' segments and
windows are padded to length buckets and run together. Without it, calls run
one at a time under a lock, like the ONNX engine, keeping the thread budget
bounded.

``ModelSpec.options``: ``batching`` (bool), ``decoder_dtype`` (``auto``,
``float32``, ``float16``, ``bfloat16``; ``auto`` is float32 on CPU and on CUDA
the first half type whose SNR against float32 reaches ``MIN_DECODER_SNR_DB``),
``window_frames`` (first streamed window, latent frames),
``chunk_frames`` (later windows), ``max_batch_size``, ``max_wait_ms``.
"""

from __future__ import annotations

import copy
import logging
import math
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

import numpy as np
import torch

from .batcher import BatcherClosed, DynamicBatcher, bucket_length
from .engine import EngineError, EngineOutput, ModelSpec, StreamPace, SynthesisParams, check_phoneme_ids
from .piper_frontend import PiperFrontend, read_piper_config
from .vits.decoder import decoder_receptive_field
from .vits.flows import flow_receptive_field
from .vits.runner import BatchRunner, PriorJob, SegmentPrior, WindowJob, plan_windows
from .vits.weights import VoiceFormatError, build_generator, load_voice_weights

logger = logging.getLogger(__name__)

MIN_DECODER_SNR_DB = 30.0
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
# A phrase with voiced and unvoiced sounds, for the decoder precision check.
CALIBRATION_TEXT = "The quick brown fox jumps over the lazy dog, and sixty zebras sing."
OptionT = TypeVar("OptionT", int, float, bool, str)
ItemT = TypeVar("ItemT")
ResultT = TypeVar("ResultT")


def snr_db(reference: np.ndarray | torch.Tensor, test: np.ndarray | torch.Tensor) -> float:
    """Signal-to-noise ratio of ``test`` against ``reference``, in dB."""
    ref = torch.as_tensor(reference, dtype=torch.float64)
    noise = (ref - torch.as_tensor(test, dtype=torch.float64)).pow(2).sum()
    return math.inf if noise == 0 else float(10 * torch.log10(ref.pow(2).sum() / noise))


class VitsTorchEngine:
    """A Piper voice served by PyTorch; thread-safe, batched on GPU."""

    name = "vits-torch"

    def __init__(self, spec: ModelSpec, *, threads: int = 1) -> None:
        try:
            self.config = read_piper_config(spec.config_path)
        except (OSError, ValueError, KeyError) as exc:
            raise EngineError(f"cannot read voice config {spec.config_path}: {exc}") from exc
        self.frontend = PiperFrontend(self.config)
        self.sample_rate = int(self.config.sample_rate)
        self.num_speakers = int(self.config.num_speakers)
        self.device = _resolve_device(spec.device)
        options = spec.options
        on_cuda = self.device.type == "cuda"
        if on_cuda:
            # Process-wide. Batches come in a few bucketed shapes, so autotuning per
            # shape pays off; TF32 convolutions would move predicted durations (and
            # so lengths) away from what the float32 model gives on CPU.
            torch.backends.cudnn.benchmark = True
            torch.backends.cudnn.allow_tf32 = False
        else:
            # Process-wide in torch: the last CPU engine loaded sets it.
            torch.set_num_threads(max(1, threads))

        try:
            weights = load_voice_weights(spec.model_path)
            model = build_generator(weights).to(self.device)
        except (VoiceFormatError, OSError) as exc:
            raise EngineError(f"cannot load voice {spec.model_path}: {exc}") from exc
        hp = weights.hparams
        if hp.n_speakers != max(1, self.num_speakers):
            raise EngineError(f"{spec.model_path} has {hp.n_speakers} speakers but its config says {self.num_speakers}")
        self.hop_length = hp.hop_length
        self.decoder_overlap = decoder_receptive_field(hp)
        self.flow_overlap = flow_receptive_field(hp)
        self.window_frames = _option(options, "window_frames", int, 32)
        self.chunk_frames = _option(options, "chunk_frames", int, 512 if on_cuda else 256)
        if self.window_frames < 1 or self.chunk_frames < 1:
            raise EngineError("window_frames and chunk_frames must be positive")

        self._runner = BatchRunner(model, self.device, bucketed=_option(options, "batching", bool, on_cuda))
        self.decoder_dtype = torch.float32
        self.decoder_snr_db: float | None = None
        self._choose_decoder_dtype(_option(options, "decoder_dtype", str, "auto"))

        self._lock = threading.Lock()
        self._prior_batcher: DynamicBatcher[PriorJob, SegmentPrior] | None = None
        self._window_batcher: DynamicBatcher[WindowJob, np.ndarray] | None = None
        if self._runner.bucketed:
            max_batch_size = _option(options, "max_batch_size", int, 64)
            max_wait_ms = _option(options, "max_wait_ms", float, 5.0)
            window_width = self.chunk_frames + 2 * (self.decoder_overlap + self.flow_overlap)
            self._prior_batcher = DynamicBatcher(
                self._runner.run_priors,
                cost=lambda job: bucket_length(len(job.ids)),
                max_batch_size=max_batch_size,
                max_batch_cost=max_batch_size * 512,  # bounds attention memory and a batch's run time
                max_wait_ms=max_wait_ms,
                name=f"vits-prior-{spec.id}",
            )
            self._window_batcher = DynamicBatcher(
                self._runner.run_windows,
                cost=lambda job: bucket_length(job.z_p.size(-1)),
                max_batch_size=max_batch_size,
                max_batch_cost=max_batch_size * bucket_length(window_width),
                max_wait_ms=max_wait_ms,
                name=f"vits-windows-{spec.id}",
            )
            # The registry drops engines without close(); stop the threads when this one is collected.
            self._finalizer = weakref.finalize(self, _close_batchers, self._prior_batcher, self._window_batcher)

    @property
    def batching(self) -> bool:
        return self._prior_batcher is not None

    def batch_stats(self) -> dict[str, int]:
        """Batches run and items in them, per step (empty without batching)."""
        if self._prior_batcher is None or self._window_batcher is None:
            return {}
        return {
            "prior_batches": self._prior_batcher.batches_run,
            "prior_items": self._prior_batcher.items_run,
            "window_batches": self._window_batcher.batches_run,
            "window_items": self._window_batcher.items_run,
        }

    def phonemize(self, text: str) -> list[list[str]]:
        return self.frontend.phonemize(text)

    def phonemes_to_ids(self, phonemes: Sequence[str]) -> list[int]:
        return self.frontend.phonemes_to_ids(phonemes)

    def synthesize_ids(self, phoneme_ids: Sequence[int], params: SynthesisParams) -> EngineOutput:
        pieces = list(self._synthesize(phoneme_ids, params, first_window=self.chunk_frames, streaming=False))
        audio = np.concatenate([piece.audio for piece in pieces])
        return EngineOutput(audio, self.sample_rate, pieces[0].phoneme_samples)

    def iter_synthesize_ids(
        self,
        phoneme_ids: Sequence[int],
        params: SynthesisParams,
        *,
        window_frames: int | None = None,
        pace: StreamPace | None = None,
    ) -> Iterator[EngineOutput]:
        """Audio in pieces, the first after ``window_frames`` latent frames are decoded.

        The pieces concatenate to ``synthesize_ids``'s audio (up to float
        rounding); the first carries ``phoneme_samples`` for the whole segment.
        ``pace`` is accepted (the engines' shared signature) and not used yet: this
        engine's windows are batched across streams (``batcher``) rather than paced.
        """
        return self._synthesize(phoneme_ids, params, first_window=window_frames or self.window_frames, streaming=True)

    def close(self) -> None:
        if self.batching:
            self._finalizer()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()

    def _synthesize(
        self, phoneme_ids: Sequence[int], params: SynthesisParams, *, first_window: int, streaming: bool
    ) -> Iterator[EngineOutput]:
        if not phoneme_ids:
            yield EngineOutput(np.zeros(0, dtype=np.float32), self.sample_rate, np.zeros(0, dtype=np.int64))
            return
        check_phoneme_ids(phoneme_ids)  # the engine's own door, before anything reaches the batcher or the device
        prior = self._prior(self._prior_job(phoneme_ids, params))
        samples = prior.durations.astype(np.int64) * self.hop_length
        windows = plan_windows(
            prior.z_p.size(-1),
            first=first_window,
            size=self.chunk_frames,
            decoder_overlap=self.decoder_overlap,
            flow_overlap=self.flow_overlap,
        )
        jobs = [WindowJob(prior.z_p[:, w.flow[0] : w.flow[1]], prior.g, w) for w in windows]
        for index, audio in enumerate(self._decode(jobs, streaming=streaming)):
            yield EngineOutput(audio, self.sample_rate, samples if index == 0 else None)

    def _prior_job(self, phoneme_ids: Sequence[int], params: SynthesisParams) -> PriorJob:
        cfg = self.config
        speaker_id = None
        if self.num_speakers > 1:
            speaker_id = cfg.default_speaker_id if params.speaker_id is None else params.speaker_id
            if not 0 <= speaker_id < self.num_speakers:
                raise EngineError(f"speaker {speaker_id} out of range 0..{self.num_speakers - 1}")
        return PriorJob(
            ids=phoneme_ids,
            noise_scale=(cfg.noise_scale if params.noise_scale is None else params.noise_scale) * params.variation,
            length_scale=cfg.length_scale if params.length_scale is None else params.length_scale,
            noise_w=(cfg.noise_w_scale if params.noise_w is None else params.noise_w) * params.variation,
            speaker_id=speaker_id,
            seed=params.seed,
        )

    def _prior(self, job: PriorJob) -> SegmentPrior:
        if self._prior_batcher is not None:
            return _result(_submit(self._prior_batcher, job))
        try:
            with self._lock:
                return self._runner.run_priors([job])[0]
        except RuntimeError as exc:  # torch reports device and shape failures as RuntimeError
            raise EngineError(f"torch inference failed: {exc}", retryable=True) from exc

    def _decode(self, jobs: list[WindowJob], *, streaming: bool) -> Iterator[np.ndarray]:
        if self._window_batcher is None:
            for job in jobs:
                try:
                    with self._lock:
                        piece = self._runner.run_windows([job])[0]
                except RuntimeError as exc:
                    raise EngineError(f"torch inference failed: {exc}", retryable=True) from exc
                yield piece
            return
        # Streaming sends the first window on its own: queued with the rest of
        # its segment it would share their batch and be no earlier than they
        # are. The rest then queue at once, to share batches with other requests.
        lead = 1 if streaming else 0
        futures = [_submit(self._window_batcher, job) for job in jobs[:lead]]
        try:
            first = [_result(futures[0])] if streaming else []
            futures += [_submit(self._window_batcher, job) for job in jobs[lead:]]
            yield from first
            for future in futures[lead:]:
                yield _result(future)
        finally:
            for future in futures:  # a caller that stops early frees the batch slots
                future.cancel()

    def _choose_decoder_dtype(self, requested: str) -> None:
        """Pick the decoder's precision; the encoder, durations and flows stay float32."""
        if requested != "auto":
            if requested not in DTYPES:
                raise EngineError(f"decoder_dtype must be auto or one of {', '.join(DTYPES)}, not {requested!r}")
            self._set_decoder_dtype(DTYPES[requested])
            return
        if self.device.type != "cuda":
            return  # half-precision convolutions are slower than float32 on CPUs
        for candidate in (torch.float16, torch.bfloat16):
            snr = self.measure_decoder_snr(candidate)
            logger.info("decoder %s: %.1f dB SNR against float32", candidate, snr)
            if snr >= MIN_DECODER_SNR_DB:
                self._set_decoder_dtype(candidate)
                self.decoder_snr_db = snr
                return

    def _set_decoder_dtype(self, dtype: torch.dtype) -> None:
        self._runner.model.dec.to(dtype)
        self.decoder_dtype = dtype

    @torch.inference_mode()
    def measure_decoder_snr(self, dtype: torch.dtype, text: str = CALIBRATION_TEXT) -> float:
        """SNR (dB) of the decoder run in ``dtype`` against float32, on ``text`` with noise off.

        Needs the float32 decoder: call it before any half type is chosen (or
        on an engine loaded with ``decoder_dtype=float32``).
        """
        if self.decoder_dtype != torch.float32:
            raise EngineError("the decoder is already in reduced precision: nothing to compare against")
        ids = [i for sentence in self.phonemize(text) for i in self.phonemes_to_ids(sentence)]
        job = self._prior_job(ids, SynthesisParams(noise_scale=0.0, noise_w=0.0))
        prior = self._runner.run_priors([job])[0]
        model = self._runner.model
        z_p, g = prior.z_p.unsqueeze(0), None if prior.g is None else prior.g.unsqueeze(0)
        z = model.latent(z_p, torch.ones_like(z_p[:, :1]), g)
        reference = model.dec.waveform(z, g)
        candidate = copy.deepcopy(model.dec).to(dtype).waveform(z, g)
        return snr_db(reference, candidate)


def _resolve_device(requested: str) -> torch.device:
    if requested in ("", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(requested)
    except RuntimeError as exc:
        raise EngineError(f"unknown device {requested!r}") from exc
    if device.type == "cuda" and not torch.cuda.is_available():
        raise EngineError(f"device {requested!r} asked for, but CUDA is not available", retryable=False)
    return device


def _option(options: Mapping[str, object], key: str, kind: type[OptionT], default: OptionT) -> OptionT:
    value: Any = options.get(key, default)
    if kind is bool and isinstance(value, str):
        value = value.strip().lower() in ("1", "true", "yes", "on")
    try:
        return kind(value)
    except (TypeError, ValueError) as exc:
        raise EngineError(f"model option {key}={value!r} is not a valid {kind.__name__}") from exc


def _submit(batcher: DynamicBatcher[ItemT, ResultT], job: ItemT) -> Future[ResultT]:
    try:
        return batcher.submit(job)
    except BatcherClosed as exc:
        raise EngineError("engine is closed", retryable=True) from exc


def _result(future: Future[ResultT]) -> ResultT:
    try:
        return future.result()
    except BatcherClosed as exc:
        raise EngineError("engine closed during synthesis", retryable=True) from exc
    except RuntimeError as exc:
        raise EngineError(f"torch inference failed: {exc}", retryable=True) from exc


def _close_batchers(*batchers: DynamicBatcher) -> None:
    for batcher in batchers:
        batcher.close()
