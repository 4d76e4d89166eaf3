"""Dashboard routes for accounts: login, logout, tenant switch, API keys."""

from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", views.LogoutView.as_view(), name="logout"),
    path("tenant/switch/", views.tenant_switch, name="tenant-switch"),
    path("keys/", views.api_keys, name="keys"),
    path("keys/new/", views.api_key_new, name="key-new"),
    path("keys/<int:key_id>/revoke/", views.api_key_revoke_view, name="key-revoke"),
]
