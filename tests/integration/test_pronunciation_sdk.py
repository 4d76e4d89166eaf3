"""Pronunciation dictionaries through the official elevenlabs SDK, against a live daphne server."""

# ruff: noqa: RUF001  (IPA phonemes are meant)

from __future__ import annotations

import io

import pytest

from tests.audio_checks import assert_speech, decode_audio
from tests.fixtures import make_joe, make_tenant
from tts.models import PronunciationDictionaryVersion, SynthesisRecord

pytestmark = pytest.mark.django_db(transaction=True)

TEXT = "The UN met in Geneva today."
PLS = """<?xml version="1.0" encoding="UTF-8"?>
<lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon"
         alphabet="ipa" xml:lang="en-US">
  <lexeme><grapheme>Geneva</grapheme><phoneme>ʒənˈeɪvə</phoneme></lexeme>
  <lexeme><grapheme>UN</grapheme><alias>United Nations General Assembly</alias></lexeme>
</lexicon>
"""


def _seconds(client: object, text: str, **kwargs: object) -> float:
    audio = b"".join(
        client.text_to_speech.convert(  # type: ignore[attr-defined]
            voice_id="joe", text=text, output_format="pcm_16000", seed=3, **kwargs
        )
    )
    samples, rate = decode_audio(audio, "pcm_16000")
    assert_speech(samples, rate, expected_rate=16000)
    return len(samples) / rate


def test_dictionaries_from_rules_and_from_pls_change_the_audio(live_server_url: str) -> None:
    from elevenlabs.client import ElevenLabs
    from elevenlabs.pronunciation_dictionaries import (
        BodyAddAPronunciationDictionaryV1PronunciationDictionariesAddFromRulesPostRulesItem_Alias as Alias,
    )
    from elevenlabs.types import PronunciationDictionaryVersionLocator as Locator

    make_joe()
    ctx = make_tenant("sdk-lexicon")
    client = ElevenLabs(api_key=ctx.key, base_url=live_server_url)

    by_rules = client.pronunciation_dictionaries.create_from_rules(
        name="acronyms", rules=[Alias(string_to_replace="UN", alias="United Nations General Assembly")]
    )
    assert by_rules.version_rules_num == 1
    by_file = client.pronunciation_dictionaries.create_from_file(
        name="places", file=("places.pls", io.BytesIO(PLS.encode()), "application/pls+xml")
    )
    assert by_file.version_rules_num == 2

    plain = _seconds(client, TEXT)
    aliased = _seconds(
        client,
        TEXT,
        pronunciation_dictionary_locators=[
            Locator(pronunciation_dictionary_id=by_rules.id, version_id=by_rules.version_id)
        ],
    )
    from_file = _seconds(
        client, TEXT, pronunciation_dictionary_locators=[Locator(pronunciation_dictionary_id=by_file.id)]
    )
    assert aliased > plain + 0.5  # "United Nations General Assembly" is much longer than "U N"
    assert from_file > plain + 0.5

    record = SynthesisRecord.objects.filter(tenant=ctx.tenant).order_by("-created_at").first()
    assert record is not None and record.text == TEXT  # history keeps what was asked
    assert record.settings["pronunciation_dictionary_locators"] == [
        {"pronunciation_dictionary_id": by_file.id, "version_id": by_file.version_id}
    ]

    # Each change is a new version; the old one stays downloadable.
    changed = client.pronunciation_dictionaries.rules.remove(by_file.id, rule_strings=["UN"])
    assert changed.version_rules_num == 1 and changed.version_id != by_file.version_id
    got = client.pronunciation_dictionaries.get(by_file.id)
    assert got.latest_version_id == changed.version_id and [r.string_to_replace for r in got.rules] == ["Geneva"]
    old = b"".join(client.pronunciation_dictionaries.download(by_file.id, by_file.version_id))
    assert b"<alias>United Nations General Assembly</alias>" in old and b"lexicon" in old
    listed = client.pronunciation_dictionaries.list()
    assert {d.id for d in listed.pronunciation_dictionaries} == {by_rules.id, by_file.id}
    assert PronunciationDictionaryVersion.objects.filter(dictionary__dictionary_id=by_file.id).count() == 2


def test_the_websocket_applies_dictionaries_to_every_piece(live_server_url: str) -> None:
    import json

    from websockets.sync.client import connect

    from tests.streaming.test_websocket import read_to_close, ws_url

    make_joe()
    ctx = make_tenant("ws-lexicon")
    from elevenlabs.client import ElevenLabs
    from elevenlabs.pronunciation_dictionaries import (
        BodyAddAPronunciationDictionaryV1PronunciationDictionariesAddFromRulesPostRulesItem_Alias as Alias,
    )

    client = ElevenLabs(api_key=ctx.key, base_url=live_server_url)
    made = client.pronunciation_dictionaries.create_from_rules(
        name="acronyms", rules=[Alias(string_to_replace="UN", alias="United Nations General Assembly")]
    )

    def seconds(locators: list[dict[str, str]]) -> float:
        with connect(ws_url(live_server_url)) as ws:
            init = {"text": " ", "xi_api_key": ctx.key, "pronunciation_dictionary_locators": locators}
            ws.send(json.dumps(init))
            for piece in ("Today the ", "UN met. ", "Later the UN ", "voted. "):
                ws.send(json.dumps({"text": piece}))
            ws.send(json.dumps({"text": ""}))
            audio, _ = read_to_close(ws)
        samples, rate = decode_audio(audio, "pcm_16000")
        assert_speech(samples, rate, expected_rate=16000)
        return len(samples) / rate

    plain = seconds([])
    aliased = seconds([{"pronunciation_dictionary_id": made.id, "version_id": made.version_id}])
    assert aliased > plain + 1.0  # both mentions, the one in a later piece too
