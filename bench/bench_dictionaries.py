"""Pronunciation dictionaries: what a hostile tenant's dictionaries cost one request.

A benchmark, not a test. In this process (Django's test client, SQLite in a
temporary directory, no Redis, the audio cache off so every request reaches
the dictionaries), it measures wall and CPU seconds (``time.process_time``:
every thread of the process) of:

* ``plain``: ``POST /v1/text-to-speech/joe`` of a 1-character text, no dictionary;
* ``15000 rules``: the same text with 3 locators of 5,000 alias rules each
  (issue #24: 6.0 s of CPU when every rule was compiled per request); the
  first request compiles, the later ones find the compiled rules cached;
* ``refused, 15000 rules``: the same request from a tenant already at its rate
  limit (429): what a refusal pays for the dictionaries;
* ``5-rule chain``: a 468-byte dictionary whose aliases name each other
  (``w0`` -> ten ``w1`` -> ...), text ``w0``: applied one after another it
  became 300,000 characters (a 413 after 4.1 s); applied in one pass it is the
  29 characters of the first alias;
* ``expansion over the bound``: 1,600 ``w0`` (4,799 characters) with a
  dictionary of the chain's first rule alone (46,400 characters once
  applied): refused while applying, with a 413 naming the dictionary;
* ``matching alone`` (this branch's matcher, no request): its worst case, 3
  sets whose strings have every length up to the cap and all start like the
  text, so that every length is tried at every position of 5,000 characters.

Each row is the median of ``--rounds`` requests (the first of the cached
row is shown on its own). Usage::

    .venv/bin/python bench/bench_dictionaries.py [--rounds 5] [--rows refused chain]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable

from in_process import bench_tenant, setup_with_joe

URL = "/v1/text-to-speech/joe?output_format=pcm_16000"


def rules_of(n: int, tag: str) -> list[dict[str, object]]:
    return [{"type": "alias", "string_to_replace": f"{tag}term{i:05d}", "alias": f"spoken {tag} {i}"} for i in range(n)]


CHAIN = [{"type": "alias", "string_to_replace": f"w{k}", "alias": " ".join([f"w{k + 1}"] * 10)} for k in range(5)]


def timed(call: Callable[[], object]) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = call()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rows", nargs="*", default=[], help="only the rows whose names contain one of these")
    args = parser.parse_args()
    setup_with_joe("bench-dictionaries")
    tenant, key = bench_tenant("bench-dict")
    busy_tenant, busy_key = bench_tenant("bench-dict-busy", requests_per_minute=1)  # no rate left
    import json

    from django.test import Client

    from tts.pronunciation.dictionaries import dictionary_create

    client = Client(HTTP_XI_API_KEY=key)
    busy = Client(HTTP_XI_API_KEY=busy_key)

    def post(c: Client, body: dict[str, object]) -> object:
        return c.post(URL, json.dumps(body), content_type="application/json")

    def locators(t: object, n: int) -> list[dict[str, str]]:
        made = [dictionary_create(tenant=t, name=f"big{i}", rules=rules_of(5000, f"d{i}"))[0] for i in range(n)]
        return [{"pronunciation_dictionary_id": d.dictionary_id} for d in made]

    big = locators(tenant, 3)
    busy_big = locators(busy_tenant, 3)
    chain = dictionary_create(tenant=tenant, name="chain", rules=CHAIN)[0]
    chain_loc = [{"pronunciation_dictionary_id": chain.dictionary_id}]
    single = dictionary_create(tenant=tenant, name="single", rules=CHAIN[:1])[0]
    print(f"chain dictionary: {len(json.dumps(CHAIN))} bytes of rules", file=sys.stderr)
    post(client, {"text": "Warm up the engine."})

    rows: list[tuple[str, float, float, str]] = []

    def measure(
        name: str, c: Client, body: dict[str, object], rounds: int, before: Callable[[], object] = list
    ) -> None:
        if args.rows and not any(part in name for part in args.rows):
            return
        runs = []
        for _ in range(rounds):
            before()
            runs.append(timed(lambda: post(c, body)))
        response = runs[-1][2]
        status = f"{response.status_code}"  # type: ignore[attr-defined]
        if response.status_code != 200:  # type: ignore[attr-defined]
            detail = response.json().get("detail", {})  # type: ignore[attr-defined]
            status += f" {detail.get('status')}"
        else:
            status += f", {len(response.content)} bytes"  # type: ignore[attr-defined]
        rows.append((name, statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs), status))
        print(f"{name}: wall {rows[-1][1]:.3f} s, CPU {rows[-1][2]:.3f} s, {status}", file=sys.stderr, flush=True)

    measure("plain, 1 character", client, {"text": "a"}, args.rounds)
    measure("15000 rules, first request", client, {"text": "a", "pronunciation_dictionary_locators": big}, 1)
    measure("15000 rules", client, {"text": "a", "pronunciation_dictionary_locators": big}, args.rounds)
    refused = {"text": "a", "pronunciation_dictionary_locators": busy_big}
    # Each round right after the busy tenant's one request of the minute.
    measure("refused (rate), 15000 rules", busy, refused, args.rounds, before=lambda: post(busy, {"text": "a"}))
    measure("5-rule chain, text 'w0'", client, {"text": "w0", "pronunciation_dictionary_locators": chain_loc}, 1)
    over = {
        "text": " ".join(["w0"] * 1600),
        "pronunciation_dictionary_locators": [{"pronunciation_dictionary_id": single.dictionary_id}],
    }
    measure("expansion over the bound (4,799 chars)", client, over, 1)

    try:  # this branch's matcher alone (absent before it)
        from tts.text.lexicon import Rule
        from tts.text.lexicon_match import CompiledRules, apply_compiled
    except ImportError:
        pass
    else:
        # The worst this matcher meets: in each of 3 sets a string of every length the cap allows,
        # all of them prefixes of the text but their last character, so every length is tried.
        cap = 100
        hostile = [Rule("alias", "a" * k + "b", alias="x", word_boundaries=False) for k in range(1, cap)]
        sets = [CompiledRules(hostile) for _ in range(3)]
        wall, cpu, _ = timed(lambda: apply_compiled("a" * 5000, sets, max_chars=5000))
        if not args.rows or any(part in "matching" for part in args.rows):
            rows.append((f"matching alone: 5,000 'a', 3 sets of {cap - 1} lengths (worst case)", wall, cpu, "-"))

    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; median of {args.rounds} unless 1 request\n")
    print("| request | wall s | CPU s | answer |")
    print("|---|---|---|---|")
    for name, wall, cpu, status in rows:
        print(f"| {name} | {wall:.3f} | {cpu:.3f} | {status} |")


if __name__ == "__main__":
    main()
