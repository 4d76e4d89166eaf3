"""manage.py fetch_kokoro_voices: kokoro-js 1.2.1's 54 voice files from the npm registry, checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tts.inference.kokoro_voices import SPEC, KokoroVoicesError, fetch, verified_dir, voice_names


class Command(BaseCommand):
    help = (
        f"Fetch {SPEC} with 'npm pack' (no install, no scripts: only its voices/*.bin and LICENSE are "
        "extracted), each file checked against the SHA-256 committed in tts/inference/data/. "
        "Does nothing when the checked files are already there."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dest", default=str(settings.TTS_KOKORO_VOICES_DIR), help="directory (default TTS_KOKORO_VOICES_DIR)"
        )
        parser.add_argument("--npm", default="npm", help="the npm executable")

    def handle(self, *args: Any, **options: Any) -> None:
        dest = Path(options["dest"])
        already = verified_dir(dest / f"{SPEC.replace('@', '-')}") is not None
        try:
            target = fetch(dest, npm=options["npm"])
        except KokoroVoicesError as exc:
            raise CommandError(str(exc)) from exc
        verb = "Checked" if already else "Fetched and checked"
        self.stdout.write(f"{verb} {SPEC}: {len(voice_names())} voices in {target}")
