"""What `make deploy-check` needs inside a deployment it checks, made with the platform's own services.

Piped into ``python manage.py shell`` inside a web container: a tenant (``CHECK_SLUG``, default
``deploy-check``) on a plan of its own (``CHECK_MONTHLY_CHARACTERS``: a quota the two-host check
fills exactly), an owner with a password for the dashboard, a superuser for the admin (once), an
API key for the SDKs and one for Wyoming. With ``CHECK_NEIGHBOURS=1`` also the two tenants of
bench/bench_neighbours.py (``--keys-from``): a noisy one within the free plan's limits (4 streams, 120
requests a minute; a monthly quota its floods never use up, so it floods to the end) and a quiet one on
a plan whose limits it never reaches, their keys and an English Kokoro voice, under "neighbours".
Prints them as one JSON line. The check runs it on a fresh database; a slug that exists is an error.
"""

import json
import os
import secrets

from django.contrib.auth import get_user_model

from accounts.keys import api_key_create
from accounts.models import Membership, Plan
from accounts.services import membership_add, tenant_create
from tts.models import ModelVersion, Voice

slug = os.environ.get("CHECK_SLUG", "deploy-check")
monthly = int(os.environ.get("CHECK_MONTHLY_CHARACTERS", "1000000"))
plan = Plan.objects.create(
    name=slug, monthly_character_limit=monthly, requests_per_minute=600, max_concurrent_streams=16
)
tenant = tenant_create(name=f"Check {slug}", slug=slug, plan=plan)
users = get_user_model()
password, admin_password = secrets.token_urlsafe(12), secrets.token_urlsafe(12)
owner = users.objects.create_user(username=f"{slug}-owner", password=password)
membership_add(tenant=tenant, user=owner, role=Membership.Role.OWNER)
if not users.objects.filter(username="check-admin").exists():
    users.objects.create_superuser(username="check-admin", password=admin_password, email="admin@example.com")
else:
    admin_password = ""
neighbours = None
if os.environ.get("CHECK_NEIGHBOURS") == "1":
    noisy = Plan.objects.create(name=f"{slug} noisy", monthly_character_limit=10**9)  # the free plan's limits
    quiet = Plan.objects.create(name=f"{slug} quiet", requests_per_minute=10**6, monthly_character_limit=10**9)
    kokoro = ModelVersion.objects.filter(engine="kokoro-onnx").values("model_id")
    english = Voice.objects.filter(model_id__in=kokoro, tenant=None, language__startswith="en").order_by("voice_id")
    neighbours = {
        "a": api_key_create(
            tenant=tenant_create(name=f"Noisy {slug}", slug=f"{slug}-noisy", plan=noisy), name="a"
        ).raw_key,
        "b": api_key_create(
            tenant=tenant_create(name=f"Quiet {slug}", slug=f"{slug}-quiet", plan=quiet), name="b"
        ).raw_key,
        "kokoro_voice": english.values_list("voice_id", flat=True).first(),
    }
print(
    json.dumps(
        {
            "tenant": tenant.name,
            "key": api_key_create(tenant=tenant, name="sdk").raw_key,
            "wyoming_key": api_key_create(tenant=tenant, name="wyoming", scopes=["tts"]).raw_key,
            "user": f"{slug}-owner",
            "password": password,
            "admin": "check-admin",
            "admin_password": admin_password,
            "monthly": monthly,
            "neighbours": neighbours,
        }
    )
)
