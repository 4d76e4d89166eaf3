"""manage.py createtenant NAME [--slug] [--plan] [--owner USERNAME]"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import Membership, Plan, Tenant
from accounts.services import membership_add, plan_get_default, tenant_create


class Command(BaseCommand):
    help = "Create a tenant (optionally with an existing or new user as owner)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--slug")
        parser.add_argument("--plan", help="plan name (default: free)")
        parser.add_argument("--owner", help="username to make owner (created without a password if new)")

    def handle(self, *args: Any, **options: Any) -> None:
        plan = plan_get_default()
        if options["plan"]:
            named = Plan.objects.filter(name=options["plan"]).first()
            if named is None:
                raise CommandError(f"No plan named {options['plan']!r}.")
            plan = named
        slug = options["slug"]
        if slug and Tenant.objects.filter(slug=slug).exists():
            raise CommandError(f"A tenant with slug {slug!r} already exists.")
        try:
            tenant = tenant_create(name=options["name"], slug=slug, plan=plan)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if options["owner"]:
            user_model = get_user_model()
            user, _ = user_model.objects.get_or_create(username=options["owner"])
            membership_add(tenant=tenant, user=user, role=Membership.Role.OWNER)
        self.stdout.write(f"Created tenant {tenant.slug!r} (id {tenant.pk}) on plan {plan.name!r}.")
