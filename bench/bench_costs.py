"""The cost rule on a server (#24 item 4): for each field, the worst request found, beside a plain one.

A benchmark, not a test. In this process (the "server": Django's test client, SQLite in a temporary
directory, no Redis, the audio cache off so every request reaches the engine), each row is one
hostile request through ``POST /v1/text-to-speech/joe`` and a plain request of the same billed length
(English prose), both measured as CPU ms per billed character (``time.process_time``: every thread)
and the peak RSS growth of this process during the request (``/proc/self/statm`` sampled every 2 ms,
peak minus the RSS before it). Targets (issue #24): no field above 3x the plain request's CPU per
billed character; no request above 256 MB of RSS growth. Usage::

    .venv/bin/python bench/bench_costs.py [--rounds 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time

from in_process import bench_tenant, setup_with_joe

URL = "/v1/text-to-speech/joe?output_format=pcm_16000"
PROSE = "The harbour was quiet that morning, and the boats rocked against the old stone wall. "
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


def prose(n: int) -> str:
    return (PROSE * (n // len(PROSE) + 1))[:n].rstrip() + "."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    setup_with_joe("bench-costs")
    tenant, key = bench_tenant("bench-costs")
    from django.test import Client

    from tts.services.pronunciation import dictionary_create

    client = Client(HTTP_XI_API_KEY=key)

    def post(body: dict[str, object]) -> object:
        return client.post(URL, json.dumps(body), content_type="application/json")

    post({"text": "Warm up the engine."})
    first = post({"text": prose(4000)})
    request_id = first["request-id"]  # type: ignore[index]
    alias = dictionary_create(
        tenant=tenant,
        name="ten-fold",
        rules=[{"type": "alias", "string_to_replace": "W", "alias": ("double you " * 7)[:68]}],
    )[0]
    glued = "-".join(["word"] * 200)[:1000]
    short = "Short line."
    rows: list[tuple[str, dict[str, object]]] = [
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
        ("SSML breaks, 10 s each", {"text": "<speak>" + 'Go. <break time="10s"/> ' * 20 + "</speak>"}),
        ("SSML prosody x-slow", {"text": '<speak><prosody rate="x-slow">' + prose(1000) + "</prosody></speak>"}),
        ("speed 0.7", {"text": prose(1000), "voice_settings": {"speed": 0.7}}),
        ("seed", {"text": prose(1000), "seed": 12345}),
        ("Han text, English voice", {"text": "日本語の文章です。" * 40}),
        ("capitals glued (spelled by the phonemizer)", {"text": " ".join(["W" * 60] * 8)}),
        (
            "dictionary: 'W' -> 68 characters (about the most 10 W may become), text 'W W ...'",
            {
                "text": " ".join(["W"] * 10),
                "pronunciation_dictionary_locators": [{"pronunciation_dictionary_id": alias.dictionary_id}],
            },
        ),
    ]
    plain_cache: dict[int, tuple[float, float]] = {}

    def measure(body: dict[str, object]) -> tuple[float, float, str, int]:
        cpus, peaks = [], []
        response: object = None
        for _ in range(args.rounds):
            cpu = time.process_time()
            with Peak() as peak:
                response = post(body)
            cpus.append(time.process_time() - cpu)
            peaks.append(peak.growth_mb)
        status = str(response.status_code)  # type: ignore[attr-defined]
        if response.status_code != 200:  # type: ignore[attr-defined]
            status += " " + str(response.json().get("detail", {}).get("status"))  # type: ignore[attr-defined]
        billed = billed_of(response, body)
        return statistics.median(cpus) * 1000 / billed, max(peaks), status, billed

    def billed_of(response: object, body: dict[str, object]) -> int:
        """What the platform billed (its history row: dictionaries bill the spoken text), else the text's length."""
        from tts.models import SynthesisRecord

        item = response.get("history-item-id") if response.status_code == 200 else None  # type: ignore[attr-defined]
        row = SynthesisRecord.objects.filter(pk=item).first() if item else None
        return row.characters if row is not None else len(str(body["text"]))

    def plain(n: int) -> tuple[float, float]:
        if n not in plain_cache:
            per_char, mb, _, _ = measure({"text": prose(n)})
            plain_cache[n] = (per_char, mb)
        return plain_cache[n]

    out = []
    for name, body in rows:
        per_char, mb, status, n = measure(body)
        base, base_mb = plain(n)
        out.append((name, n, per_char, mb, status, base, base_mb))
        print(f"{name}: {per_char:.2f} ms/char ({base:.2f} plain), {mb:.1f} MB, {status}", file=sys.stderr, flush=True)
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {args.rounds} round(s)\n")
    print(
        "| field: worst request | billed chars | CPU ms / billed char | plain, same length | ratio | "
        "RSS growth MB (plain) | answer |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, n, per_char, mb, status, base, base_mb in out:
        ratio = per_char / base if base else float("nan")
        print(f"| {name} | {n} | {per_char:.2f} | {base:.2f} | {ratio:.2f}x | {mb:.1f} ({base_mb:.1f}) | {status} |")


if __name__ == "__main__":
    main()
