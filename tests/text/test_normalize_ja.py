"""Japanese normalization corpus: numbers, dates, times, money, units and widths read the Japanese way."""

# The corpus is real-world Japanese text: full-width forms are the point.
# ruff: noqa: RUF001

from __future__ import annotations

import pytest

from tts.text.normalize import normalize_aligned, normalize_text
from tts.text.prepare import prepare_text
from tts.text.rules.ja import kanji_number, say_as

CASES: list[tuple[str, str]] = [
    # cardinal numbers
    ("りんごが3個あります", "りんごが三個あります"),
    ("10人", "十人"),
    ("11人", "十一人"),
    ("100円", "百円"),
    ("1000円", "千円"),
    ("1,000円", "千円"),
    ("10,000円", "一万円"),
    ("12345", "一万二千三百四十五"),
    ("20000000", "二千万"),
    ("10000000", "一千万"),
    ("100000000", "一億"),
    ("300000000000", "三千億"),
    ("1000000000000", "一兆"),
    ("0", "零"),
    ("-5", "マイナス五"),
    ("3.14", "三点一四"),
    ("0.5", "零点五"),
    ("007", "ゼロゼロ七"),
    ("第3回", "第三回"),
    ("第12章", "第十二章"),
    # full-width digits and letters, half-width kana
    ("１２３", "百二十三"),
    ("１，０００円", "千円"),
    ("ＡＢＣです", "ABCです"),
    ("ｶﾀｶﾅ", "カタカナ"),
    ("ｶﾞｷﾞｸﾞ", "ガギグ"),
    ("ﾊﾟﾋﾟﾌﾟ", "パピプ"),
    ("ｺﾝﾋﾟｭｰﾀｰ", "コンピューター"),
    ("全角　スペース", "全角 スペース"),
    ("いすゞ", "いすず"),
    ("こゝろ", "こころ"),
    # dates
    ("2024年3月1日", "二千二十四年三月一日"),
    ("2024年12月25日", "二千二十四年十二月二十五日"),
    ("3月8日", "三月八日"),
    ("4月", "四月"),
    ("2024年", "二千二十四年"),
    ("2024-03-01", "二千二十四年三月一日"),
    ("2024/3/1", "二千二十四年三月一日"),
    ("2024.10.05", "二千二十四年十月五日"),
    ("2024年3月1日(金)", "二千二十四年三月一日、金曜日"),
    ("3月1日（月）", "三月一日、月曜日"),
    ("12/25(水)", "十二月二十五日、水曜日"),
    ("令和6年", "令和六年"),
    ("2024-13-01", "2024-13-01"),  # not a date: left to the reader
    # times
    ("10:30", "十時三十分"),
    ("10:00", "十時"),
    ("9:05", "九時五分"),
    ("12:30:15", "十二時三十分十五秒"),
    ("午後3時", "午後三時"),
    ("午前9:30", "午前九時三十分"),
    ("3:15 PM", "午後三時十五分"),
    ("7:00am", "午前七時"),
    ("25:00", "25:00"),  # not a time
    # money
    ("¥1,000", "千円"),
    ("￥500", "五百円"),
    ("$20", "二十ドル"),
    ("$3.50", "三ドル五十セント"),
    ("$3.00", "三ドル"),
    ("€5", "五ユーロ"),
    ("£10", "十ポンド"),
    ("1.5ドル", "一点五ドル"),
    # percentages, ranges, fractions, units
    ("50%", "五十パーセント"),
    ("３０％", "三十パーセント"),
    ("-2.5%", "マイナス二点五パーセント"),
    ("3～5人", "三から五人"),
    ("10〜20歳", "十から二十歳"),
    ("1/2", "二分の一"),
    ("3/4", "四分の三"),
    ("5km", "五キロメートル"),
    ("3.5kg", "三点五キログラム"),
    ("120GB", "百二十ギガバイト"),
    ("25℃", "二十五度"),
    ("-5℃", "マイナス五度"),
    ("100m走", "百メートル走"),
    # identifiers read digit by digit
    ("090-1234-5678", "ゼロ九ゼロ、一二三四、五六七八"),
    ("03-1234-5678", "ゼロ三、一二三四、五六七八"),
    # text without numbers is left as it is
    ("今日はいい天気ですね。", "今日はいい天気ですね。"),
    ("東京タワー", "東京タワー"),
    ("Python3", "Python3"),
]


@pytest.mark.parametrize(("text", "spoken"), CASES, ids=[f"{i:02d}" for i in range(len(CASES))])
def test_it_normalizes_japanese(text: str, spoken: str) -> None:
    assert normalize_text(text, language="ja") == spoken


def test_it_has_at_least_sixty_cases() -> None:
    assert len(CASES) >= 60


@pytest.mark.parametrize("code", ["ja-JP", "ja_jp", "jpn", "JA"])
def test_it_accepts_japanese_language_variants(code: str) -> None:
    assert normalize_text("3個", language=code) == "三個"


@pytest.mark.parametrize(
    ("value", "kanji"),
    [(1, "一"), (10, "十"), (15, "十五"), (101, "百一"), (1100, "千百"), (21000, "二万千"), (100010, "十万十")],
)
def test_it_writes_kanji_numerals(value: int, kanji: str) -> None:
    assert kanji_number(value) == kanji


def test_it_keeps_offsets_into_the_original_text() -> None:
    text = "ＡＢＣは¥1,000で、ｶﾞｽ代は3月1日です"
    rewritten = normalize_aligned(text, language="ja")
    assert rewritten.text == "ABCは千円で、ガス代は三月一日です"
    start = rewritten.text.index("千円")
    assert rewritten.source_span(start, start + 2) == (text.index("¥"), text.index("で"))
    start = rewritten.text.index("ガ")
    assert text[slice(*rewritten.source_span(start, start + 1))] == "ｶﾞ"


def test_it_splits_sentences_at_japanese_ends() -> None:
    text = "今日はいい天気ですね。散歩に行きましょう！本当？すごい!!次へ"
    segments = prepare_text(text, language="ja")
    assert [text[s.source_start : s.source_end] for s in segments] == [
        "今日はいい天気ですね。",
        "散歩に行きましょう！",
        "本当？",
        "すごい!!",
        "次へ",
    ]


def test_it_cuts_long_japanese_sentences_at_commas_under_the_limit() -> None:
    clause = "これはとても長い文章の一部です"
    text = "、".join([clause] * 20) + "。"
    segments = prepare_text(text, language="ja", max_segment_chars=400)
    assert len(segments) > 1
    assert all(len(s.text) <= 120 for s in segments)
    assert all(text[s.source_end - 1] in "、。" for s in segments)
    assert "".join(text[s.source_start : s.source_end] for s in segments) == text


def test_it_guesses_japanese_from_kana() -> None:
    assert prepare_text("価格は1000円です")[0].text == "価格は千円です"


@pytest.mark.parametrize(
    ("kind", "text", "fmt", "spoken"),
    [
        ("cardinal", "1234", None, "千二百三十四"),
        ("ordinal", "3", None, "第三"),
        ("digits", "123", None, "一二三"),
        ("telephone", "03-1234", None, "ゼロ三、一二三四"),
        ("date", "2024-03-01", None, "二千二十四年三月一日"),
        ("date", "3/1", "md", "三月一日"),
        ("time", "10:30", None, "十時三十分"),
        ("characters", "AB1", None, "A、B、一"),
    ],
)
def test_it_reads_say_as(kind: str, text: str, fmt: str | None, spoken: str) -> None:
    assert say_as(kind, text, fmt) == spoken


def test_ssml_break_prosody_and_sub_work_for_japanese() -> None:
    ssml = (
        '<speak>今日は<break time="500ms"/>2024年です。<prosody rate="slow">ゆっくり話します。</prosody>'
        '<sub alias="とうきょう">東京</sub>へ行きます。</speak>'
    )
    segments = prepare_text(ssml, language="ja")
    assert segments[0].text == "今日は" and segments[0].pause_after_ms == 500
    assert segments[1].text == "二千二十四年です。"
    slow = [s for s in segments if "ゆっくり" in s.text]
    assert slow and slow[0].rate < 1.0
    assert any("とうきょう" in s.text and "東京" not in s.text for s in segments)
