"""manage.py import_piper_voice PATH.onnx [--config PATH.json] [--activate]"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tts.catalogue import VoiceImportError, import_piper_voice
from tts.models import ModelVersion


class Command(BaseCommand):
    help = "Import a Piper voice (.onnx + .onnx.json) as a model version with one voice per speaker."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("model_path")
        parser.add_argument("--config", help="voice config (default: MODEL_PATH.json)")
        parser.add_argument("--model-id", help="the model's public id (default: from the file name)")
        parser.add_argument("--voice-id", help="voice id (single speaker) or prefix (multi-speaker)")
        parser.add_argument(
            "--engine", choices=[c for c, _ in ModelVersion.Engine.choices], default=ModelVersion.Engine.PIPER_ONNX
        )
        parser.add_argument("--activate", action="store_true", help="make this version serve its model")
        parser.add_argument("--preload", action="store_true", help="load and warm it at start-up")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = import_piper_voice(
                options["model_path"],
                options["config"],
                model_id=options["model_id"],
                voice_id=options["voice_id"],
                engine=options["engine"],
                activate=options["activate"],
                preload=options["preload"],
            )
        except VoiceImportError as exc:
            raise CommandError(exc.for_shell()) from exc
        mv = result.model_version
        verb = "Imported" if result.created else "Already imported:"
        self.stdout.write(
            f"{verb} {mv.model_id} version {mv.version} ({mv.status}, {mv.engine}, "
            f"{mv.sample_rate} Hz, {mv.num_speakers} speaker(s))"
        )
        for voice in result.voices:
            self.stdout.write(f"  voice {voice.voice_id}: {voice.name} [{voice.language}]")
