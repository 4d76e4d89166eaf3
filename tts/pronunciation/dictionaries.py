"""Pronunciation dictionaries: tenant-owned, versioned rule sets (writes and reads) and their bounds.

Every change (add, remove or set rules) writes a new immutable version; a
locator names a dictionary and optionally a version (else the latest). What a
synthesis applies is ``tts.pronunciation.apply``; the rewriting itself
``tts.text.lexicon_match``.

Bounds, each a setting (docs/limits.md): rules per version and the length of
a rule's string, alias and phoneme (the rules API and PLS files alike); per
tenant, its dictionaries, the stored versions of one dictionary and the bytes
of rules of all its stored versions; writes per tenant per minute (429 with
``Retry-After``). After a change, versions older than the newest
``TTS_DICTIONARY_KEEP_VERSIONS`` are deleted unless a history item used them
(``PronunciationDictionaryUse``), so a history item's version stays
downloadable. A write's checks and its rows are one transaction that locks
the tenant's row: two writes at once cannot both pass a bound, and a refused
write leaves nothing behind.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

from django.conf import settings
from django.db import transaction
from django.db.models import Sum

from accounts.models import Tenant
from accounts.ratelimit import LimitExceeded, check_tenant_action_rate
from tts.errors import SynthesisError
from tts.models import PronunciationDictionary, PronunciationDictionaryVersion
from tts.text.lexicon import LexiconError, Rule, RuleLimits, parse_pls

#: Locators per request, as ElevenLabs allows.
MAX_LOCATORS = 3


class Upload(Protocol):
    """An uploaded file (Django's ``UploadedFile``): its size is known before it is read."""

    @property
    def size(self) -> int | None: ...

    def read(self) -> bytes: ...


def rule_limits() -> RuleLimits:
    """What one rule and one version may hold (``TTS_DICTIONARY_MAX_*``)."""
    return RuleLimits(
        string_chars=settings.TTS_DICTIONARY_MAX_STRING_CHARS,
        alias_chars=settings.TTS_DICTIONARY_MAX_ALIAS_CHARS,
        phoneme_chars=settings.TTS_DICTIONARY_MAX_PHONEME_CHARS,
        rules=settings.TTS_DICTIONARY_MAX_RULES,
    )


def _too_many_rules(field: str, count: int, limit: int) -> SynthesisError:
    return SynthesisError(
        f"{field}: {count} rules; a version holds at most {limit} (TTS_DICTIONARY_MAX_RULES).",
        code="invalid_rules",
        status=400,
        field=field,
    )


def check_rules(rules: Sequence[dict[str, Any] | Rule], field: str = "rules") -> list[Rule]:
    """``rules`` parsed within ``rule_limits()``; a 400 naming the rule and its part (``rules[3].alias``)."""
    limits = rule_limits()
    if limits.rules is not None and len(rules) > limits.rules:
        raise _too_many_rules(field, len(rules), limits.rules)
    parsed = []
    for index, rule in enumerate(rules):
        data: dict[str, object] = rule.to_json() if isinstance(rule, Rule) else dict(rule)
        try:
            parsed.append(Rule.from_json(data, limits))
        except LexiconError as exc:
            name = f"{field}[{index}].{exc.part}" if exc.part else f"{field}[{index}]"
            raise SynthesisError(f"{name}: {exc}", code="invalid_rules", status=400, field=name) from exc
    return parsed


def rules_from_pls(upload: Upload, field: str = "file") -> list[Rule]:
    """The rules of an uploaded PLS file: its size checked before it is read, each lexeme within
    ``rule_limits()``; a 400 naming ``field`` (and the lexeme) otherwise."""
    limit = settings.TTS_DICTIONARY_MAX_FILE_BYTES
    if (upload.size or 0) > limit:
        raise SynthesisError(
            f"{field}: a PLS file may be at most {limit} bytes (TTS_DICTIONARY_MAX_FILE_BYTES).",
            code="invalid_pls",
            status=400,
            field=field,
        )
    try:
        return parse_pls(upload.read(), rule_limits())
    except LexiconError as exc:
        raise SynthesisError(f"{field}: {exc}", code="invalid_pls", status=400, field=field) from exc


def _stored(rules: list[Rule]) -> tuple[list[dict[str, object]], int]:
    """The rules as stored, and their size in bytes (what the tenant's storage bound counts)."""
    data = [r.to_json() for r in rules]
    return data, len(json.dumps(data, ensure_ascii=False).encode())


def _check_write_rate(tenant: Tenant) -> None:
    try:
        check_tenant_action_rate(
            tenant=tenant,
            action="dictionary-writes",
            per_minute=settings.TTS_DICTIONARY_WRITES_PER_MINUTE,
            what="pronunciation dictionary writes",
        )
    except LimitExceeded as exc:
        raise SynthesisError.from_limit(exc) from exc


def _lock_tenant(tenant: Tenant) -> None:
    """Inside a transaction: the tenant's row locked until it ends (a no-op on SQLite, which
    runs one write transaction at a time anyway)."""
    Tenant.objects.select_for_update().filter(pk=tenant.pk).values_list("pk", flat=True).first()


def _check_storage(tenant: Tenant, field: str, adding: int = 0) -> None:
    """The bytes of rules of every stored version of the tenant's dictionaries, plus ``adding``."""
    limit = settings.TTS_DICTIONARY_MAX_TENANT_BYTES
    stored = (
        PronunciationDictionaryVersion.objects.filter(dictionary__tenant=tenant).aggregate(n=Sum("rule_bytes"))["n"]
        or 0
    )
    if stored + adding > limit:
        raise SynthesisError(
            f"{field}: this account's pronunciation dictionaries would hold {stored + adding} bytes of rules "
            f"(all stored versions); the limit is {limit} (TTS_DICTIONARY_MAX_TENANT_BYTES).",
            code="pronunciation_dictionary_storage_limit_reached",
            status=400,
            field=field,
        )


def latest_version(dictionary: PronunciationDictionary) -> PronunciationDictionaryVersion:
    version = dictionary.versions.order_by("-number").first()
    assert version is not None  # a dictionary is created with its first version
    return version


def dictionary_create(
    *,
    tenant: Tenant,
    name: str,
    rules: Sequence[dict[str, Any] | Rule],
    description: str = "",
    created_by: str = "",
) -> tuple[PronunciationDictionary, PronunciationDictionaryVersion]:
    """A new dictionary and its first version; refused past the tenant's bounds (nothing written)."""
    _check_write_rate(tenant)
    return _create(tenant, name, check_rules(rules), description, created_by, "rules")


def dictionary_create_from_pls(
    *, tenant: Tenant, name: str, upload: Upload, description: str = "", created_by: str = "", field: str = "file"
) -> tuple[PronunciationDictionary, PronunciationDictionaryVersion]:
    """``dictionary_create`` with the rules of a PLS file, read only once the write is admitted."""
    _check_write_rate(tenant)
    return _create(tenant, name, rules_from_pls(upload, field), description, created_by, field)


def _create(
    tenant: Tenant, name: str, rules: list[Rule], description: str, created_by: str, field: str
) -> tuple[PronunciationDictionary, PronunciationDictionaryVersion]:
    stored, size = _stored(rules)
    with transaction.atomic():
        _lock_tenant(tenant)
        limit = settings.TTS_DICTIONARY_MAX_PER_TENANT
        if PronunciationDictionary.objects.filter(tenant=tenant, archived_at__isnull=True).count() >= limit:
            raise SynthesisError(
                f"This account has {limit} pronunciation dictionaries, the most it may have "
                "(TTS_DICTIONARY_MAX_PER_TENANT).",
                code="pronunciation_dictionary_limit_reached",
                status=400,
                field="name",
            )
        _check_storage(tenant, field, adding=size)
        dictionary = PronunciationDictionary.objects.create(
            tenant=tenant, name=name, description=description or "", created_by=created_by
        )
        version = PronunciationDictionaryVersion.objects.create(
            dictionary=dictionary, number=1, rules=stored, rule_bytes=size
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
    appended (a rule for the same string replaces the old one), or ``replace`` outright.

    Then the old versions past ``TTS_DICTIONARY_KEEP_VERSIONS`` that no history item used are
    deleted; refused (nothing written, nothing deleted) past the version or storage bound.
    """
    tenant = dictionary.tenant
    _check_write_rate(tenant)
    field = "rules" if replace is not None or add else "rule_strings"
    parsed = check_rules(replace if replace is not None else add)
    with transaction.atomic():
        _lock_tenant(tenant)
        locked = PronunciationDictionary.objects.select_for_update().get(pk=dictionary.pk)
        current = latest_version(locked)
        if replace is not None:
            rules = parsed
        else:
            gone = set(remove) | {r.string_to_replace for r in parsed}
            # Stored rules as they were written (bounds may have changed since).
            kept = [Rule.from_json(r) for r in current.rules]
            rules = [r for r in kept if r.string_to_replace not in gone] + parsed
            if len(rules) > settings.TTS_DICTIONARY_MAX_RULES:
                raise _too_many_rules(field, len(rules), settings.TTS_DICTIONARY_MAX_RULES)
        stored, size = _stored(rules)
        version = PronunciationDictionaryVersion.objects.create(
            dictionary=locked, number=current.number + 1, rules=stored, rule_bytes=size
        )
        _prune(locked)
        count = locked.versions.count()
        if count > settings.TTS_DICTIONARY_MAX_VERSIONS:
            raise SynthesisError(
                f"Pronunciation dictionary '{locked.dictionary_id}' would store {count} versions (the newest "
                "and those history items used); a dictionary stores at most "
                f"{settings.TTS_DICTIONARY_MAX_VERSIONS} (TTS_DICTIONARY_MAX_VERSIONS). Delete the history "
                "items that used old versions, or create a new dictionary.",
                code="pronunciation_dictionary_version_limit_reached",
                status=400,
                field=field,
            )
        _check_storage(tenant, field)
    return version


def _prune(dictionary: PronunciationDictionary) -> int:
    """Delete the versions older than the newest ``TTS_DICTIONARY_KEEP_VERSIONS`` that no history
    item used; how many went."""
    older = list(
        dictionary.versions.order_by("-number").values_list("pk", flat=True)[settings.TTS_DICTIONARY_KEEP_VERSIONS :]
    )
    if not older:
        return 0
    unused = PronunciationDictionaryVersion.objects.filter(pk__in=older, uses__isnull=True)
    deleted, _ = unused.delete()
    return int(deleted)


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
