"""Chinese normalization corpus (cn2an does the numbers)."""

# The corpus is real-world text: full-width punctuation, curly quotes and IPA are the point.
# ruff: noqa: RUF001

from __future__ import annotations

import pytest

from tts.text.normalize import normalize_text

CASES: list[tuple[str, str]] = [
    ("今天是2024年1月2日", "今天是二零二四年一月二日"),
    ("价格3.5元", "价格三点五元"),
    ("增长了50%", "增长了百分之五十"),
    ("增长了５０％", "增长了百分之五十"),
    ("会议在10:30开始", "会议在十点三十分开始"),
    ("会议在10:05开始", "会议在十点零五分开始"),
    ("会议在10:00开始", "会议在十点开始"),
    ("2024-01-02", "二零二四年一月二日"),
    ("电话13812345678", "电话幺三八，幺二三四，五六七八"),
    ("第3名", "第三名"),
    ("共有1,234人", "共有一千二百三十四人"),
    ("-5度", "负五度"),
    ("1/2的人", "二分之一的人"),
    ("¥100", "一百元"),
    ("$20", "二十美元"),
    ("10年", "十年"),
    ("3月8日", "三月八日"),
    ("我有007", "我有零零七"),
    ("Python3很好", "Python三很好"),
    ("有3个苹果", "有三个苹果"),
    ("12345678901234567890", "一二三四五六七八九零一二三四五六七八九零"),
    ("没有数字。", "没有数字。"),
]


@pytest.mark.parametrize(("text", "spoken"), CASES, ids=[f"{i:02d}" for i in range(len(CASES))])
def test_it_normalizes_chinese(text: str, spoken: str) -> None:
    assert normalize_text(text, language="zh") == spoken


@pytest.mark.parametrize("code", ["zh-CN", "zh_TW", "cmn"])
def test_it_accepts_chinese_language_variants(code: str) -> None:
    assert normalize_text("3个", language=code) == "三个"
