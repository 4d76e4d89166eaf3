"""Pronunciation dictionaries: tenant-owned, versioned rule sets (writes and reads), and
what a synthesis applies (``dictionaries_for``).

Every change (add, remove or set rules) writes a new immutable version; a
locator names a dictionary and optionally a version (else the latest). The
text rewriting itself is ``tts.text.lexicon``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from accounts.models import Tenant
from infra.lookup_cache import LookupCache, lookup_cache
from tts.models import PronunciationDictionary, PronunciationDictionaryVersion
from tts.text.lexicon import LexiconError, Rule, apply_rules

from .synthesis_types import SynthesisError

#: Locators per request, as ElevenLabs allows.
MAX_LOCATORS = 3
#: Rules per version.
MAX_RULES = 5000


#: A tenant's default dictionaries' latest versions (a tuple, empty for most tenants: cached too).
_defaults: LookupCache[int, tuple[PronunciationDictionaryVersion, ...]] = lookup_cache("default dictionaries")


def _default_versions(tenant: Tenant) -> tuple[PronunciationDictionaryVersion, ...]:
    def load() -> tuple[PronunciationDictionaryVersion, ...]:
        defaults = PronunciationDictionary.objects.filter(tenant=tenant, is_default=True, archived_at__isnull=True)
        return tuple(_latest_with_dictionary(d) for d in defaults.order_by("created_at")[:MAX_LOCATORS])

    return _defaults.get(tenant.pk, load) or ()


@dataclass(frozen=True)
class AppliedDictionaries:
    """The versions a request uses, in precedence order, and their rules."""

    versions: list[tuple[str, str]]  # (dictionary_id, version_id)
    rules: list[Rule]

    def apply(self, text: str) -> str:
        return apply_rules(text, self.rules) if self.rules else text

    def as_json(self) -> list[dict[str, str]]:
        return [{"pronunciation_dictionary_id": d, "version_id": v} for d, v in self.versions]


def _check_rules(rules: Sequence[dict[str, Any]] | Sequence[Rule], field: str = "rules") -> list[Rule]:
    try:
        parsed = [r if isinstance(r, Rule) else Rule.from_json(dict(r)) for r in rules]
    except LexiconError as exc:
        raise SynthesisError(f"{field}: {exc}", code="invalid_rules", status=400, field=field) from exc
    if len(parsed) > MAX_RULES:
        raise SynthesisError(f"{field}: at most {MAX_RULES} rules.", code="invalid_rules", status=400, field=field)
    return parsed


def latest_version(dictionary: PronunciationDictionary) -> PronunciationDictionaryVersion:
    version = dictionary.versions.order_by("-number").first()
    assert version is not None  # a dictionary is created with its first version
    return version


def dictionary_create(
    *,
    tenant: Tenant,
    name: str,
    rules: Sequence[dict[str, Any]] | Sequence[Rule],
    description: str = "",
    created_by: str = "",
) -> tuple[PronunciationDictionary, PronunciationDictionaryVersion]:
    parsed = _check_rules(rules)
    with transaction.atomic():
        dictionary = PronunciationDictionary.objects.create(
            tenant=tenant, name=name, description=description or "", created_by=created_by
        )
        version = PronunciationDictionaryVersion.objects.create(
            dictionary=dictionary, number=1, rules=[r.to_json() for r in parsed]
        )
    return dictionary, version


def dictionary_get(tenant: Tenant, dictionary_id: str) -> PronunciationDictionary:
    dictionary = PronunciationDictionary.objects.filter(tenant=tenant, dictionary_id=dictionary_id).first()
    if dictionary is None:
        raise SynthesisError(
            f"A pronunciation dictionary with id '{dictionary_id}' was not found.",
            code="pronunciation_dictionary_not_found",
            status=404,
        )
    return dictionary


def dictionary_change(
    dictionary: PronunciationDictionary,
    *,
    add: Sequence[dict[str, Any]] = (),
    remove: Sequence[str] = (),
    replace: Sequence[dict[str, Any]] | None = None,
) -> PronunciationDictionaryVersion:
    """A new version: the latest's rules with ``remove`` strings dropped and ``add`` rules
    appended (a rule for the same string replaces the old one), or ``replace`` outright."""
    with transaction.atomic():
        locked = PronunciationDictionary.objects.select_for_update().get(pk=dictionary.pk)
        current = latest_version(locked)
        if replace is not None:
            rules = _check_rules(replace)
        else:
            added = _check_rules(add)
            gone = set(remove) | {r.string_to_replace for r in added}
            rules = [r for r in _check_rules(current.rules) if r.string_to_replace not in gone] + added
            if len(rules) > MAX_RULES:
                raise SynthesisError(f"at most {MAX_RULES} rules.", code="invalid_rules", status=400, field="rules")
        return PronunciationDictionaryVersion.objects.create(
            dictionary=locked, number=current.number + 1, rules=[r.to_json() for r in rules]
        )


def version_get(dictionary: PronunciationDictionary, version_id: str | None) -> PronunciationDictionaryVersion:
    if not version_id:
        return latest_version(dictionary)
    version = dictionary.versions.filter(version_id=version_id).first()
    if version is None:
        raise SynthesisError(
            f"Version '{version_id}' of pronunciation dictionary '{dictionary.dictionary_id}' was not found.",
            code="pronunciation_dictionary_version_not_found",
            status=404,
        )
    return version


def dictionaries_for(
    tenant: Tenant, locators: Sequence[dict[str, Any]], *, field: str = "pronunciation_dictionary_locators"
) -> AppliedDictionaries | None:
    """The dictionaries a request uses: its locators, else the tenant's defaults; ``None`` if none.

    An unknown dictionary or version (or another tenant's) is a 400 naming ``field``.
    """
    if len(locators) > MAX_LOCATORS:
        raise SynthesisError(
            f"{field}: at most {MAX_LOCATORS} pronunciation dictionaries per request.",
            code="too_many_dictionaries",
            status=400,
            field=field,
        )
    versions: list[PronunciationDictionaryVersion] = []
    if locators:
        for locator in locators:
            dictionary_id = str(locator.get("pronunciation_dictionary_id") or "")
            try:
                dictionary = dictionary_get(tenant, dictionary_id)
                versions.append(version_get(dictionary, locator.get("version_id") or None))
            except SynthesisError as exc:
                raise SynthesisError(f"{field}: {exc.message}", code=exc.code, status=400, field=field) from exc
    else:
        versions = list(_default_versions(tenant))
    if not versions:
        return None
    rules = [Rule.from_json(r) for v in versions for r in v.rules]
    return AppliedDictionaries([(v.dictionary.dictionary_id, v.version_id) for v in versions], rules)


def _latest_with_dictionary(dictionary: PronunciationDictionary) -> PronunciationDictionaryVersion:
    version = latest_version(dictionary)
    version.dictionary = dictionary  # read once, kept with the cached version
    return version
