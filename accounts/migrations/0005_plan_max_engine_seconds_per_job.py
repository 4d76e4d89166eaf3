import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0004_plan_max_engine_seconds_per_request"),
    ]

    operations = [
        migrations.AddField(
            model_name="plan",
            name="max_engine_seconds_per_job",
            field=models.FloatField(blank=True, null=True, validators=[django.core.validators.MinValueValidator(0.1)]),
        ),
    ]
