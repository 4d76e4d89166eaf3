"""What a synthesis applies of the pronunciation dictionaries, and at what cost.

``dictionaries_for`` finds the versions a request uses (its locators, else the
tenant's default dictionaries) without reading their rules: a cheap lookup
that may run before admission and refuses unknown ids with a 400.
``AppliedDictionaries.apply`` is the dictionary work, for after admission: the
versions' compiled rules come from a per-process cache (``SizedLRU`` bounded
by ``TTS_DICTIONARY_CACHE_BYTES``, keyed by version id: versions are
immutable), compiled on a miss once however many requests ask at once; a
run keeps them, so a WebSocket's later pieces reuse them. The rules apply in
one pass (``tts.text.lexicon_match``), and the spoken text is bounded while
it is built (``spoken_limit``): past it a 413 names the dictionary.
``record_dictionary_uses`` writes which versions a history item used (those
are never pruned).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from accounts.models import Plan, Tenant
from accounts.quota import characters_per_request_limit
from infra.lookup_cache import LookupCache, lookup_cache
from infra.sized_lru import SizedLRU
from tts.errors import SynthesisError
from tts.models import (
    PronunciationDictionary,
    PronunciationDictionaryUse,
    PronunciationDictionaryVersion,
    SynthesisRecord,
)
from tts.pronunciation.dictionaries import MAX_LOCATORS, dictionary_get
from tts.text.lexicon import Rule
from tts.text.lexicon_match import CompiledRules, ExpansionLimitExceeded, apply_compiled

LOCATORS_FIELD = "pronunciation_dictionary_locators"


@dataclass(frozen=True)
class UsedVersion:
    """One dictionary version a request uses (its rules are read only to compile them)."""

    dictionary_id: str
    name: str
    version_pk: int
    version_id: str


#: Compiled rule sets by version id (a random id, never reused: pks are, in tests).
_compiled: SizedLRU[str, CompiledRules] = SizedLRU(
    size=lambda c: c.size_bytes, capacity=lambda: int(settings.TTS_DICTIONARY_CACHE_BYTES)
)
_compiling_guard = threading.Lock()
_compiling: dict[str, threading.Lock] = {}


def compiled_rules(used: UsedVersion) -> CompiledRules:
    """The version's rules compiled, from the cache or compiled now (one thread per version at a time)."""
    found = _compiled.get(used.version_id)
    if found is not None:
        return found
    with _compiling_guard:
        lock = _compiling.setdefault(used.version_id, threading.Lock())
    try:
        with lock:
            found = _compiled.get(used.version_id)
            if found is not None:
                return found
            rows = PronunciationDictionaryVersion.objects.filter(pk=used.version_pk).values_list("rules", flat=True)
            stored = rows.first()
            if stored is None:  # pruned since it was looked up
                raise SynthesisError(
                    f"{LOCATORS_FIELD}: version '{used.version_id}' of pronunciation dictionary "
                    f"'{used.dictionary_id}' was not found.",
                    code="pronunciation_dictionary_version_not_found",
                    status=400,
                    field=LOCATORS_FIELD,
                )
            compiled = CompiledRules([Rule.from_json(r) for r in stored])
            _compiled.put(used.version_id, compiled)
            return compiled
    finally:
        with _compiling_guard:
            _compiling.pop(used.version_id, None)


def clear_compiled_rules() -> None:
    _compiled.clear()


def spoken_limit(characters: int, plan: Plan) -> int:
    """The longest text ``characters`` of a request may become with dictionaries applied:
    ``TTS_DICTIONARY_MAX_EXPANSION`` times them plus one replacement, within the plan's
    characters per request."""
    one = max(settings.TTS_DICTIONARY_MAX_ALIAS_CHARS, settings.TTS_DICTIONARY_MAX_PHONEME_CHARS + 4)
    return min(characters_per_request_limit(plan), settings.TTS_DICTIONARY_MAX_EXPANSION * characters + one)


def billed_characters(text: str, spoken: str) -> int:
    """What a text costs once dictionaries have rewritten it: the longer of the two.

    A rule may lengthen a text (an alias up to ``TTS_DICTIONARY_MAX_EXPANSION``
    times it, plus one replacement): the engine speaks the longer text, so the
    request is billed for it, and no request costs more than it bills (docs/limits.md).
    """
    return max(len(text), len(spoken))


class AppliedDictionaries:
    """The versions a request uses, in precedence order; ``apply`` rewrites a text with them."""

    def __init__(self, used: Sequence[UsedVersion], *, tenant: Tenant, named: bool) -> None:
        self.used = tuple(used)
        self.tenant = tenant
        #: The request named them (else they are the tenant's defaults): what a refusal names.
        self.named = named
        self._sets: list[CompiledRules] | None = None

    @property
    def versions(self) -> list[tuple[str, str]]:
        """(dictionary_id, version_id) of each, for the cache key."""
        return [(u.dictionary_id, u.version_id) for u in self.used]

    def as_json(self) -> list[dict[str, str]]:
        return [{"pronunciation_dictionary_id": d, "version_id": v} for d, v in self.versions]

    def compiled(self) -> list[CompiledRules]:
        """The compiled sets, looked up once per request (or WebSocket utterance)."""
        if self._sets is None:
            self._sets = [compiled_rules(u) for u in self.used]
        return self._sets

    def apply(self, text: str, *, field: str = "text") -> str:
        """``text`` as spoken; 413 naming the dictionary once it would pass ``spoken_limit``."""
        limit = spoken_limit(len(text), self.tenant.plan)
        try:
            return apply_compiled(text, self.compiled(), max_chars=limit).text
        except ExpansionLimitExceeded as exc:
            used = self.used[exc.set_index]
            source = "" if self.named else "the account's default "
            raise SynthesisError(
                f"'{field}' would become longer than {limit} characters with {source}pronunciation dictionary "
                f"'{used.name}' ({used.dictionary_id}, version {used.version_id}) applied: the spoken text may be "
                f"at most {settings.TTS_DICTIONARY_MAX_EXPANSION} times the text plus one replacement "
                "(TTS_DICTIONARY_MAX_EXPANSION), and no longer than the characters one request may send.",
                code="pronunciation_dictionary_expansion_exceeded",
                status=413,
                field=LOCATORS_FIELD if self.named else field,
            ) from exc


#: A tenant's default dictionaries' latest versions (a tuple, empty for most tenants: cached too).
_defaults: LookupCache[int, tuple[UsedVersion, ...]] = lookup_cache("default dictionaries")


def _latest_ref(dictionary: PronunciationDictionary) -> UsedVersion:
    version = dictionary.versions.order_by("-number").only("pk", "version_id").first()
    assert version is not None  # a dictionary is created with its first version
    return UsedVersion(dictionary.dictionary_id, dictionary.name, version.pk, version.version_id)


def _default_versions(tenant: Tenant) -> tuple[UsedVersion, ...]:
    def load() -> tuple[UsedVersion, ...]:
        defaults = PronunciationDictionary.objects.filter(tenant=tenant, is_default=True, archived_at__isnull=True)
        return tuple(_latest_ref(d) for d in defaults.order_by("created_at")[:MAX_LOCATORS])

    return _defaults.get(tenant.pk, load) or ()


def _locator_ref(tenant: Tenant, locator: dict[str, Any]) -> UsedVersion:
    dictionary = dictionary_get(tenant, str(locator.get("pronunciation_dictionary_id") or ""))
    version_id = locator.get("version_id") or None
    if not version_id:
        return _latest_ref(dictionary)
    version = dictionary.versions.filter(version_id=version_id).only("pk", "version_id").first()
    if version is None:
        raise SynthesisError(
            f"Version '{version_id}' of pronunciation dictionary '{dictionary.dictionary_id}' was not found.",
            code="pronunciation_dictionary_version_not_found",
            status=404,
        )
    return UsedVersion(dictionary.dictionary_id, dictionary.name, version.pk, version.version_id)


def dictionaries_for(
    tenant: Tenant, locators: Sequence[dict[str, Any]], *, field: str = LOCATORS_FIELD
) -> AppliedDictionaries | None:
    """The dictionaries a request uses: its locators, else the tenant's defaults; ``None`` if none.

    Reads no rules. An unknown dictionary or version (or another tenant's) is a 400 naming ``field``.
    """
    if len(locators) > MAX_LOCATORS:
        raise SynthesisError(
            f"{field}: at most {MAX_LOCATORS} pronunciation dictionaries per request.",
            code="too_many_dictionaries",
            status=400,
            field=field,
        )
    used: list[UsedVersion] = []
    for locator in locators:
        try:
            used.append(_locator_ref(tenant, locator))
        except SynthesisError as exc:
            raise SynthesisError(f"{field}: {exc.message}", code=exc.code, status=400, field=field) from exc
    if not locators:
        used = list(_default_versions(tenant))
    return AppliedDictionaries(used, tenant=tenant, named=bool(locators)) if used else None


def record_dictionary_uses(record: SynthesisRecord, dictionaries: AppliedDictionaries | None) -> None:
    """Inside the transaction that inserts ``record``: the versions it used, kept from pruning."""
    if dictionaries is None:
        return
    versions = dict.fromkeys(u.version_pk for u in dictionaries.used)
    PronunciationDictionaryUse.objects.bulk_create(
        [PronunciationDictionaryUse(record=record, version_id=pk) for pk in versions]
    )
