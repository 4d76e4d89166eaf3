"""Tenants, members, plans, API keys, quotas and the usage ledger."""

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from infra.lookup_cache import clear_lookup_caches_on_change

        # Keys are cached with their tenant and plan (infra/lookup_cache.py).
        clear_lookup_caches_on_change(*(self.get_model(name) for name in ("ApiKey", "Tenant", "Plan")))
