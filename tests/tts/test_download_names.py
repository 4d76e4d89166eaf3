"""The one rule that names downloads (tts/usage/download_names.py): voice, UTC time, first words in any
script, safe on every filesystem; the header carries it as RFC 6266 asks (ASCII ``filename`` and UTF-8
``filename*``)."""

from __future__ import annotations

import datetime as dt
import re
from urllib.parse import unquote

import pytest

from tts.usage.download_names import ascii_filename, content_disposition, download_filename

AT = dt.datetime(2026, 12, 2, 12, 45, 7, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("voice", "text", "name"),
    [
        ("Joe", "The lighthouse keeper climbed the stairs at dusk.",
         "joe_2026-12-02_124507_the-lighthouse-keeper-climbed-the-stairs.wav"),
        ("Nezumi", "今日は良い天気ですね。散歩に行きましょう。",
         "nezumi_2026-12-02_124507_今日は良い天気ですね-散歩に行きましょう.wav"),
        ("Xiaoxiao", "你好\uff0c世界\uff01今天天气很好。", "xiaoxiao_2026-12-02_124507_你好-世界-今天天气很好.wav"),
        ("Alpha", "नमस्ते दुनिया, आप कैसे हैं", "alpha_2026-12-02_124507_नमस्ते-दुनिया-आप-कैसे-हैं.wav"),
        ("Zoë", "Crème brûlée: s'il vous plaît / a/b\\c", "zoë_2026-12-02_124507_crème-brûlée-s-il-vous-plaît.wav"),
        ("joe", "", "joe_2026-12-02_124507.wav"),
        ("", "!!!", "voice_2026-12-02_124507.wav"),
    ],
    ids=["english", "japanese", "chinese", "hindi", "accents-and-separators", "no-text", "nothing-usable"],
)  # fmt: skip
def test_it_names_by_voice_time_and_first_words(voice: str, text: str, name: str) -> None:
    assert download_filename(voice, AT, text, "wav") == name


def test_names_are_safe_and_bounded_on_any_filesystem() -> None:
    hostile = 'a/b\\c:d*e?f"g<h>i|j\x00k\x1fl\u202em ' + "悪" * 200 + " " + "word" * 100
    name = download_filename("../../etc", AT.astimezone(dt.timezone(dt.timedelta(hours=9))), hostile, "mp3")
    assert name.startswith("etc_2026-12-02_124507_")  # the time is UTC, whatever zone it came in
    assert not re.search(r'[/\\:*?"<>|\x00-\x1f\u202e]', name)
    assert len(name.encode()) < 200 and name.endswith(".mp3")
    assert download_filename("joe", AT, "x " * 1_000_000, "wav") == "joe_2026-12-02_124507_x-x-x-x-x-x.wav"


def test_the_header_has_an_ascii_name_and_the_utf8_one() -> None:
    assert content_disposition("joe_2026-12-02_124507_the-ferry.wav") == (
        'attachment; filename="joe_2026-12-02_124507_the-ferry.wav"'
    )
    name = download_filename("Nezumi", AT, "今日は良い天気", "wav")
    header = content_disposition(name)
    assert header.startswith("attachment; filename=\"nezumi_2026-12-02_124507.wav\"; filename*=UTF-8''")
    assert header.isascii()
    assert unquote(header.split("filename*=UTF-8''", 1)[1]) == name  # RFC 5987 decoding gives the name back
    assert ascii_filename("zoë_2026-12-02_124507_crème-brûlée.mp3") == "zoe_2026-12-02_124507_creme-brulee.mp3"
    assert content_disposition("x.pls", inline=True) == 'inline; filename="x.pls"'
