"""The one owner of a synthesis, from admission to its last byte.

A :class:`SynthesisRun` is made by ``synthesis_prepare`` for every entry point
(whole-file REST, chunked and SSE streams, each WebSocket utterance, each job)
once the request was admitted and its characters reserved, in the same
transaction as its pending history record. It holds everything the synthesis
took and must give back: the rate-limit admission (a tenant concurrency slot,
an engine ticket), the quota reservation, the history record, the encoder and
the audio sink, the character timeline.

Its :meth:`finish` is the only code that refunds characters, writes a
record's final state or releases a slot or ticket. It is idempotent and
thread-safe: the first call decides the outcome, later ones do nothing, so
every exit path (success, engine failure, a client that went away, a stream
closed before it started) may call it without counting on the others.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from django.conf import settings
from django.utils import timezone

from accounts.quota import Reservation, refund_characters
from accounts.ratelimit import LimitExceeded
from tts.audio.encode import StreamEncoder
from tts.errors import SynthesisError
from tts.inference.engine import ModelSpec
from tts.inference.pacing import StreamLead
from tts.inference.work_pool import CancelSignal
from tts.models import ModelVersion, SynthesisRecord, Voice
from tts.pronunciation import AppliedDictionaries
from tts.synthesis.alignment.timeline import AlignmentTimeline
from tts.synthesis.alignment.timestamps import SegmentContext
from tts.synthesis.alignment.voice_segments import TurnSpan
from tts.synthesis.cache.audio import CachedAudio
from tts.synthesis.engine_time.admission import SynthesisAdmission
from tts.synthesis.engine_time.budget import EngineBudget
from tts.synthesis.request import SynthesisRequest
from tts.synthesis.runs import metrics
from tts.synthesis.runs.record_audio import AudioSink, store_record_audio
from tts.text.segment import Segment

logger = logging.getLogger(__name__)

Status = SynthesisRecord.Status


@dataclass(eq=False)
class SynthesisRun:
    request: SynthesisRequest
    voice: Voice
    model_version: ModelVersion
    spec: ModelSpec
    segments: list[Segment]
    characters: int
    reservation: Reservation
    record: SynthesisRecord
    started: float
    #: Rate-limit, concurrency and engine places this synthesis holds (released when it ends).
    admission: SynthesisAdmission = field(default_factory=SynthesisAdmission)
    first_byte_at: float | None = None
    audio_seconds: float = 0.0
    done_segments: int = 0
    encoder: StreamEncoder | None = None
    #: What was sent, kept for the history item's file (made by the byte iterator on a miss).
    sink: AudioSink | None = None
    #: Where the byte iterator takes its segments from, if not ``segments``: a live
    #: stream (WebSocket) hands them out as text arrives, appending each to
    #: ``segments`` (and its characters to the reservation) first, so the refund
    #: of unspent characters stays right.
    segment_source: Iterable[Segment] | None = None
    cache_key: str | None = None
    #: Character timings of what was synthesized (or the cached entry's), for with-timestamps and history.
    timeline: AlignmentTimeline | None = None
    #: Request stitching: the text read before the first segment and after the last (``stitching``).
    context: SegmentContext | None = None
    #: The text the segments were cut from, when pronunciation dictionaries rewrote the request's.
    spoken_text: str | None = None
    #: The pronunciation dictionaries the request uses (a live stream applies them to each piece).
    dictionaries: AppliedDictionaries | None = None
    #: The cached audio that answers this request, when it was a cache hit.
    cached: CachedAudio | None = None
    #: A whole-file cache hit: the record was written once, in its final state, with the
    #: quota; nothing is left to synthesize or record.
    answered: bool = False
    #: The whole file is sent at the end (``synthesis_create``): until it is, nothing was
    #: delivered, so a failure refunds every character.
    whole: bool = False
    #: Characters each segment costs (the request's characters spread over its segments by
    #: length, exactly), parallel to ``segments``: what a failure after some segments keeps.
    segment_costs: list[int] = field(default_factory=list)
    #: Set once :meth:`finish` ran: the status it wrote.
    outcome: str | None = None
    #: The sealed audio of a successful synthesis whose sink kept it (history file, cache, whole answer).
    audio: bytes | None = None
    #: For runs that several processes may end (a job: its worker, the reaper, a cancel):
    #: the conditional update that makes this one the winner. Called by :meth:`finish` with
    #: the status; if it returns False someone else ended the synthesis, and this run only
    #: gives back what this process holds (its admission), never the quota or the record.
    claim: Callable[[str], bool] | None = None
    #: Set when nobody waits for this synthesis any more (its client went away, or it ended
    #: otherwise than in success): engine work it queued and has not started is dropped,
    #: and no further segment, sentence or window starts (``tts.inference.work_pool``).
    stop: CancelSignal = field(default_factory=CancelSignal, repr=False)
    #: A stream's lead over playback (``run_stream`` sets it): windowed engines decode small
    #: windows only while it is within ``TTS_STREAM_LEAD_MARGIN_S`` (``tts.inference.pacing``).
    pace: StreamLead | None = field(default=None, repr=False)
    #: The engine-seconds this run may still spend, charged as its audio is made (``engine_budget``).
    engine_budget: EngineBudget | None = field(default=None, repr=False)
    #: A dialogue: the voice of each turn (``Segment.turn``; ``voice`` is the first's) and where each
    #: turn is in the alignment's characters (its voice segments).
    turn_voices: tuple[Voice, ...] = ()
    turn_spans: tuple[TurnSpan, ...] = ()
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # --- accounting ----------------------------------------------------------

    def __post_init__(self) -> None:
        if not self.segment_costs:
            self.segment_costs = split_cost(self.characters, self.segments)

    def voice_for(self, segment: Segment) -> Voice:
        """The voice that speaks ``segment``: its dialogue turn's, else the request's one voice."""
        if segment.turn is not None and self.turn_voices:
            return self.turn_voices[segment.turn]
        return self.voice

    def spent_characters(self) -> int:
        """Characters of the segments synthesized (and delivered) so far."""
        if self.whole:
            return 0
        return min(self.characters, sum(self.segment_costs[: self.done_segments]))

    def add_piece(self, text: str, segments: list[Segment], reservation: Reservation) -> bool:
        """Take over a later piece of a live stream (WebSocket text) and its reservation.

        False if the run has already ended: the piece's characters are refunded here.
        """
        with self._lock:
            if self.outcome is None:
                self.segments.extend(segments)
                self.segment_costs.extend(split_cost(reservation.characters, segments))
                self.characters += reservation.characters
                self.reservation.characters += reservation.characters
                reservation.characters = 0
                reservation.settled = True
                # The row holds what is reserved: if this process dies, the reaper refunds the row's
                # characters (recovery.records_reap_stale), every piece's included.
                self.record.characters = self.characters
                fields: dict[str, object] = {"characters": self.characters}
                if self.request.enable_logging:
                    self.record.text += text
                    fields["text"] = self.record.text
                SynthesisRecord.objects.filter(pk=self.record.pk).update(**fields)
                return True
        refund_characters(reservation)
        return False

    def mark_first_byte(self) -> None:
        if self.first_byte_at is None:
            self.first_byte_at = time.monotonic()

    # --- progress: the stages change the run's state through these, never its fields -------------

    def serve_cached(self, encoder: StreamEncoder, timeline: AlignmentTimeline | None) -> None:
        """A cache hit answers: the entry's encoder (format, duration) and its timings, if kept."""
        self.encoder = encoder
        self.timeline = timeline
        self.record.sample_rate = encoder.format.sample_rate

    def cached_whole(self, duration_s: float) -> None:
        """The cache entry went out whole: every segment counts as spoken."""
        self.done_segments = len(self.segments)
        self.audio_seconds = duration_s

    def cached_cut_short(self) -> None:
        """A hit cut short: nothing of it is billed."""
        self.done_segments = 0

    def not_cached(self) -> None:
        """A live stream found an entry it cannot use (its text is still arriving): it synthesizes."""
        self.cached = None
        self.record.cache_hit = False
        SynthesisRecord.objects.filter(pk=self.record.pk).update(cache_hit=False)

    def start_encoding(self, encoder: StreamEncoder, sink: AudioSink, timeline: AlignmentTimeline) -> None:
        """The engine's audio goes out through ``encoder``; ``sink`` keeps what is sent; ``timeline`` times it."""
        self.encoder = encoder
        self.sink = sink
        self.timeline = timeline
        self.record.sample_rate = encoder.format.sample_rate

    def made(self, seconds: float) -> None:
        """``seconds`` more audio were made."""
        self.audio_seconds += seconds

    def segment_spoken(self) -> None:
        """One more segment went out (any of its audio): its characters are spent."""
        self.done_segments += 1

    def paced(self, pace: StreamLead) -> None:
        """A stream's lead over its listener (``run_stream``)."""
        self.pace = pace

    def live(self, segments: Iterable[Segment]) -> None:
        """A live utterance hands out its segments as its text arrives (``LiveUtterance``)."""
        self.segment_source = segments

    def reserved(self, reservation: Reservation) -> None:
        """The characters this run spends, reserved with its record (``open_run``)."""
        self.reservation = reservation

    def take_over_job(
        self, *, claim: Callable[[str], bool], done_segments: int, audio_seconds: float, sample_rate: int
    ) -> None:
        """A job's run, made again from its row to end it: what its chunks made, and the conditional
        update that makes this process the one that ends it (``tts.jobs.runner.job_finish``)."""
        self.claim = claim
        self.done_segments = done_segments
        self.audio_seconds = audio_seconds
        self.record.sample_rate = sample_rate

    # --- the end -------------------------------------------------------------

    @property
    def finished(self) -> bool:
        return self.outcome is not None

    def finish(self, status: str, *, error_code: str = "", audio_saved: bool = False, written: bool = False) -> bool:
        """End the synthesis once: release, refund what was not spoken, write the record.

        ``status`` success keeps every reserved character; failed and cancelled
        refund those of the segments never synthesized. The record's audio file
        is made from the sink on success (or was already given to the record:
        ``audio_saved``, a cache hit's link). ``written``: the record was inserted
        in its final state already (a whole-file cache hit). Never raises into
        the caller's cleanup; True if this call ended it.
        """
        with self._lock:
            if self.outcome is not None:
                return False
            self.outcome = status
        success = status == Status.SUCCESS
        if not success:
            self.stop.set()  # what it still had queued for the engine is nobody's now
        try:
            won = self.claim is None or self.claim(status)
        except BaseException:
            with self._lock:
                self.outcome = None  # not ended (the database failed): the caller may try again
            raise
        try:
            self.admission.release(completed=success)
            if not won:
                self.outcome = "lost"  # ended by whoever won the claim
                return False
            if success or self._keeps_audio(status):
                self.seal_audio()  # the sink's one copy, sealed, for the record, the cache and a whole answer
            if not success:
                refund_characters(self.reservation, self.characters - self.spent_characters())
            if written:
                metrics.synthesis_finished(self.record, self.request.text)
            else:
                self._write_record(status, error_code=error_code, audio_saved=audio_saved)
        except Exception:
            logger.exception("could not finish synthesis %s", self.record.pk)
        finally:
            if self.sink is not None:
                self.sink.discard()
        return True

    def idle(self) -> None:
        """Nothing to synthesize until more text arrives (a WebSocket waiting for its client):
        give the tenant's slot and the engine ticket back; :meth:`resume` takes them again."""
        with self._lock:
            if self.outcome is None:
                self.admission.release()

    def resume(self) -> None:
        """Take a slot and an engine ticket again after :meth:`idle`; ``SynthesisError`` if refused."""
        with self._lock:
            if self.outcome is not None or self.admission.held:
                return
            try:
                self.admission.hold_slot(tenant=self.request.tenant)
                self.admission.admit_engine()
            except LimitExceeded as exc:
                self.admission.release()
                raise SynthesisError.from_limit(exc) from exc

    def suspend(self) -> None:
        """This process stops working on a synthesis that goes on elsewhere (a job put back
        in the queue): give back what this process holds; the quota and the record stay."""
        with self._lock:
            if self.outcome is not None:
                return
            self.outcome = "suspended"
        self.admission.release()

    def succeed(self, *, audio_saved: bool = False) -> bool:
        return self.finish(Status.SUCCESS, audio_saved=audio_saved)

    def fail(self, error_code: str) -> bool:
        return self.finish(Status.FAILED, error_code=error_code)

    def cancel(self) -> bool:
        """The client went away (or the stream closed before it started): refund what was not spoken."""
        return self.finish(Status.CANCELLED)

    # --- the record ----------------------------------------------------------

    def final_fields(self, status: str, *, error_code: str = "") -> list[str]:
        """Set the final-state fields of the record; returns their names (nothing is saved)."""
        record = self.record
        record.status = status
        record.error_code = error_code
        record.duration_s = round(self.audio_seconds, 3)
        record.latency_ms = int((time.monotonic() - self.started) * 1000)
        if self.first_byte_at is not None:
            record.ttfb_ms = int((self.first_byte_at - self.started) * 1000)
        success = status == Status.SUCCESS
        record.characters = self.characters if success else self.reservation.characters
        record.completed_at = timezone.now()
        fields = ["status", "sample_rate", "error_code", "duration_s", "latency_ms", "ttfb_ms", "characters"]
        fields.append("completed_at")
        keep = self.request.timestamps and self.request.enable_logging
        if success and self.timeline is not None and keep:
            # Kept for requests that asked for timestamps (about 30 bytes a character), and only
            # when the text may be logged: the alignment holds the text.
            record.alignment = self.timeline.as_json()
            fields.append("alignment")
        return fields

    def _keeps_audio(self, status: str) -> bool:
        """A cancelled run that asked to keep what it delivered (``keep_cancelled_audio``), and delivered some."""
        return status == Status.CANCELLED and self.request.keep_cancelled_audio and self.spent_characters() > 0

    def seal_audio(self) -> bytes | None:
        """The whole audio sent, with exact lengths in its headers (streams start with "unknown
        length" ones), read once from the sink; None if the sink did not keep it."""
        if self.audio is None and self.sink is not None and self.encoder is not None:
            data = self.sink.read_all()
            if data:
                self.audio = self.encoder.seal(data)
            self.sink.discard()  # one copy at a time: the sealed bytes replace the spool
        return self.audio

    def _write_record(self, status: str, *, error_code: str, audio_saved: bool) -> None:
        record = self.record
        fields = self.final_fields(status, error_code=error_code)
        try:
            store = self.request.enable_logging and settings.TTS_STORE_AUDIO
            data = self.audio if (status == Status.SUCCESS or self._keeps_audio(status)) and store else None
            if data and self.encoder is not None:
                store_record_audio(record, data, self.encoder.format.extension)
                fields.append("audio")
            elif audio_saved:
                fields.append("audio")
            record.save(update_fields=fields)
        except Exception:
            logger.exception("could not write history record %s", record.pk)
        finally:
            metrics.synthesis_finished(record, self.request.text)


def split_cost(characters: int, segments: list[Segment]) -> list[int]:
    """``characters`` spread over ``segments`` by text length, summing exactly to ``characters``."""
    total = sum(len(seg.text) for seg in segments)
    if not total:
        return [0] * len(segments)
    costs, running, before = [], 0, 0
    for seg in segments:
        running += len(seg.text)
        upto = round(characters * running / total)
        costs.append(upto - before)
        before = upto
    return costs
