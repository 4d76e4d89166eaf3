"""The cost rule on a server (#24 item 4, per engine #32 item 2): each field's worst request, beside a plain one.

A benchmark, not a test. In this process (the "server": Django's test client, SQLite in a temporary
directory, no Redis, the audio cache off so every request reaches the engine), each row is one
hostile request through ``POST /v1/text-to-speech/{voice}`` and a plain request of the same billed
length in the voice's language, both measured as CPU ms per billed character (``time.process_time``:
every thread) and the peak RSS growth of this process during the request (``/proc/self/statm``
sampled every 2 ms, peak minus the RSS before it). Voices: joe (Piper, English), ``zf_xiaoxiao``
(Kokoro, Chinese) and ``jf_alpha`` (Kokoro, Japanese); Kokoro's rows are short (its engine time is
ten times Piper's). The tenant's engine-time budget is out of reach, so every row runs in full.
Targets (issues #24, #32): no field above 3x the plain request's CPU per billed character of the same
engine; no request above 256 MB of RSS growth. Usage::

    .venv/bin/python bench/bench_costs.py [--rounds 1] [--voices joe,zf_xiaoxiao,jf_alpha]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time

from in_process import bench_tenant, import_kokoro, setup_with_joe

PROSE = "The harbour was quiet that morning, and the boats rocked against the old stone wall. "
#: The plain request of each language (what every field's row is compared with, at the same billed length).
PLAIN = {
    "en": PROSE,
    "zh": "今天早上港口很安静，小船靠着古老的石墙轻轻摇晃。",  # noqa: RUF001
    "ja": "その朝、港は静かで、船は古い石の壁に寄りかかって揺れていた。",
}
#: Each voice: its language and output format; Kokoro's rows are short (about 0.75 s of engine time a second).
VOICES = {"joe": ("en", "pcm_16000"), "zf_xiaoxiao": ("zh", "pcm_24000"), "jf_alpha": ("ja", "pcm_24000")}
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


class Peak:
    """The highest RSS seen while the block runs."""

    def __enter__(self) -> Peak:
        self.start = self.peak = rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def _watch(self) -> None:
        while not self._stop.wait(0.002):
            self.peak = max(self.peak, rss())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss())

    @property
    def growth_mb(self) -> float:
        return (self.peak - self.start) / 2**20


def prose(n: int, language: str = "en") -> str:
    text = PLAIN[language]
    end = "." if language == "en" else "。"
    return (text * (n // len(text) + 1))[:n].rstrip().rstrip("\uff0c、。.,") + end


def joe_rows(request_id: str, alias_id: str) -> list[tuple[str, dict[str, object]]]:
    """joe's rows (#24): every field's worst request found, English prose beside."""
    glued = "-".join(["word"] * 200)[:1000]
    short = "Short line."
    return [
        (
            "previous_text: 1,000 characters, 200 words glued by dashes (#24: 6.3 s; 12,000 was an OOM)",
            {"text": short, "previous_text": glued},
        ),
        ("next_text: the same", {"text": short, "next_text": glued}),
        ("previous_request_ids: a 4,000-character request", {"text": short, "previous_request_ids": [request_id]}),
        (
            "SSML say-as characters, 64 W a time",
            {
                "text": "<speak>"
                + " ".join(['<say-as interpret-as="characters">' + "W" * 64 + "</say-as>"] * 8)
                + "</speak>"
            },
        ),
        (
            "SSML say-as characters, 300 W (read as text)",
            {"text": '<speak><say-as interpret-as="characters">' + "W" * 300 + "</say-as></speak>"},
        ),
        (
            "SSML phoneme blocks, 500 phonemes each",
            {
                "text": "<speak>"
                + " ".join(['<phoneme alphabet="ipa" ph="' + "ʃa" * 250 + '">x</phoneme>'] * 4)
                + "</speak>"
            },
        ),
        ("phoneme block [[ a a a ... ]], 1,000 characters", {"text": "Read [[ " + "a " * 496 + "]] now."}),
        ("digits: '1/' and 1,000 sevens (#32: 6x)", {"text": "1/" + "7" * 1000}),
        ("digits: 200 numbers of 4 digits", {"text": " ".join(["1234"] * 200)}),
        ("SSML breaks, 10 s each", {"text": "<speak>" + 'Go. <break time="10s"/> ' * 20 + "</speak>"}),
        ("SSML prosody x-slow", {"text": '<speak><prosody rate="x-slow">' + prose(1000) + "</prosody></speak>"}),
        ("speed 0.5 (the floor)", {"text": prose(1000), "voice_settings": {"speed": 0.5}}),
        ("seed", {"text": prose(1000), "seed": 12345}),
        ("Han text, English voice", {"text": "日本語の文章です。" * 40}),
        ("capitals glued (spelled by the phonemizer)", {"text": " ".join(["W" * 60] * 8)}),
        (
            "dictionary: 'W' -> 68 characters (about the most 10 W may become), text 'W W ...'",
            {
                "text": " ".join(["W"] * 10),
                "pronunciation_dictionary_locators": [{"pronunciation_dictionary_id": alias_id}],
            },
        ),
    ]


def kokoro_rows(language: str, alias_id: str) -> list[tuple[str, dict[str, object]]]:
    """A Kokoro voice's rows: each field's hostile request, short (Kokoro is ten times Piper's engine time)."""
    words = PLAIN[language]
    short = words[:6] + "。"
    digits = {"zh": "比分是1/", "ja": "価格は€" + "1" * 30 + ".50です。番号は"}[language]
    return [
        ("previous_text: 990 characters of prose", {"text": short, "previous_text": prose(990, language)}),
        ("next_text: the same", {"text": short, "next_text": prose(990, language)}),
        ("previous_text: 999 characters glued by dashes", {"text": short, "previous_text": "-".join(["猫"] * 500)}),
        (
            "SSML phoneme block, 120 phonemes",
            {"text": '<speak><phoneme alphabet="ipa" ph="' + "ʃa" * 60 + '">x</phoneme></speak>'},
        ),
        ("phoneme block [[ a a a ... ]], 120 characters", {"text": "[[ " + "a " * 58 + "]]"}),
        ("digits: a fraction of 60 sevens", {"text": digits + "7" * 60}),
        ("digits: 12 numbers of 4 digits", {"text": " ".join(["1234"] * 12)}),
        (
            "SSML prosody x-slow",
            {"text": '<speak><prosody rate="x-slow">' + prose(40, language) + "</prosody></speak>"},
        ),
        ("speed 0.5 (the floor)", {"text": prose(40, language), "voice_settings": {"speed": 0.5}}),
        ("Latin capitals glued", {"text": " ".join(["W" * 30] * 2)}),
        (
            "dictionary: one character -> 68 characters, text of 8 of it",
            {"text": "猫" * 8, "pronunciation_dictionary_locators": [{"pronunciation_dictionary_id": alias_id}]},
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--voices", default=",".join(VOICES), help="comma-separated: " + ", ".join(VOICES))
    args = parser.parse_args()
    setup_with_joe("bench-costs")
    voices = [v.strip() for v in args.voices.split(",") if v.strip()]
    if any(v != "joe" for v in voices):
        import_kokoro("bench-costs")
    # No request here may stop at a limit: the plan's engine-time budget is out of reach.
    tenant, key = bench_tenant("bench-costs", max_engine_seconds_per_request=10**6)
    from django.test import Client

    from tts.pronunciation.dictionaries import dictionary_create

    client = Client(HTTP_XI_API_KEY=key)
    alias_en = dictionary_create(
        tenant=tenant,
        name="ten-fold",
        rules=[{"type": "alias", "string_to_replace": "W", "alias": ("double you " * 7)[:68]}],
    )[0]
    alias_cjk = {
        language: dictionary_create(
            tenant=tenant,
            name=f"ten-fold-{language}",
            rules=[{"type": "alias", "string_to_replace": "猫", "alias": (PLAIN[language] * 3)[:68]}],
        )[0]
        for language in ("zh", "ja")
    }
    out = []
    for voice in voices:
        language, fmt = VOICES[voice]
        url = f"/v1/text-to-speech/{voice}?output_format={fmt}"

        def post(body: dict[str, object], url: str = url) -> object:
            return client.post(url, json.dumps(body), content_type="application/json")

        post({"text": "Warm up the engine." if language == "en" else PLAIN[language][:12]})
        if voice == "joe":
            first = post({"text": prose(4000)})
            rows = joe_rows(first["request-id"], alias_en.dictionary_id)  # type: ignore[index]
        else:
            rows = kokoro_rows(language, alias_cjk[language].dictionary_id)
        plain_cache: dict[int, tuple[float, float]] = {}

        def measure(body: dict[str, object], post: object = post) -> tuple[float, float, str, int]:
            cpus, peaks = [], []
            response: object = None
            for _ in range(args.rounds):
                cpu = time.process_time()
                with Peak() as peak:
                    response = post(body)  # type: ignore[operator]
                cpus.append(time.process_time() - cpu)
                peaks.append(peak.growth_mb)
            status = str(response.status_code)  # type: ignore[attr-defined]
            if response.status_code != 200:  # type: ignore[attr-defined]
                status += " " + str(response.json().get("detail", {}).get("status"))  # type: ignore[attr-defined]
            billed = billed_of(response, body)
            return statistics.median(cpus) * 1000 / billed, max(peaks), status, billed

        def plain(
            n: int, language: str = language, measure: object = measure, cache: dict = plain_cache
        ) -> tuple[float, float]:  # type: ignore[type-arg]
            if n not in cache:
                per_char, mb, _, _ = measure({"text": prose(n, language)})  # type: ignore[operator]
                cache[n] = (per_char, mb)
            return cache[n]  # type: ignore[no-any-return]

        for name, body in rows:
            per_char, mb, status, n = measure(body)
            base, base_mb = plain(n)
            out.append((voice, name, n, per_char, mb, status, base, base_mb))
            print(
                f"{voice}: {name}: {per_char:.2f} ms/char ({base:.2f} plain), {mb:.1f} MB, {status}",
                file=sys.stderr,
                flush=True,
            )
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {args.rounds} round(s)\n")
    print(
        "| voice | field: worst request | billed chars | CPU ms / billed char | plain, same length | ratio | "
        "RSS growth MB (plain) | answer |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for voice, name, n, per_char, mb, status, base, base_mb in out:
        ratio = per_char / base if base else float("nan")
        print(
            f"| {voice} | {name} | {n} | {per_char:.2f} | {base:.2f} | {ratio:.2f}x | "
            f"{mb:.1f} ({base_mb:.1f}) | {status} |"
        )


def billed_of(response: object, body: dict[str, object]) -> int:
    """What the platform billed (its history row: dictionaries bill the spoken text), else the text's length."""
    from tts.models import SynthesisRecord

    item = response.get("history-item-id") if response.status_code == 200 else None  # type: ignore[attr-defined]
    row = SynthesisRecord.objects.filter(pk=item).first() if item else None
    return row.characters if row is not None else len(str(body["text"]))


if __name__ == "__main__":
    main()
