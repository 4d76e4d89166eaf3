"""Tenants, members, plans, API keys, quotas and the usage ledger."""
