"""History audio goes through Django's storage API: local files by default, an
S3-compatible bucket when AUDIO_S3_BUCKET is set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.core.files.storage import FileSystemStorage, default_storage

from tests.fixtures import TenantCtx
from tts.models import SynthesisRecord, Voice

ROOT = Path(__file__).resolve().parents[2]


def test_it_stores_audio_as_local_files_by_default(tenant_a: TenantCtx, joe: Voice) -> None:
    assert isinstance(default_storage, FileSystemStorage)
    url = "/v1/text-to-speech/joe?output_format=wav_22050"
    response = tenant_a.client().post(url, {"text": "Kept."}, format="json")
    record = SynthesisRecord.objects.get(pk=response["history-item-id"])
    stored = Path(record.audio.path)
    assert stored.is_file() and stored.is_relative_to(Path(settings.MEDIA_ROOT))
    assert stored.read_bytes() == response.content


def test_it_uses_an_s3_compatible_bucket_when_one_is_set() -> None:
    script = (
        "import django, json; django.setup()\n"
        "from django.core.files.storage import storages; s = storages['default']\n"
        "print(json.dumps({'cls': type(s).__module__ + '.' + type(s).__name__, 'bucket': s.bucket_name,"
        " 'endpoint': s.endpoint_url, 'region': s.region_name}))\n"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "ttsplatform.settings",
        "AUDIO_S3_BUCKET": "tts-audio",
        "AUDIO_S3_ENDPOINT_URL": "https://minio.internal:9000",
        "AUDIO_S3_REGION": "eu-west-1",
    }
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    storage = json.loads(out.stdout.strip().splitlines()[-1])
    assert storage == {
        "cls": "storages.backends.s3.S3Storage",
        "bucket": "tts-audio",
        "endpoint": "https://minio.internal:9000",
        "region": "eu-west-1",
    }
