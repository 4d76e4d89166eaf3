"""The Chinese front end: polyphones read in context, tone changes, Latin words as a Chinese reader says them,
Kokoro's phonemes and one word per character (no model: the front end alone)."""

# The corpus is real-world text: full-width punctuation, curly quotes and IPA are the point.
# ruff: noqa: RUF001

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tts.text.g2p import PUNCTUATION, g2p_for
from tts.text.g2p.zh import ChineseG2P, kokoro_vocabulary
from tts.text.g2p.zh_latin import latin_phonemes
from tts.text.g2p.zh_pinyin import pinyin_phonemes, read_run
from tts.text.rules import zh as zh_rules

# The shared bench texts and reference articles, where the checkout has them beside it.
REFERENCE = Path(__file__).resolve().parents[2].parent / "shared"


@pytest.fixture(scope="module")
def g2p() -> ChineseG2P:
    front_end = g2p_for("zh")
    assert isinstance(front_end, ChineseG2P)
    return front_end


def reading(sentence: str, word: str) -> str:
    readings, _ = read_run(sentence)
    start = sentence.index(word)
    return " ".join(str(r) for r in readings[start : start + len(word)])


# (sentence, word in it, its pinyin there): the same character read differently by its neighbours.
POLYPHONES: list[tuple[str, str, str]] = [
    ("我去银行取钱", "银行", "yin2 hang2"),
    ("他在路上行走", "行走", "xing2 zou3"),
    ("写了一行字", "行", "hang2"),
    ("这个行业很好", "行业", "hang2 ye4"),
    ("你真行", "行", "xing2"),
    ("一行人来了", "一行人", "yi4 xing2 ren2"),
    ("这很重要", "重要", "zhong4 yao4"),
    ("重新开始", "重新", "chong2 xin1"),
    ("不要重复", "重复", "chong2 fu4"),
    ("箱子很重", "重", "zhong4"),
    ("我在重庆", "重庆", "chong2 qing4"),
    ("孩子长大了", "长", "zhang3"),
    ("长度是三米", "长度", "chang2 du4"),
    ("他是校长", "校长", "xiao4 zhang3"),
    ("长城很长", "长城很长", "chang2 cheng2 hen3 chang2"),
    ("头发很长", "长", "chang2"),
    ("我了解他", "了解", "liao3 jie3"),
    ("好了", "了", "le5"),
    ("受不了", "了", "liao3"),
    ("去不了", "了", "liao3"),
    ("音乐很好听", "音乐", "yin1 yue4"),
    ("祝你快乐", "快乐", "kuai4 le4"),
    ("还有一个", "还", "hai2"),
    ("我去还书", "还", "huan2"),
    ("请还我钱", "还", "huan2"),
    ("他还没来", "还", "hai2"),
    ("都是我的", "都", "dou1"),
    ("现代都市", "都市", "du1 shi4"),
    ("他成为了老师", "成为", "cheng2 wei2"),
    ("他跑得很快", "得", "de5"),
    ("你得去", "得", "dei3"),
    ("得到了", "得到", "de2 dao4"),
    ("获得", "获得", "huo4 de2"),
    ("慢慢地走", "地", "de5"),
    ("高兴地说", "地", "de5"),
    ("这块地很大", "地", "di4"),
    ("地图", "地图", "di4 tu2"),
    ("别着急", "着急", "zhao2 ji2"),
    ("他看着我", "着", "zhe5"),
    ("他睡着了", "着", "zhao2"),
    ("我觉得", "觉得", "jue2 de5"),
    ("睡觉", "睡觉", "shui4 jiao4"),
    ("数学", "数学", "shu4 xue2"),
    ("爱好", "爱好", "ai4 hao4"),
    ("他很好学", "好学", "hao4 xue2"),
    ("调查结果", "调查", "diao4 cha2"),
    ("调整价格", "调整", "tiao2 zheng3"),
    ("很便宜", "便宜", "pian2 yi5"),
    ("很方便", "方便", "fang1 bian4"),
    ("他出差了", "出差", "chu1 chai1"),
    ("很差", "差", "cha4"),
    ("教书", "教", "jiao1"),
    ("教育", "教育", "jiao4 yu4"),
    ("只有一只猫", "只有", "zhi3 you3"),
    ("两只猫", "只", "zhi1"),
    ("这只是开始", "只", "zhi3"),
    ("三种方法", "种", "zhong3"),
    ("种树", "种", "zhong4"),
    ("尽管如此", "尽管", "jin3 guan3"),
    ("会计", "会计", "kuai4 ji4"),
    ("朝代", "朝代", "chao2 dai4"),
    ("自传", "自传", "zi4 zhuan4"),
    ("的确", "的确", "di2 que4"),
    ("目的", "目的", "mu4 di4"),
    ("暖和", "暖和", "nuan3 huo5"),
    ("银行行长", "银行行长", "yin2 hang2 hang2 zhang3"),
    ("我的开户行", "开户行", "kai1 hu4 hang2"),
    ("他姓曾", "曾", "zeng1"),
    ("曾经", "曾", "ceng2"),
    ("大夫", "大夫", "dai4 fu5"),
]


@pytest.mark.parametrize(("sentence", "word", "pinyin"), POLYPHONES, ids=[f"{i:02d}" for i in range(len(POLYPHONES))])
def test_it_reads_polyphones_in_context(sentence: str, word: str, pinyin: str) -> None:
    assert reading(sentence, word) == pinyin


# 一 and 不 change tone by the next syllable (Kokoro follows the written tone: they are written out).
TONE_CHANGES: list[tuple[str, str, str]] = [
    ("不是", "不", "bu2"),
    ("不好", "不", "bu4"),
    ("我不去", "不", "bu2"),
    ("是不是", "不", "bu5"),
    ("一定", "一", "yi2"),
    ("一天", "一", "yi4"),
    ("一样", "一", "yi2"),
    ("一起", "一", "yi4"),
    ("看一看", "一", "yi5"),
    ("第一", "一", "yi1"),
    ("统一了", "一", "yi1"),
    ("二零二四年一月一日", "一月一日", "yi1 yue4 yi1 ri4"),
    ("十一", "一", "yi1"),
    ("一点五", "一", "yi1"),
    ("一百", "一", "yi4"),
    ("一万", "一", "yi2"),
]


@pytest.mark.parametrize(
    ("sentence", "word", "pinyin"), TONE_CHANGES, ids=[f"{i:02d}" for i in range(len(TONE_CHANGES))]
)
def test_it_changes_the_tones_of_yi_and_bu(sentence: str, word: str, pinyin: str) -> None:
    assert reading(sentence, word) == pinyin


@pytest.mark.parametrize(
    ("word", "pinyin"),
    [("妈妈", "ma1 ma5"), ("谢谢", "xie4 xie5"), ("头发", "tou2 fa5"), ("东西", "dong1 xi5"), ("好吧", "hao3 ba5")],
)
def test_it_reads_neutral_tones(word: str, pinyin: str) -> None:
    assert reading(word, word) == pinyin


def test_it_writes_the_phonemes_kokoro_was_trained_on(g2p: ChineseG2P) -> None:
    # misaki's Kokoro v1.0 reader: jieba words apart, syllables with tone arrows; 一 before 条 is yì.
    assert g2p("你好，这是一条测试语音。") == "ni↓xau↓, ꭧɤ↘ʂɨ↘ i↘tʰjau↗ ʦʰɤ↘ʂɨ↘ y↓i→n."
    assert g2p("欢迎使用语音合成服务") == "xwa→ni↗ŋ ʂɨ↓jʊ↘ŋ y↓i→n xɤ↗ꭧʰə↗ŋ fu↗u↘"


@pytest.mark.parametrize(
    ("text", "phonemes"),
    [
        # Acronyms and short words spelled with the letter names Mainland speakers use (#35: "很多App"
        # came back from the recognizer as "很多啊", "PPT" as "弟弟" when they were read in English).
        ("AI", "ei→ai→"),
        ("CPU", "ɕi→pʰi→jou→"),
        ("PPT", "pʰi→pʰi→tʰi→"),
        ("App", "ei→pʰi→pʰi→"),
        ("iOS", "ai→ ou→ai→sɨ"),
        ("SQL", "ai→sɨʨʰjou→ai→lou"),
        # A run of capitals after a word is spelled on its own.
        ("ChatGPT", "ꭧʰɛ→tʰ ʨi→pʰi→tʰi→"),
        # Words: English (espeak-ng) in the nearest Mandarin sounds, a first tone on stressed vowels.
        ("Python", "pʰai→sən"),
        ("iPhone", "ai→ fou→n"),
        ("Wi-Fi", "wai→fai→"),
        ("Windows", "wi→ntouʦ"),
    ],
)
def test_it_reads_latin_words_as_a_chinese_reader_does(g2p: ChineseG2P, text: str, phonemes: str) -> None:
    assert g2p(text) == phonemes


def test_it_reads_latin_words_inside_chinese(g2p: ChineseG2P) -> None:
    result = g2p.phonemize("我用Python写代码，AI很火。")
    assert result.phonemes == "wo↓jʊ↘ŋ pʰai→sən ɕje↓ tai↘ma↓, ei→ai→ xə↓nxwo↓."
    spoken = [result.phonemes[w.start : w.end] for w in result.words]
    assert spoken[2] == "pʰai→sən" and spoken[6] == "ei→ai→"


def test_it_reads_full_width_letters_as_the_letters(g2p: ChineseG2P) -> None:
    assert g2p("Ｐｙｔｈｏｎ很好！") == g2p("Python很好!")
    assert g2p("ＡＩ") == g2p("AI")


def test_it_gives_one_word_per_character_with_its_span(g2p: ChineseG2P) -> None:
    text = "《你好》，我用Python。"
    result = g2p.phonemize(text)
    assert [text[w.char_start : w.char_end] for w in result.words] == ["你", "好", "我", "用", "Python"]
    for word in result.words:
        spoken = result.phonemes[word.start : word.end]
        assert spoken and spoken[0] not in PUNCTUATION and spoken[-1] not in PUNCTUATION


def test_it_gives_a_normalized_number_one_word_over_its_digits(g2p: ChineseG2P) -> None:
    text = "今天2024年1月2日，¥3.5"
    result = g2p.phonemize(text)
    sources = [text[w.char_start : w.char_end] for w in result.words]
    assert sources == ["今", "天", "2024", "年", "1", "月", "2", "日", "¥3.5"]


def test_its_spans_are_in_order_and_apart(g2p: ChineseG2P) -> None:
    # What timestamps need to place each word on exactly its characters.
    text = "会议定在下午3点，在302室。请带上Python安装包，拨打010-62345678。谢谢！"
    result = g2p.phonemize(text)
    spans = [(w.char_start, w.char_end) for w in result.words]
    assert all(a >= 0 and a < b for a, b in spans)
    assert all(spans[i - 1][1] <= spans[i][0] for i in range(1, len(spans)))
    phonemes = [(w.start, w.end) for w in result.words]
    assert all(phonemes[i - 1][1] <= phonemes[i][0] for i in range(1, len(phonemes)))


@pytest.mark.parametrize(
    ("text", "phonemes"),
    [
        ("《红楼梦》", "“xʊ↗ŋlou↗mə↘ŋ”"),
        ("好……对", "xau↓… twei↘"),
        ("走——吧", "ʦou↓— pa"),
        ("（很长）", "(xə↓nꭧʰa↗ŋ)"),
        ("你好.我是", "ni↓xau↓. wo↓ ʂɨ↘"),
        ("。。。", ""),
        ("", ""),
        ("😀こんにちは", ""),
    ],
)
def test_it_writes_punctuation_as_kokoros(g2p: ChineseG2P, text: str, phonemes: str) -> None:
    assert g2p(text) == phonemes


def _corpus() -> list[str]:
    texts = [sentence for sentence, _, _ in POLYPHONES]
    texts += ["我用Python写代码，AI很火。GitHub、ChatGPT和Wi-Fi都是英文。", "嗯，哦，呣，欸！儿子在那儿玩儿。"]
    bench = REFERENCE / "bench" / "texts.json"
    if bench.is_file():
        texts += [v for k, v in json.loads(bench.read_text(encoding="utf-8")).items() if k.startswith("zh")]
    for path in sorted((REFERENCE / "reference").glob("*.txt")):
        texts += path.read_text(encoding="utf-8").splitlines()
    return [t for t in texts if t.strip()]


def test_every_phoneme_is_in_kokoros_vocabulary(g2p: ChineseG2P) -> None:
    vocabulary = kokoro_vocabulary()
    # The writer drops what the vocabulary lacks: ask the syllables and words before that filter.
    unknown: set[str] = set()
    for text in _corpus():
        for run in re.findall(r"[\u4e00-\u9fff]+", text):
            for r in read_run(run)[0]:
                unknown |= set(pinyin_phonemes(r or "")) - vocabulary
        for word in re.findall(r"[A-Za-z]+", text):
            unknown |= set(latin_phonemes(word).replace(" ", "")) - vocabulary
        assert set(g2p(text)) <= vocabulary
    assert not unknown


def test_it_never_opens_a_connection(g2p: ChineseG2P, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the Chinese front end tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    assert g2p("数字、日期和英文单词：Kubernetes集群，2024年。")


@settings(max_examples=150, deadline=None, database=None, derandomize=True)
@given(
    text=st.text(
        alphabet=st.sampled_from(
            list("银行长了重的一不好你我他是Python AI，。！？、《》…—0123456789%:-./¥年月日ＡＢ１２")
        ),
        max_size=60,
    )
)
def test_it_reads_any_mix_with_placed_words(text: str) -> None:
    result = g2p_for("zh").phonemize(text)
    assert set(result.phonemes) <= kokoro_vocabulary()
    previous_end = 0
    for word in result.words:
        assert 0 <= word.start < word.end <= len(result.phonemes)
        assert word.char_start == -1 or 0 <= word.char_start < word.char_end <= len(text)
        assert word.char_start == -1 or word.char_start >= previous_end
        previous_end = max(previous_end, word.char_end)


@pytest.mark.parametrize("text", [t for t in _corpus()[:40]])
def test_reading_rules_are_idempotent(text: str) -> None:
    # The pipeline normalizes a segment, then the front end applies the rules again: nothing changes.
    once = zh_rules.normalize(text).text
    assert zh_rules.normalize(once).text == once
