"""The reference endpoints' speaker table (``/api/tts``, ``/tts``), with its default rows."""

from django.db import migrations, models

# CosyVoice-300M-SFT's speakers and the reference articles' own names, with the Kokoro voices that
# stand for them (docs/api.md); an operator changes them in the admin. No Cantonese or Korean voice here.
DEFAULT_SPEAKERS = [
    ("中文女", "zf_xiaobei", "CosyVoice SFT: Mandarin, female"),
    ("中文男", "zm_yunjian", "CosyVoice SFT: Mandarin, male"),
    ("英文女", "af_heart", "CosyVoice SFT: English, female"),
    ("英文男", "am_michael", "CosyVoice SFT: English, male"),
    ("日语男", "jm_kumo", "CosyVoice SFT: Japanese, male"),
    ("粤语女", "", "CosyVoice SFT: Cantonese, female (no Cantonese voice here)"),
    ("韩语女", "", "CosyVoice SFT: Korean, female (no Korean voice here)"),
    ("xiaoyu", "zf_xiaoyi", "the CosyVoice WebUI article's example speaker"),
    ("female_01", "zf_xiaoxiao", "the CosyVoice-300M Lite article's default speaker"),
    ("male_01", "zm_yunxi", "the CosyVoice-300M Lite article's example speaker"),
]


def add_default_speakers(apps, schema_editor):
    ReferenceSpeaker = apps.get_model("tts", "ReferenceSpeaker")
    for name, voice_id, note in DEFAULT_SPEAKERS:
        ReferenceSpeaker.objects.get_or_create(name=name, defaults={"voice_id": voice_id, "note": note})


class Migration(migrations.Migration):
    dependencies = [
        ("tts", "0010_wyoming_source"),
    ]

    operations = [
        migrations.CreateModel(
            name="ReferenceSpeaker",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", models.CharField(max_length=100, unique=True)),
                (
                    "voice_id",
                    models.CharField(
                        blank=True, help_text="blank: no voice here (the request is a 400)", max_length=64
                    ),
                ),
                ("note", models.CharField(blank=True, max_length=200)),
            ],
            options={
                "ordering": ["name"],
            },
        ),
        migrations.RunPython(add_default_speakers, migrations.RunPython.noop),
    ]
