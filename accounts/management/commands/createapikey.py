"""manage.py createapikey TENANT_SLUG [--name] [--scopes a,b] [--expires-days N]"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from accounts.keys import api_key_create
from accounts.models import ALL_SCOPES, Tenant


class Command(BaseCommand):
    help = "Create an API key for a tenant and print it (once: only its hash is stored)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tenant", help="tenant slug")
        parser.add_argument("--name", default="cli")
        parser.add_argument("--scopes", help=f"comma-separated, default all: {','.join(ALL_SCOPES)}")
        parser.add_argument("--expires-days", type=int)

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"No tenant with slug {options['tenant']!r}.")
        scopes = [s.strip() for s in options["scopes"].split(",")] if options["scopes"] else None
        expires = None
        if options["expires_days"]:
            expires = timezone.now() + dt.timedelta(days=options["expires_days"])
        try:
            issued = api_key_create(tenant=tenant, name=options["name"], scopes=scopes, expires_at=expires)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(issued.raw_key)
