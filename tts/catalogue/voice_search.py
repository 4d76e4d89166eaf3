"""Searching a tenant's voices a page at a time (ElevenLabs' ``GET /v2/voices``).

Pages are cut by keyset, not offset: a page starts after the sort key of the
last voice of the page before, so a voice added or deleted between two calls
neither repeats nor skips one. The caller turns that key into an opaque token.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from django.db.models import Q, QuerySet

from accounts.models import Tenant
from tts.catalogue.voices import voices_served_for_tenant
from tts.models import Voice

SortField = Literal["name", "created_at_unix"]

#: ElevenLabs' ``voice_type`` values and whose voices each means here: ``default`` is the shared
#: voices; the tenant's own stand for a user's and a workspace's; there is no community library.
VOICE_TYPES = ("personal", "community", "default", "workspace", "non-default", "non-community", "saved")
#: ElevenLabs' categories; shared voices are ``premade``, a tenant's own ``professional`` (``Voice.category``).
#: ``matched``: a tenant's voice matched from a recording (tts/matching), never ``cloned``.
VOICE_CATEGORIES = ("premade", "cloned", "generated", "professional", "famous", "high_quality", "matched")
#: The labels a search looks into (ElevenLabs' label keys, and ``language``).
SEARCHED_LABELS = ("accent", "age", "description", "gender", "language", "use_case")


@dataclass(frozen=True)
class VoiceQuery:
    """What to list: every filter is optional and they all apply together."""

    search: str = ""
    voice_type: str = ""
    category: str = ""
    languages: Sequence[str] = ()
    genders: Sequence[str] = ()
    ages: Sequence[str] = ()
    accents: Sequence[str] = ()
    use_cases: Sequence[str] = ()
    voice_ids: Sequence[str] = ()
    #: Filters on what no voice here has (collections, fine-tuning): when set, nothing matches.
    matches_nothing: bool = False
    sort: SortField = "name"
    descending: bool = False
    page_size: int = 10
    #: The sort key of the last voice of the page before: (name or created_at ISO time, voice_id).
    after: tuple[str, str] | None = None
    count_total: bool = True


@dataclass(frozen=True)
class VoicePage:
    voices: list[Voice]
    has_more: bool
    total_count: int | None
    #: Where the next page starts (``VoiceQuery.after``); None on the last page.
    next_after: tuple[str, str] | None = field(default=None)


def _primary(code: str) -> str:
    return code.strip().lower().replace("_", "-").split("-")[0]


def _any_label(key: str, values: Sequence[str]) -> Q:
    q = Q()
    for value in values:
        q |= Q(**{f"labels__{key}__iexact": value.strip()})
    return q


def _filtered(tenant: Tenant, query: VoiceQuery) -> QuerySet[Voice]:
    voices = voices_served_for_tenant(tenant)
    no_such = query.voice_type == "community" or query.category not in ("", "premade", "professional", "matched")
    if query.matches_nothing or no_such:
        return voices.none()
    if query.voice_type == "default":
        voices = voices.filter(tenant__isnull=True)
    elif query.voice_type:  # personal, workspace, non-default, non-community, saved: the tenant's own
        voices = voices.filter(tenant=tenant)
    if query.category == "premade":
        voices = voices.filter(tenant__isnull=True)
    elif query.category == "professional":
        # A label missing from the JSON compares as NULL: keep those explicitly.
        voices = voices.filter(tenant=tenant).filter(Q(labels__category__isnull=True) | ~Q(labels__category="matched"))
    elif query.category == "matched":
        voices = voices.filter(tenant=tenant, labels__category="matched")
    if query.voice_ids:
        voices = voices.filter(voice_id__in=list(query.voice_ids))
    if query.languages:
        by_language = Q()
        for code in {_primary(c) for c in query.languages if _primary(c)}:
            by_language |= Q(language__iexact=code) | Q(language__istartswith=f"{code}-")
            by_language |= Q(language__istartswith=f"{code}_") | Q(labels__language__iexact=code)
        voices = voices.filter(by_language)
    for key, values in (
        ("gender", query.genders),
        ("age", query.ages),
        ("accent", query.accents),
        ("use_case", query.use_cases),
    ):
        if values:
            voices = voices.filter(_any_label(key, values))
    term = query.search.strip()
    if term:
        searched = Q(name__icontains=term) | Q(description__icontains=term) | Q(voice_id__iexact=term)
        for key in SEARCHED_LABELS:  # the labels' values, not their keys ("gender" is no match for every voice)
            searched |= Q(**{f"labels__{key}__icontains": term})
        if term.lower() in "premade":
            searched |= Q(tenant__isnull=True)
        if term.lower() in "professional":
            searched |= Q(tenant=tenant)
        voices = voices.filter(searched)
    return voices


def _after(query: VoiceQuery) -> Q:
    """Voices strictly after ``query.after`` in the query's order."""
    key, voice_id = query.after or ("", "")
    column = "name" if query.sort == "name" else "created_at"
    value: str | dt.datetime = key if query.sort == "name" else dt.datetime.fromisoformat(key)
    op = "lt" if query.descending else "gt"
    return Q(**{f"{column}__{op}": value}) | Q(**{column: value, f"voice_id__{op}": voice_id})


def sort_key(voice: Voice, sort: SortField) -> tuple[str, str]:
    return (voice.name if sort == "name" else voice.created_at.isoformat(), voice.voice_id)


def voices_search(tenant: Tenant, query: VoiceQuery) -> VoicePage:
    """One page of the voices ``tenant`` may speak with now that match ``query``."""
    voices = _filtered(tenant, query)
    total = voices.count() if query.count_total else None
    column = "name" if query.sort == "name" else "created_at"
    prefix = "-" if query.descending else ""
    ordered = voices.order_by(f"{prefix}{column}", f"{prefix}voice_id")
    if query.after is not None:
        ordered = ordered.filter(_after(query))
    rows = list(ordered[: query.page_size + 1])
    page, has_more = rows[: query.page_size], len(rows) > query.page_size
    next_after = sort_key(page[-1], query.sort) if has_more and page else None
    return VoicePage(voices=page, has_more=has_more, total_count=total, next_after=next_after)
