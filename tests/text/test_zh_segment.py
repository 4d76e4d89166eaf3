"""Chinese sentences and clauses: where long Chinese text is cut, for the engine and for the
stream-input WebSocket's text buffer."""

# The corpus is real-world text: full-width punctuation and curly quotes are the point.
# ruff: noqa: RUF001

from __future__ import annotations

import pytest

from tts.synthesis.live.text_buffer import TextBuffer
from tts.text.g2p import g2p_for
from tts.text.prepare import LANGUAGE_MAX_CHARS, prepare_text
from tts.text.rules import zh as zh_rules
from tts.text.segment import segment_text, split_long
from tts.text.sentences import split_sentences

SENTENCES: list[tuple[str, list[str]]] = [
    ("你好。世界！", ["你好。", "世界！"]),
    ("真的吗？是的！", ["真的吗？", "是的！"]),
    ("我们走吧；好的", ["我们走吧；", "好的"]),
    ("他说：“你好。”然后走了。", ["他说：“你好。”", "然后走了。"]),
    ("《三体》很好看！你看过吗？", ["《三体》很好看！", "你看过吗？"]),
    ("好！！！走吧", ["好！！！", "走吧"]),
    ("什么？！真的", ["什么？！", "真的"]),
    ("你好.我是小明.", ["你好.", "我是小明."]),
    ("你好!我是小明?对", ["你好!", "我是小明?", "对"]),
    ("第一句．第二句", ["第一句．", "第二句"]),
    ("圆周率是３．１４。对", ["圆周率是３．１４。", "对"]),
    ("价格是3.5元。好", ["价格是3.5元。", "好"]),
    ("今天天气很好，我们去公园吧？", ["今天天气很好，我们去公园吧？"]),
    ("我……我不知道", ["我……我不知道"]),
    ("第一段。\n\n第二段。", ["第一段。", "第二段。"]),
]


@pytest.mark.parametrize(("text", "expected"), SENTENCES, ids=[f"{i:02d}" for i in range(len(SENTENCES))])
def test_it_ends_chinese_sentences(text: str, expected: list[str]) -> None:
    assert [text[s.start : s.end] for s in split_sentences(text)] == expected


CLAUSES: list[tuple[str, int, list[str]]] = [
    ("我们今天去公园散步，然后去吃饭，最后回家睡觉。", 12, ["我们今天去公园散步，", "然后去吃饭，", "最后回家睡觉。"]),
    ("第一件事：买菜；第二件事：做饭；第三件事：洗碗", 10, ["第一件事：买菜；", "第二件事：做饭；", "第三件事：洗碗"]),
    ("他想了想……然后说出了那个秘密……大家都惊呆了", 12, ["他想了想……", "然后说出了那个秘密……", "大家都惊呆了"]),
    ("我们今天去公园散步,然后去吃饭,最后回家睡觉", 10, ["我们今天去公园散步,", "然后去吃饭,", "最后回家睡觉"]),
    ("苹果、香蕉、橘子、葡萄、西瓜、草莓、菠萝、芒果", 12, ["苹果、香蕉、橘子、葡萄、", "西瓜、草莓、菠萝、芒果"]),
    ("他说：“今天很好，”然后走了很远很远的路", 12, ["他说：“今天很好，”", "然后走了很远很远的路"]),
]


@pytest.mark.parametrize(("text", "limit", "expected"), CLAUSES, ids=[f"{i:02d}" for i in range(len(CLAUSES))])
def test_it_cuts_long_chinese_sentences_at_clause_ends(text: str, limit: int, expected: list[str]) -> None:
    assert [text[a:b] for a, b in split_long(text, limit)] == expected


def test_it_cuts_unpunctuated_chinese_between_words() -> None:
    text = "我们今天去公园散步然后去吃饭最后回家睡觉银行行长说这很重要"
    pieces = [text[a:b] for a, b in split_long(text, 12)]
    assert pieces == ["我们今天去公园散步然后", "去吃饭最后回家睡觉", "银行行长说这很重要"]


def test_chinese_segments_fit_one_kokoro_call() -> None:
    # The limit is measured: at most 510 phonemes even for text made of the longest syllables.
    limit = LANGUAGE_MAX_CHARS["zh"]
    g2p = g2p_for("zh")
    dense = "窗床庄创装双霜爽闯撞" * 30
    segments = prepare_text(dense, language="zh")
    assert segments and all(len(s.text) <= limit for s in segments)
    assert max(len(g2p(s.text)) for s in segments) <= 510


def test_long_chinese_text_is_cut_at_clause_ends_within_the_limit() -> None:
    clause = "今天我们一起讨论语音合成服务的部署方案"  # 19 characters
    text = "，".join([clause] * 12) + "。"
    segments = prepare_text(text, language="zh")
    limit = LANGUAGE_MAX_CHARS["zh"]
    assert len(segments) > 1
    assert all(len(s.text) <= limit for s in segments)
    assert all(s.text.endswith(("，", "。")) for s in segments)
    # Offsets point back at the characters each segment came from.
    assert "".join(text[s.source_start : s.source_end] for s in segments) == text


def test_segment_offsets_cover_the_source_after_normalization() -> None:
    text = "会议在2024年1月2日10:30开始。电话010-62345678！"
    segments = segment_text(text, rewrite=zh_rules.normalize)
    assert [text[s.source_start : s.source_end] for s in segments] == [
        "会议在2024年1月2日10:30开始。",
        "电话010-62345678！",
    ]
    assert segments[0].text == "会议在二零二四年一月二日十点三十分开始。"


def test_the_text_buffer_speaks_chinese_sentences_in_auto_mode() -> None:
    buffer = TextBuffer((50,), auto_mode=True)
    assert buffer.add("你好") == []
    assert buffer.add("。这是一条") == ["你好。"]
    assert buffer.add("测试语音！我们") == ["这是一条测试语音！"]
    assert buffer.add("走吧；好的") == ["我们走吧；"]
    assert buffer.add(".然后") == ["好的."]
    assert buffer.flush() == "然后"


def test_the_text_buffer_cuts_chinese_at_clause_ends() -> None:
    # 50 characters buffered and no sentence end: the cut is after the last clause mark, never mid-word.
    buffer = TextBuffer((50,))
    text = "今天天气很好，我们下午一起去公园散步吧，然后去吃饭：最后回家睡觉……这样的安排怎么样，大家觉得好不好"
    pieces = [piece for ch in text for piece in buffer.add(ch)]
    assert pieces == ["今天天气很好，我们下午一起去公园散步吧，然后去吃饭：最后回家睡觉……这样的安排怎么样，"]
    assert buffer.pending == "大家觉得好不好"


def test_the_text_buffer_ends_a_chinese_sentence_across_messages() -> None:
    buffer = TextBuffer((50,), auto_mode=True)
    assert buffer.add("他说：“你好") == []
    assert buffer.add("。”然后") == ["他说：“你好。”"]
