"""The one synthesis pipeline every entry point uses (REST, streaming, WebSocket, OpenAI,
jobs, the playground, Wyoming), as named stages. No HTTP here.

Each stage is a function in its own module that takes the previous stage's value
(``tts.synthesis.stages.values``) and returns the next one:

1. parse (``parse``, called by the front ends): what the caller sent, checked,
   into a ``SynthesisRequest``;
2. resolve (``resolve.resolve``): the voice, its model version, the language,
   which dictionaries apply;
3. admit (``admit.admit``): the rate limits (and, with dictionaries to apply,
   the concurrency place) before any text work;
4. prepare (``prepare.prepare``): dictionaries applied, segments, context, the
   audio estimate checked;
5. cache (``lookup.look_up``): the entry, else a concurrency place and an
   engine ticket;
6. open the run (``open_run.open_run``): the pending record and the characters
   it spends, in one transaction;
7. engine (``engine``): segment by segment on the fair scheduler, first
   sentence first;
8. deliver (``deliver.synthesis_iter_bytes``): encoded bytes as they are made;
   the run refunds what was not spoken and writes the record's end.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import Any, cast

from tts.synthesis.alignment.voice_segments import voice_segments
from tts.synthesis.request import SynthesisRequest, SynthesisResult
from tts.synthesis.runs.run import SynthesisRun
from tts.synthesis.runs.shutdown import refuse_if_draining
from tts.synthesis.stages.admit import admit
from tts.synthesis.stages.deliver import synthesis_iter_bytes
from tts.synthesis.stages.lookup import look_up
from tts.synthesis.stages.open_run import open_run
from tts.synthesis.stages.prepare import prepare
from tts.synthesis.stages.resolve import resolve


def synthesis_prepare(req: SynthesisRequest, *, whole: bool = False) -> SynthesisRun:
    """Stages 2-6: resolve, admit, prepare, look up the cache and open the run.

    ``whole``: the caller wants the whole file at once (``synthesis_create``), not a
    stream; a cache hit is then answered here. Nothing is held when this raises.
    """
    started = time.monotonic()
    refuse_if_draining()
    admitted = admit(resolve(req))
    with admitted.released_on_error():
        found = look_up(prepare(admitted, streamed=not whole), whole=whole)
    return open_run(found, started=started)


def synthesis_create(req: SynthesisRequest) -> SynthesisResult:
    """Synthesize a whole request and return its bytes (the non-streaming path)."""
    run = synthesis_prepare(req, whole=True)
    if run.answered and run.cached is not None:
        return SynthesisResult(run.cached.audio, run.record, run.cached.output_format, alignment_of(run))
    gen = cast(Generator[bytes, None, None], synthesis_iter_bytes(run))
    try:
        for _ in gen:
            pass  # the run's sink keeps the one copy
    except BaseException:
        # Nothing was delivered: the run (whole) refunds every character.
        gen.close()
        run.cancel()
        raise
    audio = run.seal_audio() or b""  # exact lengths in wav/flac headers
    fmt = run.encoder.format if run.encoder is not None else req.output_format
    return SynthesisResult(audio=audio, record=run.record, output_format=fmt, alignment=alignment_of(run))


def alignment_of(run: SynthesisRun) -> dict[str, Any] | None:
    """The run's character tracks (``None`` without a timeline), and a dialogue's ``voice_segments``."""
    if run.timeline is None:
        return None
    alignment = run.timeline.as_json()
    if run.turn_spans:
        alignment["voice_segments"] = voice_segments(run.turn_spans, alignment.get("alignment"))
    return alignment
