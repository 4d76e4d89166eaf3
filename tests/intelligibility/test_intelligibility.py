"""What the voices say is what the text says: one or two sentences per language, heard by Whisper base.

The subset of the intelligibility set (``cases.py``, ``subset``: the voice each
is said with) through the REST route, seeded, so the same audio is heard each
run; Whisper (``recognizer.py``, joined from its wheels, offline) writes down
what it hears and ``scoring.py`` compares it with what a listener should hear.
Each sentence must stay within its language's bound: 15 % (the issue's bound
for any sentence) where the recognizer hears natural speech well, looser where
it does not (Whisper base in Portuguese, and in Hindi, which it mostly cannot
write: there the letters are compared, not the words). The whole set, on
every voice, is ``bench/bench_intelligibility.py``'s.

The recognizer is loaded once for the module (1 s, about 330 MB) and let go after it.
"""

from __future__ import annotations

import ctypes
import gc
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import TenantCtx
from tests.intelligibility.cases import CASES, Case
from tests.intelligibility.recognizer import load_model, transcribe
from tests.intelligibility.scoring import Score, letter_error, score
from tts.models import SynthesisRecord, Voice

SUBSET = [case for case in CASES if case.subset]
# The most error a sentence may have; measured in docs/benchmarks.md (most are at 0). Hindi's is
# Whisper base's own weakness in Hindi, and it moves with the CPU the recognizer runs on (its int8
# kernels): the same audio scored under 0.5 in CI and 0.55 on a dev VM. 0.65 still fails a voice
# that says nothing, another language or noise (0.9 and above).
BOUNDS = {"zh": 0.15, "ja": 0.15, "en": 0.15, "es": 0.15, "fr": 0.15, "it": 0.15, "pt": 0.15, "hi": 0.65}


@pytest.fixture(scope="module")
def whisper() -> Iterator[Any]:
    model = load_model(cpu_threads=2)
    yield model
    del model
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def heard(case: Case, samples: np.ndarray, said: str) -> Score:
    if case.language == "hi":
        return letter_error(case.reference, said, case.language)
    return score(case.language, case.reference, said)


@pytest.mark.slow
@pytest.mark.parametrize("case", SUBSET, ids=[f"{case.id}-{case.subset}" for case in SUBSET])
def test_it_is_heard_as_written(tenant_a: TenantCtx, joe: Voice, kokoro: Voice, whisper: Any, case: Case) -> None:
    response = tenant_a.client().post(
        f"/v1/text-to-speech/{case.subset}?output_format=pcm_16000",
        {"text": case.text, "language_code": case.language, "seed": 7},
        format="json",
    )
    assert response.status_code == 200, response.content
    samples, rate = decode_audio(response.content, "pcm_16000")
    # A Chinese or Japanese character is a syllable or more; a Latin letter a fraction of one.
    cjk = case.language in ("zh", "ja")
    assert_speech(samples, rate, expected_rate=16000, text=case.text, ms_per_char=200 if cjk else 60, tolerance=0.7)
    said = transcribe(whisper, samples, rate, case.language)
    result = heard(case, samples, said)
    assert result.rate <= BOUNDS[case.language], (
        f"{case.subset} said {case.text!r}; Whisper heard {said!r}: {result.errors} errors in {result.units} "
        f"({result.reference!r} vs {result.hypothesis!r})"
    )
    record = SynthesisRecord.objects.get(pk=response["history-item-id"])
    assert record.status == "success" and record.voice_id == case.subset
