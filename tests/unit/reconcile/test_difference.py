"""Texts that look alike and differ: the first difference named, with its code points."""

from __future__ import annotations

import pytest

from kaudit.reconcile.difference import add_differences, first_difference, looks_alike


@pytest.mark.parametrize(("topic", "sink", "where"), [
    ("Main\u00a0St", "Main St", "character 5: topic U+00A0 NO-BREAK SPACE, sink U+0020 SPACE"),
    ("paid ", "paid", "character 5: topic U+0020 SPACE, sink end of text"),
    ("pa\u200bid", "paid", "character 3: topic U+200B ZERO WIDTH SPACE, sink U+0069 LATIN "
                           "SMALL LETTER I"),
    ("cafe\u0301", "caf\u00e9", "character 4: topic U+0065 LATIN SMALL LETTER E, sink U+00E9 "
                                "LATIN SMALL LETTER E WITH ACUTE"),
    ("\ufb01le", "file", "character 1: topic U+FB01 LATIN SMALL LIGATURE FI, sink U+0066 "
                         "LATIN SMALL LETTER F"),
])
def test_look_alikes_are_found_and_their_first_difference_named(
        topic: str, sink: str, where: str) -> None:
    assert looks_alike(topic, sink)
    assert first_difference(topic, sink) == where


@pytest.mark.parametrize(("topic", "sink"), [
    ("paid", "paid"), ("paid", "unpaid"), ("12.5", "12.51"), ("Main St", "Main  Rd")])
def test_equal_texts_and_visible_differences_are_not_look_alikes(topic: str, sink: str) -> None:
    assert not looks_alike(topic, sink)


def test_only_mismatched_look_alikes_get_a_difference() -> None:
    samples = {"mismatched": [{"topic_value": "a\u00a0b", "sink_value": "a b"},
                              {"topic_value": "a", "sink_value": "b"},
                              {"topic_value": None, "sink_value": "x"}],
               "missing_in_sink": [{"topic_value": "a\u00a0b", "sink_value": "a b"}]}
    add_differences(samples)
    assert [s.get("difference") for s in samples["mismatched"]] == [
        "character 2: topic U+00A0 NO-BREAK SPACE, sink U+0020 SPACE", None, None]
    assert "difference" not in samples["missing_in_sink"][0]
