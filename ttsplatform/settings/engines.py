"""The engines and the pipeline around them: threads and priorities, phoneme and segment bounds,
default and OpenAI voices, engines by name, long-form jobs, and the model lifecycle."""

from __future__ import annotations

from pathlib import Path

from infra.env import env_bool, env_choice, env_float, env_int, env_map, env_str
from ttsplatform.settings.core import VAR_DIR
from ttsplatform.settings.deploy import REDIS_URL

# Intra-op threads per synthesis. 1 measured best on small machines (streaming
# and job benchmarks): concurrent requests then run in parallel, one per core.
TTS_ENGINE_THREADS = env_int("TTS_ENGINE_THREADS", 1, minimum=1, maximum=64)
# How many nice levels below the web process's other threads the ONNX engine's workers run (Linux):
# request threads, the event loop and the threads that pass audio on come first (docs/operations.md).
TTS_ENGINE_NICE = env_int("TTS_ENGINE_NICE", 10, minimum=0, maximum=19)
# Engine time shared per tenant in engine-seconds (tts/synthesis/engine_time/scheduler.py, docs/operations.md):
# scheduler workers (0 = twice the cores), at most this many held by one tenant (0 = the cores), the
# half-life of a tenant's usage, the usage lead over which a dearer tenant's runs in progress are lowered
# to nice 19 while a cheaper one runs (and whether they are), and the host's shared ledger in Redis.
TTS_ENGINE_SCHEDULER_WORKERS = env_int("TTS_ENGINE_SCHEDULER_WORKERS", 0, minimum=0, maximum=256)
TTS_ENGINE_SCHEDULER_PER_TENANT = env_int("TTS_ENGINE_SCHEDULER_PER_TENANT", 0, minimum=0, maximum=256)
TTS_ENGINE_SHARE_HALF_LIFE_S = env_float("TTS_ENGINE_SHARE_HALF_LIFE_S", 10.0, minimum=0.1)
TTS_ENGINE_SHARE_MARGIN_MS = env_int("TTS_ENGINE_SHARE_MARGIN_MS", 50, minimum=0)
TTS_ENGINE_SHARE_DEMOTE = env_bool("TTS_ENGINE_SHARE_DEMOTE", True)
TTS_ENGINE_HOST_SHARE = env_bool("TTS_ENGINE_HOST_SHARE", True)
TTS_ENGINE_HOST_SHARE_INTERVAL_MS = env_int("TTS_ENGINE_HOST_SHARE_INTERVAL_MS", 50, minimum=5, maximum=10000)
# The machine whose cores this process shares with the deployment's other engine processes: processes
# with the same name share one ledger. Empty: the hostname (one container). The K8s files set the node's
# name, compose one name for every service (docs/operations.md).
TTS_ENGINE_SHARE_HOST = env_str("TTS_ENGINE_SHARE_HOST", "")
TTS_MAX_CHARS_PER_REQUEST = env_int("TTS_MAX_CHARS_PER_REQUEST", 5000, minimum=1)
TTS_SEGMENT_MAX_CHARS = env_int("TTS_SEGMENT_MAX_CHARS", 400, minimum=20)
# Request stitching (docs/limits.md): previous_text/next_text longer than this are a 400 naming the field;
# the context actually synthesized beside a request is at most TTS_CONTEXT_SYNTH_MAX_CHARS characters a side
# (and twice that in phonemes), and is counted in the audio estimate.
TTS_CONTEXT_MAX_CHARS = env_int("TTS_CONTEXT_MAX_CHARS", 1000, minimum=1)
TTS_CONTEXT_SYNTH_MAX_CHARS = env_int("TTS_CONTEXT_SYNTH_MAX_CHARS", 100, minimum=10)
# The engine's own door: no engine call takes more phoneme ids than this, whatever produced them (an
# EngineError, a 422). Derived from the segment limit: 3 ids a character of one segment and its context.
TTS_PHONEME_IDS_MIN = env_int("TTS_PHONEME_IDS_MIN", 400, minimum=16)
TTS_ENGINE_MAX_PHONEME_IDS = env_int(
    "TTS_ENGINE_MAX_PHONEME_IDS",
    max(TTS_PHONEME_IDS_MIN, 3 * (TTS_SEGMENT_MAX_CHARS + 2 * TTS_CONTEXT_SYNTH_MAX_CHARS)),
    minimum=TTS_PHONEME_IDS_MIN,
)
TTS_DEFAULT_VOICE_ID = env_str("TTS_DEFAULT_VOICE_ID", "joe")
# Where `manage.py fetch_kokoro_voices` (make run, make test) leaves kokoro-js's checked voice files.
TTS_KOKORO_VOICES_DIR = Path(env_str("TTS_KOKORO_VOICES_DIR", str(VAR_DIR / "npm")))
# The voice a text in each language gets when the caller names none (the playground, the jobs page,
# the reference endpoints without a speaker): language code -> voice id. English is TTS_DEFAULT_VOICE_ID.
TTS_DEFAULT_VOICES = env_map(
    "TTS_DEFAULT_VOICES",
    {
        "en": TTS_DEFAULT_VOICE_ID,
        "zh": "zf_xiaoxiao",
        "ja": "jf_alpha",
        "es": "ef_dora",
        "fr": "ff_siwis",
        "hi": "hf_alpha",
        "it": "if_sara",
        "pt": "pf_dora",
    },
)
# OpenAI's voice names -> this server's voices (a voice whose id is the name itself wins; a mapped voice
# that is not installed falls back to TTS_DEFAULT_VOICE_ID). docs/api.md lists the defaults.
TTS_OPENAI_VOICES = env_map(
    "TTS_OPENAI_VOICES",
    {
        "alloy": "af_alloy",
        "ash": "am_adam",
        "ballad": "bm_george",
        "coral": "af_heart",
        "echo": "am_echo",
        "fable": "bm_fable",
        "nova": "af_nova",
        "onyx": "am_onyx",
        "sage": "af_sarah",
        "shimmer": "af_bella",
        "verse": "am_michael",
        "marin": "af_kore",
        "cedar": "am_puck",
    },
)
TTS_DEFAULT_ENGINE = env_choice("TTS_DEFAULT_ENGINE", "piper-onnx", ("piper-onnx", "vits-torch"))
TTS_STORE_AUDIO = env_bool("TTS_STORE_AUDIO", True)
TTS_SENTENCE_SILENCE_MS = env_int("TTS_SENTENCE_SILENCE_MS", 200, minimum=0, maximum=5000)
# Streams on an engine that makes a sentence's audio only whole (Kokoro): the first sentence is cut at
# its first pause once this much comes before it and after it (letters; a CJK character counts 3;
# 0: never), and its first clause is synthesized alone (tts/text/first_clause.py). The pause put
# between the two pieces, in ms.
TTS_FIRST_CLAUSE_MIN_CHARS = env_int("TTS_FIRST_CLAUSE_MIN_CHARS", 12, minimum=0, maximum=10_000)
TTS_FIRST_CLAUSE_PAUSE_MS = env_int("TTS_FIRST_CLAUSE_PAUSE_MS", 150, minimum=0, maximum=2000)
# What runs Kokoro (tts/inference/kokoro_runtime.py, docs/architecture.md): "onnxruntime" (its int8 graph),
# "openvino" (an fp32 graph built from the same weights, bf16 where the CPU has it; needs the [openvino]
# extra) or "auto" (OpenVINO only where the CPU has BF16 and a start-up probe finds it faster with the same
# speech; what it chose and why is logged). ONNX Runtime stays wherever OpenVINO cannot run.
TTS_KOKORO_RUNTIME = env_choice("TTS_KOKORO_RUNTIME", "onnxruntime", ("auto", "onnxruntime", "openvino"))
KOKORO_ENGINES = {
    "onnxruntime": "tts.inference.kokoro_onnx.KokoroOnnxEngine",
    "openvino": "tts.inference.kokoro_onnx.KokoroOpenVinoEngine",
    "auto": "tts.inference.kokoro_onnx.KokoroAutoEngine",
}
# Engines by name: dotted paths loaded on first use (see tts/inference/registry.py).
TTS_ENGINES = {
    "piper-onnx": "tts.inference.piper_onnx.PiperOnnxEngine",
    "vits-torch": "tts.inference.vits_torch.VitsTorchEngine",
    "kokoro-onnx": KOKORO_ENGINES[TTS_KOKORO_RUNTIME],
}
# Long-form jobs (tts/jobs/actions.py): Celery workers when there is a broker,
# else a background thread of the server process, so `make run` needs no broker.
TTS_JOB_RUNNER = env_choice("TTS_JOB_RUNNER", "celery" if REDIS_URL else "thread", ("celery", "thread"))
# Characters per chunk: the unit a job checkpoints (one stored file) and resumes from.
TTS_JOB_CHUNK_CHARS = env_int("TTS_JOB_CHUNK_CHARS", 2000, minimum=50)
TTS_JOB_MAX_ITEMS = env_int("TTS_JOB_MAX_ITEMS", 5000, minimum=1)
# A running job whose worker has not reported for this long is taken over (or failed).
TTS_JOB_STALE_AFTER_S = env_int("TTS_JOB_STALE_AFTER_S", 300, minimum=1)
TTS_JOB_MAX_ATTEMPTS = env_int("TTS_JOB_MAX_ATTEMPTS", 3, minimum=1)
# A queued job that could start but was not claimed this long after its message was
# sent (the broker lost it) is sent again by the reaper; at most this many per pass
# (and when a worker starts).
TTS_JOB_REDISPATCH_AFTER_S = env_int("TTS_JOB_REDISPATCH_AFTER_S", 300, minimum=1)
TTS_JOB_REDISPATCH_MAX = env_int("TTS_JOB_REDISPATCH_MAX", 500, minimum=0)

# --- operations: model lifecycle, metrics ----------------------------------

# Start-up warm-up, cross-process hot reload and idle unload (tts/catalogue/lifecycle.py);
# runs in server and worker processes only.
TTS_MODEL_LIFECYCLE = env_bool("TTS_MODEL_LIFECYCLE", True)
TTS_MODEL_POLL_SECONDS = env_int("TTS_MODEL_POLL_SECONDS", 2, minimum=1, maximum=300)
# Versions unused this long are unloaded (preloaded ones never); 0 keeps everything loaded.
TTS_MODEL_IDLE_UNLOAD_SECONDS = env_int("TTS_MODEL_IDLE_UNLOAD_SECONDS", 3600, minimum=0)
