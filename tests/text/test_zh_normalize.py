"""Chinese normalization corpus: numbers, dates, times, money, percentages, ranges, phone numbers,
units and full-width characters read the Chinese way (cn2an does the numerals)."""

# The corpus is real-world text: full-width punctuation, curly quotes and IPA are the point.
# ruff: noqa: RUF001

from __future__ import annotations

import pytest

from tts.text.normalize import normalize_text, say_as
from tts.text.rules import zh

CASES: list[tuple[str, str]] = [
    # Numbers.
    ("有3个苹果", "有三个苹果"),
    ("共有1,234人", "共有一千二百三十四人"),
    ("1,234,567", "一百二十三万四千五百六十七"),
    ("12345", "一万二千三百四十五"),
    ("3.14", "三点一四"),
    ("0.5", "零点五"),
    ("-5度", "负五度"),
    ("我有007", "我有零零七"),
    ("10086", "一万零八十六"),
    ("12345678901234567890", "一二三四五六七八九零一二三四五六七八九零"),
    ("身份证号110101199003077777", "身份证号一一零一零一一九九零零三零七七七七七"),
    ("第3名", "第三名"),
    ("第1章", "第一章"),
    ("1/2的人", "二分之一的人"),
    ("3/4", "四分之三"),
    ("1+1=2", "一加一等于二"),
    ("版本1.2.3", "版本一点二点三"),
    ("IP是192.168.0.1", "IP是一九二点一六八点零点一"),
    ("80后和00后", "八零后和零零后"),
    ("没有数字。", "没有数字。"),
    # 两 where Chinese says it, 二 where it does not.
    ("我买了2个苹果", "我买了两个苹果"),
    ("下午2点见", "下午两点见"),
    ("2000人", "两千人"),
    ("20000元", "两万元"),
    ("22个", "二十二个"),
    ("2.5万", "二点五万"),
    ("第2名", "第二名"),
    ("2月14日", "二月十四日"),
    ("1-2个", "一到两个"),
    # Dates.
    ("今天是2024年1月2日", "今天是二零二四年一月二日"),
    ("2026年12月2日，北京", "二零二六年十二月二日，北京"),
    ("2024-01-02", "二零二四年一月二日"),
    ("2024/1/2", "二零二四年一月二日"),
    ("2024.01.02", "二零二四年一月二日"),
    ("3月8日是妇女节", "三月八日是妇女节"),
    ("12月25日", "十二月二十五日"),
    ("5月1号放假", "五月一号放假"),
    ("98年3月出生", "九八年三月出生"),
    ("1990年代", "一九九零年代"),
    ("10年", "十年"),
    ("他工作了10年", "他工作了十年"),
    ("13月", "十三月"),
    # Times.
    ("会议在10:30开始", "会议在十点三十分开始"),
    ("会议在10:05开始", "会议在十点零五分开始"),
    ("会议在10:00开始", "会议在十点开始"),
    ("14:30:15", "十四点三十分十五秒"),
    ("2:00出发", "两点出发"),
    ("营业时间9:00-17:00", "营业时间九点到十七点"),
    ("１０：３０", "十点三十分"),
    ("比分3:2", "比分三比二"),
    # Money.
    ("价格3.5元", "价格三点五元"),
    ("¥100", "一百元"),
    ("￥1,299.00", "一千二百九十九元"),
    ("¥12.50", "十二点五元"),
    ("$20", "二十美元"),
    ("HK$100", "一百港元"),
    ("€5", "五欧元"),
    ("£3", "三英镑"),
    ("¥100-200", "一百到二百元"),
    ("价格是100元", "价格是一百元"),
    # Percentages.
    ("增长了50%", "增长了百分之五十"),
    ("增长了５０％", "增长了百分之五十"),
    ("３．５％", "百分之三点五"),
    ("下降了-2%", "下降了负百分之二"),
    ("10%-20%", "百分之十到百分之二十"),
    ("10-20%", "百分之十到百分之二十"),
    ("浓度3‰", "浓度千分之三"),
    # Ranges.
    ("3-5个", "三到五个"),
    ("3~5天", "三到五天"),
    ("3～5天", "三到五天"),
    ("2020-2024年", "二零二零到二零二四年"),
    ("２０２０-２０２４年", "二零二零到二零二四年"),
    ("5-10km", "五到十公里"),
    ("20-25℃", "二十到二十五摄氏度"),
    # Phone numbers: digit by digit, 1 as 幺, in groups.
    ("电话13812345678", "电话幺三八，幺二三四，五六七八"),
    ("或者拨打电话010-62345678。", "或者拨打电话零幺零，六二三四五六七八。"),
    ("我的手机是+86 138 1234 5678", "我的手机是加八六，幺三八，幺二三四，五六七八"),
    ("客服热线400-800-1234", "客服热线四零零，八零零，幺二三四"),
    ("请拨打10086查询", "请拨打幺零零八六查询"),
    ("客服电话：95588", "客服电话：九五五八八"),
    # Units and temperatures.
    ("25℃", "二十五摄氏度"),
    ("-3℃", "零下三摄氏度"),
    ("100°C", "一百摄氏度"),
    ("5km", "五公里"),
    ("3kg", "三千克"),
    ("100m", "一百米"),
    ("5cm", "五厘米"),
    ("零下3.5度", "零下三点五度"),
    # Latin letters and numbers together.
    ("Python3很好", "Python三很好"),
    ("A4纸", "A四纸"),
    ("COVID-19疫情", "COVID-十九疫情"),
    ("5G网络", "五G网络"),
    # Full-width letters, digits and symbols.
    ("１２３４５", "一万二千三百四十五"),
    ("Ｐｙｔｈｏｎ很好", "Python很好"),
    ("Ｐｙｔｈｏｎ３．１２", "Python三点一二"),
    ("ＡＩ时代", "AI时代"),
    ("你好，世界！", "你好，世界！"),
]


@pytest.mark.parametrize(("text", "spoken"), CASES, ids=[f"{i:03d}" for i in range(len(CASES))])
def test_it_normalizes_chinese(text: str, spoken: str) -> None:
    assert normalize_text(text, language="zh") == spoken


@pytest.mark.parametrize("code", ["zh-CN", "zh_TW", "cmn"])
def test_it_accepts_chinese_language_variants(code: str) -> None:
    assert normalize_text("3个", language=code) == "三个"


def test_it_keeps_offsets_into_the_source() -> None:
    text = "Ｐｙｔｈｏｎ在2024年1月2日，价格¥3.5。"
    rewritten = zh.normalize(text)
    # Full-width folding is one character for one: the source keeps its length.
    assert len(rewritten.source) == len(text)
    out = rewritten.text
    year = out.index("二零二四")
    assert rewritten.source_span(year, year + 4) == (text.index("2024"), text.index("2024") + 4)
    # 年 is not part of a replacement: it maps to itself, one character.
    nian = out.index("年")
    assert text[slice(*rewritten.source_span(nian, nian + 1))] == "年"
    money = out.index("三点五元")
    assert text[slice(*rewritten.source_span(money, money + 4))] == "¥3.5"


def test_it_reads_what_a_rule_refuses_as_plain_numbers() -> None:
    # Not a date (month 13): its numbers are still read, nothing is left as digits.
    spoken = normalize_text("2024-13-45", language="zh")
    assert not any(ch.isdigit() for ch in spoken)


@pytest.mark.parametrize(
    ("kind", "text", "fmt", "spoken"),
    [
        ("telephone", "010-62345678", None, "零幺零，六二三四五六七八"),
        ("digits", "2024", None, "二零二四"),
        ("cardinal", "2024", None, "两千零二十四"),
        ("ordinal", "3", None, "第三"),
        ("date", "2024-01-02", None, "二零二四年一月二日"),
        ("date", "1/2/2024", "mdy", "二零二四年一月二日"),
        ("time", "10:30", None, "十点三十分"),
        ("characters", "A1", None, "A 一"),
    ],
)
def test_it_reads_ssml_say_as(kind: str, text: str, fmt: str | None, spoken: str) -> None:
    assert say_as(kind, text, language="zh", fmt=fmt) == spoken
