"""Mapping phoneme durations to words and characters (no engine, no database)."""

from __future__ import annotations

import pytest

from tts.synthesis.alignment.timeline import AlignmentTimeline, character_times, websocket_alignment
from tts.synthesis.alignment.timestamps import SegmentTiming, _IdKinds, spoken_words
from tts.text.segment import Segment

# Piper's ids: _ pad 0, ^ BOS 1, $ EOS 2, " " 3, "," 8, "." 10; letters above.
KINDS = _IdKinds(space=frozenset({3}), pad=frozenset({0}), boundary=frozenset({1, 2, 8, 10}))


def test_it_groups_phonemes_into_words_between_spaces_and_punctuation() -> None:
    # ^ _ a _ b _ " " _ c _ , _ " " _ d _ . _ $
    ids = [1, 0, 14, 0, 15, 0, 3, 0, 16, 0, 8, 0, 3, 0, 17, 0, 10, 0, 2]
    samples = [5, 1, 10, 2, 10, 2, 4, 1, 10, 2, 8, 1, 4, 1, 10, 2, 8, 1, 5]
    words, letters = spoken_words(ids, samples, KINDS)
    # each letter owns the pad after it; BOS, spaces and punctuation belong to no word
    assert words == [(6, 30), (35, 47), (61, 73)]
    assert letters == [(6, 18), (18, 30), (35, 47), (61, 73)]


def test_it_spreads_word_time_over_its_characters() -> None:
    timing = SegmentTiming(words=[(0.1, 0.5), (0.7, 1.0)], letters=[(0.1, 0.5), (0.7, 1.0)], duration=1.4)
    starts, ends = character_times("Hi, you.", timing, offset=2.0)
    assert starts[0] == pytest.approx(2.1) and ends[1] == pytest.approx(2.5)  # "Hi"
    assert starts[4] == pytest.approx(2.7) and ends[6] == pytest.approx(3.0)  # "you"
    assert (starts[2], ends[3]) == pytest.approx((2.5, 2.7))  # ", " fills the pause
    assert ends[-1] == pytest.approx(3.4)  # "." keeps the trailing silence


def test_it_falls_back_to_letter_positions_when_word_counts_differ() -> None:
    # "$5" was spoken as two words ("five dollars"): the text has one word, speech two.
    timing = SegmentTiming(words=[(0.0, 0.4), (0.5, 1.0)], letters=[(0.0, 0.4), (0.5, 1.0)], duration=1.0)
    starts, ends = character_times("$5 now", timing, offset=0.0)
    assert starts == sorted(starts) and ends == sorted(ends)
    assert ends[-1] == pytest.approx(1.0)
    assert all(0.0 <= t <= 1.0 for t in starts + ends)


def test_it_spreads_evenly_without_durations() -> None:
    starts, ends = character_times("abcd", SegmentTiming(duration=0.8), offset=1.0)
    assert starts == pytest.approx([1.0, 1.2, 1.4, 1.6]) and ends == pytest.approx([1.2, 1.4, 1.6, 1.8])


def test_it_maps_segments_back_to_the_original_text() -> None:
    original = "Dr. Who?  Yes."
    segments = [Segment("Doctor Who?", 0, 8), Segment("Yes.", 10, 14)]
    timeline = AlignmentTimeline.for_segments(original, segments)
    timeline.add(segments[0], SegmentTiming([(0.0, 0.3), (0.35, 0.6)], [(0.0, 0.3), (0.35, 0.6)], 0.8), 0.0)
    first = timeline.take_pending()
    assert first is not None and "".join(first.alignment.characters) == "Dr. Who?"
    timeline.add(segments[1], SegmentTiming([(0.05, 0.3)], [(0.05, 0.3)], 0.5), 0.8)
    timeline.finish(1.3)
    data = timeline.as_json()
    assert "".join(data["alignment"]["characters"]) == original
    assert "".join(data["normalized_alignment"]["characters"]) == "Doctor Who? Yes."
    assert data["alignment"]["character_end_times_seconds"][-1] == 1.3
    spaces = [i for i, c in enumerate(original) if c == " "][1:]
    assert [data["alignment"]["character_start_times_seconds"][i] for i in spaces] == [0.8, 0.8]


def test_it_uses_the_spoken_text_for_ssml() -> None:
    segments = [Segment("Hello.", -1, -1)]
    timeline = AlignmentTimeline.for_segments("<speak>Hello.</speak>", segments)
    timeline.add(segments[0], SegmentTiming([(0.1, 0.4)], [(0.1, 0.4)], 0.6), 0.0)
    timeline.finish(0.6)
    assert timeline.as_json()["alignment"]["characters"] == list("Hello.")


def test_it_round_trips_through_json_for_cache_hits() -> None:
    segments = [Segment("One two.", 0, 8)]
    timeline = AlignmentTimeline.for_segments("One two.", segments)
    timeline.add(segments[0], SegmentTiming([(0.0, 0.2), (0.3, 0.5)], [(0.0, 0.2), (0.3, 0.5)], 0.7), 0.0)
    timeline.finish(0.7)
    again = AlignmentTimeline.from_json(timeline.as_json())
    assert again.as_json() == timeline.as_json()
    pending = again.take_pending()
    assert pending is not None and pending.as_json() == timeline.as_json()


def test_it_converts_to_the_websocket_shape() -> None:
    segments = [Segment("Hi.", 0, 3)]
    timeline = AlignmentTimeline.for_segments("Hi.", segments)
    timeline.add(segments[0], SegmentTiming([(0.1, 0.3)], [(0.1, 0.3)], 0.5), 2.0)
    ws = websocket_alignment(timeline.take_pending(), 2.0)
    assert ws == {"chars": ["H", "i", "."], "charStartTimesMs": [100, 200, 300], "charDurationsMs": [100, 100, 200]}
