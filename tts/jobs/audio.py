"""A job's audio in storage: one file per finished chunk while it runs, one
file (or a zip for a batch) when it is done.

Chunks are raw s16le at the model's rate, named by their index, so a worker
that takes over a job after a crash finds every finished chunk where the last
one left it and overwrites a chunk that was half written. Everything goes
through Django's storage API, so workers on other machines share it when
storage is S3 (``AUDIO_S3_BUCKET``).
"""

from __future__ import annotations

import tempfile
import zipfile
from collections.abc import Callable, Iterator
from typing import IO

import numpy as np
from django.core.files import File
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from tts.audio.encode import make_encoder, wav_header
from tts.audio.formats import OutputFormat
from tts.models import Job

_SPOOL_BYTES = 8 * 1024 * 1024


def job_dir(job: Job) -> str:
    return f"jobs/{job.tenant_id}/{job.pk}"


def chunk_name(job: Job, index: int) -> str:
    return f"{job_dir(job)}/chunk-{index:06d}.s16"


def chunk_save(job: Job, index: int, pcm: np.ndarray) -> None:
    """Store one chunk's float PCM; a leftover from a crashed attempt is replaced."""
    name = chunk_name(job, index)
    if default_storage.exists(name):
        default_storage.delete(name)
    data = np.rint(np.clip(pcm, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()
    saved = default_storage.save(name, ContentFile(data))
    if saved != name:  # another writer raced us to the same name; never assemble from a stray copy
        default_storage.delete(saved)
        raise RuntimeError(f"chunk {name} was written by two workers at once")


def chunk_load(job: Job, index: int) -> np.ndarray:
    with default_storage.open(chunk_name(job, index), "rb") as fh:
        data = fh.read()
    return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0


def chunks_delete(job: Job) -> None:
    for index in range(job.total_chunks):
        name = chunk_name(job, index)
        if default_storage.exists(name):
            default_storage.delete(name)


def _encode_chunks(
    indexes: list[int], job: Job, fmt: OutputFormat, model_rate: int, out: IO[bytes], tick: Callable[[], None]
) -> OutputFormat:
    """Encode the chunks into ``out`` piece by piece; exact wav/flac headers at the end."""
    start = out.tell()
    # Hours of audio: FLAC streams into the file too, and its header is patched below.
    with make_encoder(fmt, model_rate, seekable_output=True) as encoder:
        for index in indexes:
            out.write(encoder.feed(chunk_load(job, index)))
            tick()
        out.write(encoder.finish())
        resolved = encoder.format
        end = out.tell()
        if resolved.codec == "wav":
            out.seek(start)
            out.write(wav_header(resolved.sample_rate, end - start - 44))
            out.seek(end)
        elif resolved.codec == "flac":
            # STREAMINFO's total sample count sits in the first block; seal() patches it.
            out.seek(start)
            head = out.read(64)
            out.seek(start)
            out.write(encoder.seal(head))
            out.seek(end)
    return resolved


def _items(job: Job) -> Iterator[tuple[int, list[int]]]:
    """(item index, its chunk indexes) in order."""
    by_item: dict[int, list[int]] = {}
    for index, chunk in enumerate(job.plan):
        by_item.setdefault(int(chunk["item"]), []).append(index)
    for item in range(job.item_count):
        yield item, by_item.get(item, [])


def assemble(
    job: Job, fmt: OutputFormat, model_rate: int, tick: Callable[[], None] = lambda: None
) -> tuple[str, OutputFormat]:
    """Encode the finished chunks into the job's output file; its storage name and resolved format.

    ``tick`` is called after each chunk (the runner renews its claim: encoding hours of audio takes a while).
    """
    with tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES) as out:
        if job.kind == Job.Kind.BATCH:
            resolved = fmt
            with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as zf:
                for item, indexes in _items(job):
                    with tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES) as one:
                        resolved = _encode_chunks(indexes, job, fmt, model_rate, one, tick)
                        one.seek(0)
                        with zf.open(f"{item + 1:05d}.{resolved.extension}", "w") as entry:
                            while block := one.read(1024 * 1024):
                                entry.write(block)
            name = f"{job_dir(job)}/audio.zip"
        else:
            resolved = _encode_chunks(list(range(job.total_chunks)), job, fmt, model_rate, out, tick)
            name = f"{job_dir(job)}/audio.{resolved.extension}"
        out.seek(0)
        if default_storage.exists(name):
            default_storage.delete(name)
        return default_storage.save(name, File(out, name=name)), resolved
