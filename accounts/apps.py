"""Tenants, members, plans, API keys, quotas and the usage ledger."""

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from ttsplatform.lookup_cache import clear_lookup_caches

        # Keys are cached with their tenant and plan (ttsplatform/lookup_cache.py).
        for model in ("ApiKey", "Tenant", "Plan"):
            sender = self.get_model(model)
            post_save.connect(clear_lookup_caches, sender=sender, dispatch_uid=f"lookup-cache-save-{model}")
            post_delete.connect(clear_lookup_caches, sender=sender, dispatch_uid=f"lookup-cache-delete-{model}")
