"""The admin's menu says "Pronunciation dictionaries" (no schema change)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("tts", "0011_reference_speakers"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="pronunciationdictionary",
            options={"ordering": ["-created_at"], "verbose_name_plural": "pronunciation dictionaries"},
        ),
    ]
