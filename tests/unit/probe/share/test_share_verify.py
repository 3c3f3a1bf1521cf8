"""probe share's account: each record's fate from what the workers journaled, and the
verdict under at-least-once and exactly-once."""

from __future__ import annotations

import pytest

from kaudit.probe.share.verify import (
    Action,
    Event,
    Fate,
    Mix,
    ShareSecond,
    Treatment,
    explain_undelivered,
    journal_line,
    parse_event,
    per_second,
    treatment,
    verify,
)

ACCEPT_ONLY = Mix()


def _seq_of(kind: Treatment, mix: Mix, skip: int = 0) -> int:
    found = [s for s in range(1000) if treatment(s, mix) == kind]
    return found[skip]


def test_treatments_follow_the_shares_and_are_spread_over_the_sequence() -> None:
    mix = Mix(release=0.1, reject=0.05, poison=0.02)
    kinds = [treatment(s, mix) for s in range(10_000)]
    assert abs(kinds.count(Treatment.release) - 1000) <= 10
    assert abs(kinds.count(Treatment.reject) - 500) <= 10
    assert abs(kinds.count(Treatment.poison) - 200) <= 10
    # spread: every block of 100 has its share, give or take
    assert all(1 <= kinds[i:i + 100].count(Treatment.poison) <= 4
               for i in range(0, 10_000, 100))
    with pytest.raises(ValueError):
        Mix(release=0.7, reject=0.4)


def test_accepted_once_released_then_processed_rejected_and_poison_archived() -> None:
    mix = Mix(release=0.2, reject=0.2, poison=0.2)
    a, r = _seq_of(Treatment.accept, mix), _seq_of(Treatment.release, mix)
    j, p = _seq_of(Treatment.reject, mix), _seq_of(Treatment.poison, mix)
    events = [
        Event(a, 0, 0, 1, Action.processed), Event(a, 0, 0, 1, Action.accepted),
        Event(r, 1, 0, 1, Action.released), Event(r, 0, 0, 2, Action.processed),
        Event(r, 0, 0, 2, Action.accepted),
        Event(j, 1, 0, 1, Action.rejected),
        *[Event(p, w, 0, d, Action.released) for w, d in ((0, 1), (1, 2), (0, 3))]]
    result = verify([a, r, j, p], events, mix, limit=3, killed={}, expect="exactly-once")
    fates = {x.seq: (x.fate, x.deliveries, x.processings) for x in result.accounts}
    assert fates == {a: (Fate.processed, 1, 1), r: (Fate.processed, 2, 1),
                     j: (Fate.rejected, 1, 0), p: (Fate.archived, 3, 0)}
    assert result.holds is True and result.violations == []


def test_a_worker_killed_before_its_acceptance_committed_processes_twice() -> None:
    a = _seq_of(Treatment.accept, ACCEPT_ONLY, 3)
    events = [Event(a, 0, 0, 1, Action.processed, 10), Event(a, 1, 0, 2, Action.processed, 20),
              Event(a, 1, 0, 2, Action.accepted, 21)]
    result = verify([a], events, ACCEPT_ONLY, 5, {(0, 0): "SIGKILLed"}, "exactly-once")
    (account,) = result.accounts
    assert account.fate == Fate.processed_twice and account.processings == 2
    assert account.why == ("worker 0 processed it (delivery 1) and was SIGKILLed before its "
                           "acceptance was committed: the broker delivered it again")
    assert result.holds is False and result.violations[0].wrong.startswith("processed 2 times")
    assert verify([a], events, ACCEPT_ONLY, 5, {(0, 0): "SIGKILLed"},
                  "at-least-once").holds is True


def _twice(*first: Event) -> str:
    a = first[0].seq
    events = [*first, Event(a, 1, 0, 2, Action.processed, 20),
              Event(a, 1, 0, 2, Action.accepted, 21)]
    (account,) = verify([a], events, ACCEPT_ONLY, 5, {}, None).accounts
    assert account.fate == Fate.processed_twice
    return account.why


def test_why_twice_is_what_the_first_processing_journaled() -> None:
    a = _seq_of(Treatment.accept, ACCEPT_ONLY)
    processed = Event(a, 0, 0, 1, Action.processed, 10)
    held = Event(a, 0, 0, 1, Action.held, 21)  # once the other worker processed it
    failed = Event(a, 0, 0, 1, Action.ack_failed, 22, "INVALID_RECORD_STATE")
    assert _twice(processed, held, failed) == (
        "worker 0 processed it (delivery 1) and held it past its lock: the broker delivered "
        "it again meanwhile; then its acceptance failed: INVALID_RECORD_STATE (the record "
        "was no longer its to acknowledge: its lock had expired)")
    assert _twice(processed, Event(a, 0, 0, 1, Action.ack_failed, 12,
                                   "NOT_LEADER_OR_FOLLOWER")) == (
        "worker 0 processed it (delivery 1), and its acceptance failed: "
        "NOT_LEADER_OR_FOLLOWER (the partition's leader had changed): the broker delivered "
        "it again")
    # An error kaudit has no gloss for is named as it is.
    assert _twice(processed, Event(a, 0, 0, 1, Action.ack_failed, 12, "ODD")).endswith(
        "its acceptance failed: ODD: the broker delivered it again")
    # Nothing journaled after the processing: said unknown, not guessed.
    assert _twice(processed) == ("worker 0 processed it (delivery 1), and no answer to its "
                                 "acceptance was seen: delivered again (unknown why)")
    # A failure journaled for another delivery is not this processing's.
    assert "unknown why" in _twice(processed, Event(a, 0, 0, 2, Action.ack_failed, 12, "X"))


def test_each_processing_that_did_not_stand_is_told_in_turn() -> None:
    # On a slow host the other worker's lock expired first; the held processing is the
    # second of three, and its story must be in the why all the same.
    a = _seq_of(Treatment.accept, ACCEPT_ONLY)
    events = [Event(a, 0, 0, 1, Action.processed, 10),
              Event(a, 0, 0, 1, Action.ack_failed, 12, "INVALID_RECORD_STATE"),
              Event(a, 1, 0, 2, Action.processed, 20), Event(a, 1, 0, 2, Action.held, 31),
              Event(a, 1, 0, 2, Action.ack_failed, 40, "INVALID_RECORD_STATE"),
              Event(a, 0, 0, 3, Action.processed, 30), Event(a, 0, 0, 3, Action.accepted, 31)]
    (account,) = verify([a], events, ACCEPT_ONLY, 5, {}, "at-least-once").accounts
    assert (account.fate, account.processings) == (Fate.processed_twice, 3)
    lock = "(the record was no longer its to acknowledge: its lock had expired)"
    assert account.why == (
        f"worker 0 processed it (delivery 1), and its acceptance failed: INVALID_RECORD_STATE "
        f"{lock}: the broker delivered it again; then worker 1 processed it (delivery 2) and "
        f"held it past its lock: the broker delivered it again meanwhile; then its "
        f"acceptance failed: INVALID_RECORD_STATE {lock}")


def test_a_batch_that_waited_on_a_held_record_is_told_as_processed_after_its_lock() -> None:
    # Worker 0 holds record a past its lock, with record b of the same batch still in
    # hand; both locks run out, worker 1 processes and accepts both (delivery 2); then
    # worker 0 acknowledges a late and processes b late: Kafka answers both with no error.
    a, b = _seq_of(Treatment.accept, ACCEPT_ONLY), _seq_of(Treatment.accept, ACCEPT_ONLY, 1)
    events = [Event(a, 0, 0, 1, Action.processed, 10),
              Event(a, 1, 0, 2, Action.processed, 2000), Event(b, 1, 0, 2, Action.processed, 2000),
              Event(a, 1, 0, 2, Action.accepted, 2005), Event(b, 1, 0, 2, Action.accepted, 2005),
              Event(a, 0, 0, 1, Action.held, 2010), Event(b, 0, 0, 1, Action.processed, 2011),
              Event(a, 0, 0, 1, Action.accepted, 2020), Event(b, 0, 0, 1, Action.accepted, 2020)]
    held, late = verify([a, b], events, ACCEPT_ONLY, 5, {}, "exactly-once").accounts
    assert held.why == ("worker 0 processed it (delivery 1) and held it past its lock: the "
                        "broker delivered it again meanwhile; then its late acceptance met "
                        "no error")
    # Not "committed, yet delivered again", and no restarted count: delivery 2 was
    # processed first, but delivery 1 was the one whose lock ran out.
    assert late.why == ("worker 0 processed it (delivery 1) after its lock had run out: "
                        "worker 1 had processed its delivery 2 already; its late "
                        "acceptance met no error")
    assert (late.fate, late.processings, late.top_count) == (Fate.processed_twice, 2, 2)
    # Processed in time, but its commit was answered after the other worker's delivery:
    # it too reached the broker after the lock had run out.
    slow_commit = [Event(b, 0, 0, 1, Action.processed, 10),
                   Event(b, 1, 0, 2, Action.processed, 2000),
                   Event(b, 1, 0, 2, Action.accepted, 2005),
                   Event(b, 0, 0, 1, Action.accepted, 2020)]
    (account,) = verify([b], slow_commit, ACCEPT_ONLY, 5, {}, None).accounts
    assert account.why == ("worker 0 processed it (delivery 1); its acceptance was answered "
                           "only after its lock had run out (worker 1 had processed its "
                           "delivery 2 already), with no error")
    # Committed before any other delivery: the broker's reason is not for kaudit to guess.
    early = [*slow_commit[:1], Event(b, 0, 0, 1, Action.accepted, 20), *slow_commit[1:3]]
    assert "(unknown why)" in verify([b], early, ACCEPT_ONLY, 5, {}, None).accounts[0].why


def test_a_held_record_nobody_else_read_comes_back_to_its_worker_and_is_said_so() -> None:
    # No other worker reads its partition: the slow worker gives up its hold, its late
    # acknowledgement is refused, and the broker delivers the record to it again.
    a = _seq_of(Treatment.accept, ACCEPT_ONLY)
    events = [Event(a, 0, 0, 1, Action.processed, 10), Event(a, 0, 0, 1, Action.held, 12010),
              Event(a, 0, 0, 1, Action.ack_failed, 12020, "INVALID_RECORD_STATE"),
              Event(a, 0, 0, 2, Action.processed, 12500),
              Event(a, 0, 0, 2, Action.accepted, 12510)]
    (account,) = verify([a], events, ACCEPT_ONLY, 5, {}, "exactly-once").accounts
    assert (account.fate, account.processings) == (Fate.processed_twice, 2)
    assert account.why == ("worker 0 processed it (delivery 1) and held it past its lock: "
                           "its lock ran out meanwhile; then its acceptance failed: "
                           "INVALID_RECORD_STATE (the record was no longer its to "
                           "acknowledge: its lock had expired)")


def test_what_breaks_at_least_once() -> None:
    mix = Mix(reject=0.3, poison=0.3)
    a = _seq_of(Treatment.accept, mix)
    lost = _seq_of(Treatment.accept, mix, 1)
    j, p = _seq_of(Treatment.reject, mix), _seq_of(Treatment.poison, mix)
    events = [Event(a, 0, 0, 1, Action.rejected),          # an accept record rejected
              Event(j, 0, 0, 1, Action.processed),          # a reject record processed
              Event(j, 0, 0, 1, Action.accepted),
              Event(p, 0, 0, 1, Action.released), Event(p, 0, 0, 2, Action.released)]
    result = verify([a, lost, j, p], events, mix, 3, {}, "at-least-once")
    wrong = {v.seq: v.wrong for v in result.violations}
    assert wrong == {a: "rejected: never processed", lost: "never_delivered: never processed",
                     j: "a rejected record was processed",
                     p: "unsettled after 2 deliveries, not archived after exactly 3"}
    assert result.counts == {"rejected": 1, "never_delivered": 1, "processed": 1,
                             "unsettled": 1}


def test_journal_lines_read_back_and_a_torn_one_is_skipped() -> None:
    event = Event(41, 2, 1, 3, Action.released, 1_795_000_000_000)
    assert parse_event(journal_line(event)) == event
    assert parse_event("41 2 1 3 relea") is None
    assert parse_event("41 2 1 3 eaten 5") is None
    failed = Event(41, 2, 1, 3, Action.ack_failed, 5, "INVALID_RECORD_STATE")
    assert parse_event(journal_line(failed)) == failed
    assert journal_line(Event(1, 0, 0, 1, Action.ack_failed, 5, "a b")).split()[-1] == "a_b"


def test_per_second_counts_a_redelivery_by_the_journals_not_the_brokers_count() -> None:
    start = 1_000_000
    events = [Event(1, 0, 0, 1, Action.processed, start + 100),
              Event(1, 0, 0, 1, Action.ack_failed, start + 200, "_TRANSPORT"),
              Event(2, 0, 0, 1, Action.released, start + 300),
              # the broker counted both redeliveries as first ones (a leader changed)
              Event(1, 1, 0, 1, Action.processed, start + 2500),
              Event(2, 1, 0, 1, Action.processed, start + 2600),
              Event(1, 1, 0, 1, Action.accepted, start + 2700)]
    assert per_second(events, start) == [
        ShareSecond(0, processed=1, released=1, ack_failed=1), ShareSecond(1),
        ShareSecond(2, processed=2, redelivered=2)]
    assert per_second([], start) == []


def test_a_redelivery_the_broker_counted_as_first_is_said_and_counted_as_a_delivery() -> None:
    a = _seq_of(Treatment.accept, ACCEPT_ONLY)
    events = [Event(a, 0, 0, 1, Action.processed, 10),
              Event(a, 0, 0, 1, Action.ack_failed, 11, "_TRANSPORT"),
              Event(a, 1, 0, 1, Action.processed, 20), Event(a, 1, 0, 1, Action.accepted, 21)]
    (account,) = verify([a], events, ACCEPT_ONLY, 5, {}, "at-least-once").accounts
    assert (account.fate, account.deliveries, account.top_count) == (
        Fate.processed_twice, 2, 1)
    assert account.acknowledgements == {"accepted": 1, "ack_failed": 1}
    assert account.why == (
        "worker 0 processed it (delivery 1), and its acceptance failed: _TRANSPORT (the "
        "connection to the partition's leader broke): the broker delivered it again; the "
        "broker counted the next delivery 1 again (its count restarted)")


def test_a_poison_record_is_judged_by_the_brokers_count_at_its_archiving() -> None:
    mix = Mix(poison=0.5)
    p = _seq_of(Treatment.poison, mix)
    # four deliveries handled, the broker's count restarted once: archived at its count 3
    events = [Event(p, 0, 0, d, Action.released) for d in (1, 1, 2, 3)]
    (account,) = verify([p], events, mix, 3, {}, "at-least-once").accounts
    assert (account.fate, account.deliveries, account.top_count, account.wrong) == (
        Fate.archived, 4, 3, "")
    assert account.why == "released on each of its 4 deliveries; the broker counted 3, the " \
                          "limit is 3"


def test_a_record_below_the_groups_start_offset_is_said_never_to_come() -> None:
    placed = {0: (0, 0), 1: (1, 0), 2: (0, 1)}
    result = verify(placed, [Event(2, 0, 0, 1, Action.processed, 5),
                             Event(2, 0, 0, 1, Action.accepted, 6)],
                    ACCEPT_ONLY, 5, {}, "at-least-once")
    explain_undelivered(result, placed, {0: 1, 1: None}, "latest")
    why = {a.seq: a.why for a in result.accounts}
    assert why[0] == ("written below its partition's start offset (partition 0 from offset 1; "
                      "share.auto.offset.reset=latest): never to be delivered")
    # no start offset known for partition 1: nothing said beyond what the run saw
    assert why[1] == "acknowledged by the brokers, delivered to no worker while the run lasted"
    assert [v.why for v in result.violations if v.seq == 0] == [why[0]]
