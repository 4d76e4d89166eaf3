"""Keyset pagination over newest-first lists (history items, jobs): no OFFSET and no
COUNT(*) over a tenant's whole table, stable while rows are added. The one paginator
the APIs and dashboard pages use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from django.db.models import Model, QuerySet

M = TypeVar("M", bound=Model)


@dataclass(frozen=True)
class KeysetPage(Generic[M]):
    items: list[M]
    has_more: bool

    @property
    def last_id(self) -> str | None:
        """The id to page on from (``start_after`` of the next page), if there is a next page."""
        return str(self.items[-1].pk) if self.has_more and self.items else None


def keyset_page(qs: QuerySet[M], *, after: M | None, size: int) -> KeysetPage[M]:
    """The ``size`` rows of ``qs`` (ordered by ``-created_at, -id``) that come after ``after``."""
    if after is not None:
        created = after.created_at  # type: ignore[attr-defined]
        qs = qs.filter(created_at__lte=created).exclude(created_at=created, id__gte=after.pk)
    rows = list(qs[: size + 1])
    return KeysetPage(items=rows[:size], has_more=len(rows) > size)
