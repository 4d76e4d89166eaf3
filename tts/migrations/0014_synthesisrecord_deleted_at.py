"""A deleted history item keeps its row, emptied, so usage counts what was billed (#40 item 6)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tts", "0013_pronunciation_limits"),
    ]

    operations = [
        migrations.AddField(
            model_name="synthesisrecord",
            name="deleted_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
