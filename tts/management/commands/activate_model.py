"""manage.py activate_model: activate, preload or retire a model version from the shell.

Does what the admin's actions do; every web and worker process picks the
change up within ``TTS_MODEL_POLL_SECONDS`` (see tts/catalogue/lifecycle.py)::

    manage.py activate_model en_US-joe-medium            # newest version becomes active
    manage.py activate_model en_US-joe-medium --model-version 2 --preload
    manage.py activate_model en_US-joe-medium --model-version 1 --retire
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tts.catalogue import activate_model_version, retire_model_version
from tts.models import ModelVersion


def _newest(versions: list[ModelVersion]) -> ModelVersion:
    # Numeric versions compare as numbers ("10" after "9"); others by creation time.
    return max(versions, key=lambda v: (int(v.version) if v.version.isdigit() else -1, v.created_at))


class Command(BaseCommand):
    help = "Activate (default), preload or retire a version of a model; every process follows within seconds."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("model_id", help="the model's id, e.g. en_US-joe-medium")
        parser.add_argument("--model-version", help="which version (default: the newest)")
        action = parser.add_mutually_exclusive_group()
        action.add_argument("--retire", action="store_true", help="retire the version instead of activating it")
        action.add_argument("--no-activate", action="store_true", help="only change --preload/--no-preload")
        preload = parser.add_mutually_exclusive_group()
        preload.add_argument("--preload", dest="preload", action="store_true", default=None)
        preload.add_argument("--no-preload", dest="preload", action="store_false")

    def handle(self, *args: Any, **options: Any) -> None:
        model_id: str = options["model_id"]
        versions = list(ModelVersion.objects.filter(model_id=model_id))
        if not versions:
            known = sorted(set(ModelVersion.objects.values_list("model_id", flat=True)))
            raise CommandError(f"No model '{model_id}'. Known models: {', '.join(known) or 'none'}.")
        if options["model_version"]:
            matching = [v for v in versions if v.version == options["model_version"]]
            if not matching:
                have = ", ".join(sorted(v.version for v in versions))
                raise CommandError(f"Model '{model_id}' has no version '{options['model_version']}' (has: {have}).")
            version = matching[0]
        else:
            version = _newest(versions)

        if options["preload"] is not None and options["preload"] != version.preload:
            ModelVersion.objects.filter(pk=version.pk).update(preload=options["preload"])
            version.refresh_from_db()
        if options["retire"]:
            retire_model_version(version)
        elif not options["no_activate"]:
            activate_model_version(version)
        self.stdout.write(
            f"{version.model_id} v{version.version}: {version.status}"
            f"{', preloaded' if version.preload else ''} (sha256 {version.sha256[:12]}...)"
        )
