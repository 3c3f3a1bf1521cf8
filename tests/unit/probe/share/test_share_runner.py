"""probe share's pieces that need no broker: the record value, when a run has settled,
and the report's document and table."""

from __future__ import annotations

from typing import Any, cast

from kaudit.probe.share.model import ShareReport, ShareSettings
from kaudit.probe.share.runner import LagWatch, over, settled, unconfirmed
from kaudit.probe.share.verify import Action, Event, Mix, Treatment, treatment, verify
from kaudit.probe.share.worker import parse_value, record_value
from kaudit.report.share import share_document, share_table


def test_a_record_value_names_its_run_and_only_its_run() -> None:
    assert parse_value(record_value("abc", 41), "abc") == 41
    assert parse_value(record_value("abc", 41), "xyz") is None
    assert parse_value(b"kaudit-share abc x", "abc") is None
    assert parse_value(None, "abc") is None


def test_settled_waits_for_poison_to_reach_the_limit_and_a_processing_to_confirm() -> None:
    mix = Mix(poison=0.5)
    a = next(s for s in range(100) if treatment(s, mix) == Treatment.accept)
    p = next(s for s in range(100) if treatment(s, mix) == Treatment.poison)
    events = [Event(p, 0, 0, 1, Action.released)]
    settings = ShareSettings(mix=mix)
    assert not settled(events, {a, p}, settings, 2, {}), "a never delivered"
    events.append(Event(a, 0, 0, 1, Action.processed))
    assert not settled(events, {a, p}, settings, 2, {}), "poison delivered once of 2"
    assert unconfirmed(events)
    events.append(Event(a, 0, 0, 1, Action.accepted))
    assert not unconfirmed(events)
    events.append(Event(p, 1, 0, 2, Action.released))
    assert settled(events, {a, p}, settings, 2, {})
    # processed again (its first worker was killed): unconfirmed until that is accepted;
    # a failed commit does not confirm it either (the broker may have it, or not)
    events.append(Event(a, 1, 0, 2, Action.processed))
    assert unconfirmed(events)
    events.append(Event(a, 1, 0, 2, Action.ack_failed, 0, "_TRANSPORT"))
    assert unconfirmed(events)
    events.append(Event(a, 1, 0, 2, Action.accepted))
    assert not unconfirmed(events)


def test_the_report_lists_what_went_wrong_and_counts_every_fate() -> None:
    mix = Mix()
    events = [Event(0, 0, 0, 1, Action.processed), Event(0, 0, 0, 1, Action.accepted),
              Event(1, 0, 0, 1, Action.processed), Event(1, 1, 0, 2, Action.processed),
              Event(1, 1, 0, 2, Action.accepted)]
    v = verify({0, 1, 2}, events, mix, 5, {(0, 0): "SIGKILLed"}, "exactly-once")
    report = ShareReport(run_id="r", topic="t", group="t", settings=ShareSettings(
        count=3, expect="exactly-once"), written=3, delivery_limit=5, verification=v)
    doc = share_document(report)
    assert doc["fates"] == {"processed": 1, "processed_twice": 1, "rejected": 0,
                            "archived": 0, "never_delivered": 1, "unsettled": 0}
    assert [r["seq"] for r in doc["records"]] == [1, 2] and doc["verdict"] == "fail"
    text = share_table(report)
    assert "processed twice" in text and "delivered to no worker" in text
    assert text.splitlines()[-1].startswith("verdict: FAIL (expected exactly-once): ")


class Coordinator:
    """What LagWatch answers: the coordinator says nothing is left to deliver."""

    def done(self) -> bool:
        return True


def test_the_coordinators_word_ends_a_run_only_when_it_is_asked() -> None:
    # Record 1 never reached a worker by the journals: only the coordinator can say it
    # never will. Before a run's faults strike, runner passes no coordinator.
    events = [Event(0, 0, 0, 1, Action.processed), Event(0, 0, 0, 1, Action.accepted)]
    coordinator = cast(LagWatch, cast(Any, Coordinator()))
    assert over(events, {0, 1}, ShareSettings(), 5, {}, coordinator)
    assert not over(events, {0, 1}, ShareSettings(), 5, {}, None)
    assert over(events, {0}, ShareSettings(), 5, {}, None), "the journals' own word"
