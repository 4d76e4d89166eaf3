"""Serializer fields that take only the JSON type they name.

DRF's ``CharField`` turns ``123`` into ``"123"``, so ``{"text": 123}`` was
spoken as "one hundred twenty-three" and billed. ``StrictCharField`` takes a
JSON string and nothing else: a number, boolean, list or object is a 400 that
names the field. Query parameters are always strings, so it fits there too.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


class StrictCharField(serializers.CharField):
    default_error_messages = {"invalid": "Must be a string."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)
