"""Pronunciation dictionaries' bounds: each version's size in bytes (the tenant's storage bound)
and the history items that used a version (such versions are never pruned)."""

import json

import django.db.models.deletion
from django.db import migrations, models


def measure_versions(apps, schema_editor):
    Version = apps.get_model("tts", "PronunciationDictionaryVersion")
    for version in Version.objects.only("pk", "rules").iterator(chunk_size=100):
        size = len(json.dumps(version.rules, ensure_ascii=False).encode())
        Version.objects.filter(pk=version.pk).update(rule_bytes=size)


class Migration(migrations.Migration):
    dependencies = [
        ("tts", "0012_pronunciation_dictionary_plural"),
    ]

    operations = [
        migrations.AddField(
            model_name="pronunciationdictionaryversion",
            name="rule_bytes",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(measure_versions, migrations.RunPython.noop),
        migrations.CreateModel(
            name="PronunciationDictionaryUse",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "record",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="tts.synthesisrecord"
                    ),
                ),
                (
                    "version",
                    models.ForeignKey(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="uses",
                        to="tts.pronunciationdictionaryversion",
                    ),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("version", "record"), name="pdict_use_version_record")],
            },
        ),
    ]
