"""The consumer verifier and its attribution: pure, from journals and processings."""

from __future__ import annotations

from pathlib import Path

import pytest

from kaudit.probe.consume.journal import (
    Entry,
    JournalWriter,
    parse_line,
    parse_ranges,
    ranges_text,
    read_journal,
)
from kaudit.probe.consume.verify import Incarnation, Processing, verify


def test_ranges_round_trip() -> None:
    assert ranges_text([4, 5, 6, 9]) == "4-6,9-9"
    assert parse_ranges("4-6,9-9") == [4, 5, 6, 9]
    assert ranges_text([]) == ""


def test_a_cut_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "w0-i0.journal"
    writer = JournalWriter(path)
    writer.started()
    writer.polled(1, [10, 11, 12])
    writer.committed(1, 13)
    writer.close()
    with path.open("a") as f:
        f.write("P 123 1 10-")  # what a crash in the middle of a write could leave
    kinds = [(e.kind, e.partition, e.offsets, e.value) for e in read_journal(path)]
    assert kinds[1:] == [("B", 1, (10, 11, 12), None), ("C", 1, (), 13)]
    assert parse_line("X 1") is None and parse_line("B notanumber 1 1-2") is None


def _inc(worker: int, incarnation: int, *entries: Entry, killed: int | None = None,
         point: str | None = None) -> Incarnation:
    return Incarnation(worker, incarnation, tuple(entries), killed, point)


def B(t: int, p: int, *offsets: int) -> Entry:
    return Entry("B", t, p, offsets)


def P(t: int, p: int, *offsets: int) -> Entry:
    return Entry("P", t, p, offsets)


def C(t: int, p: int, next_offset: int) -> Entry:
    return Entry("C", t, p, value=next_offset)


def _runs(w: int, i: int, p: int, offsets: range) -> list[Processing]:
    return [Processing(p, o, w, i) for o in offsets]


def test_commit_before_process_crash_loses_the_batch_and_names_the_crash() -> None:
    # Worker 0 processes 0-4, commits 5-9 then dies before processing them; its
    # successor starts at 10.
    first = _inc(0, 0, B(1, 0, *range(5)), C(2, 0, 5), P(3, 0, *range(5)),
                 B(4, 0, *range(5, 10)), C(5, 0, 10), killed=6,
                 point="after-commit-before-process")
    second = _inc(0, 1, B(7, 0, *range(10, 20)), C(8, 0, 20), P(9, 0, *range(10, 20)))
    done = _runs(0, 0, 0, range(5)) + _runs(0, 1, 0, range(10, 20))
    v = verify({0: (0, 20)}, done, [first, second])
    assert (v.records, v.processed, v.lost, v.duplicated, v.reordered) == (20, 15, 5, 0, 0)
    assert v.delivered() == "at-most-once"
    [crash] = v.crashes
    assert (crash.worker, crash.incarnation, crash.point) == (0, 0, "after-commit-before-process")
    assert crash.lost == {0: [5, 6, 7, 8, 9]} and crash.duplicated == {}
    assert crash.in_flight == {0: "5-9"}
    assert v.unattributed_lost == {} and v.times == {0: 5, 1: 15}
    assert v.violations(None) and v.violations("at-most-once") == []


def test_process_before_commit_crash_repeats_the_batch() -> None:
    first = _inc(1, 0, B(1, 2, 0, 1, 2), P(2, 2, 0, 1, 2), C(3, 2, 3),
                 B(4, 2, 3, 4, 5), P(5, 2, 3, 4, 5), killed=6,
                 point="after-process-before-commit")
    second = _inc(1, 1, B(7, 2, 3, 4, 5, 6), P(8, 2, 3, 4, 5, 6), C(9, 2, 7))
    done = _runs(1, 0, 2, range(6)) + _runs(1, 1, 2, range(3, 7))
    v = verify({2: (0, 7)}, done, [first, second])
    assert (v.lost, v.duplicated, v.extra_processings, v.reordered) == (0, 3, 3, 0)
    assert v.delivered() == "at-least-once" and v.times == {1: 4, 2: 3}
    assert v.crashes[0].duplicated == {2: [3, 4, 5]} and v.crashes[0].lost == {}
    assert v.violations("at-least-once") == []
    assert v.violations("exactly-once") and v.violations("at-most-once")


def test_a_record_repeated_by_two_crashes_is_one_record_and_two_repeats() -> None:
    # Both incarnations process 3-5 and die before committing; the third processes them a
    # third time. 3 records duplicated, 6 extra processings, and each crash caused 3 of
    # them: what the crashes explain adds up to the extra processings, not to the records
    # (a CI run of prove compared it with the records: 75 against 62).
    first = _inc(1, 0, B(1, 2, 0, 1, 2), P(2, 2, 0, 1, 2), C(3, 2, 3),
                 B(4, 2, 3, 4, 5), P(5, 2, 3, 4, 5), killed=6,
                 point="after-process-before-commit")
    second = _inc(1, 1, B(7, 2, 3, 4, 5), P(8, 2, 3, 4, 5), killed=9,
                  point="after-process-before-commit")
    third = _inc(1, 2, B(10, 2, 3, 4, 5), P(11, 2, 3, 4, 5), C(12, 2, 6))
    done = ([Processing(2, o, 1, 0, 2) for o in range(6)]
            + [Processing(2, o, 1, 1, 8) for o in range(3, 6)]
            + [Processing(2, o, 1, 2, 11) for o in range(3, 6)])
    v = verify({2: (0, 6)}, done, [first, second, third])
    assert (v.lost, v.duplicated, v.extra_processings) == (0, 3, 6)
    assert [c.duplicated for c in v.crashes] == [{2: [3, 4, 5]}, {2: [3, 4, 5]}]
    assert sum(c.duplicated_count() for c in v.crashes) == v.extra_processings
    assert v.unattributed_duplicated == {}


def test_an_exactly_once_crash_costs_nothing_and_says_so() -> None:
    # The killed incarnation's transaction was aborted: nothing of it is in the output.
    first = _inc(0, 0, B(1, 0, 0, 1), killed=2, point="after-send-offsets-before-commit")
    second = _inc(0, 1, B(3, 0, 0, 1), P(4, 0, 0, 1), C(4, 0, 2))
    v = verify({0: (0, 2)}, _runs(0, 1, 0, range(2)), [first, second])
    assert (v.lost, v.duplicated) == (0, 0) and v.delivered() == "exactly-once"
    assert v.crashes[0].lost_count() == 0 and v.crashes[0].duplicated_count() == 0
    assert v.crashes[0].in_flight == {0: "0-1"}
    assert v.violations("exactly-once") == []


def test_reorders_repeats_and_unexplained_counts() -> None:
    # Offset 3 is processed before 2 (a reorder); 1 twice with no crash (unattributed);
    # 4 never (lost, unattributed); and 99 is not an input record at all.
    done = [Processing(0, o, 0, 0) for o in (0, 1, 3, 2, 1, 99)]
    v = verify({0: (0, 5)}, done, [_inc(0, 0)])
    assert (v.lost, v.duplicated, v.reordered, v.outside_input) == (1, 1, 1, 1)
    assert v.unattributed_lost == {0: [4]} and v.unattributed_duplicated == {0: [1]}
    assert v.delivered() == "none"
    assert any(line.startswith("outside_input") for line in v.violations("at-most-once"))


def test_input_that_does_not_start_at_zero() -> None:
    v = verify({0: (100, 103), 1: (0, 0)}, _runs(0, 0, 0, range(100, 103)), [])
    assert (v.records, v.lost, v.duplicated) == (3, 0, 0)


@pytest.mark.parametrize("expect,lost,dup,broken", [
    (None, 1, 0, True), (None, 0, 1, False), ("at-most-once", 1, 0, False),
    ("at-most-once", 0, 1, True), ("at-least-once", 0, 1, False),
    ("exactly-once", 0, 0, False), ("exactly-once", 1, 0, True),
])
def test_expectations(expect: str | None, lost: int, dup: int, broken: bool) -> None:
    done = [Processing(0, 0, 0, 0)] * (1 + dup) if not lost else []
    v = verify({0: (0, 1)}, done, [])
    assert bool(v.violations(expect)) is broken


def test_a_repeat_from_before_the_crash_is_not_the_crashs() -> None:
    # Worker 1 processed 0-1 at t=3 (after a rebalance gave it the partition) before
    # worker 0, which had processed them at t=2 without committing, crashed at t=10: the
    # repeat is the rebalance's, not the crash's.
    crashed = _inc(0, 0, B(1, 0, 0, 1), P(2, 0, 0, 1), killed=10,
                   point="after-process-before-commit")
    other = _inc(1, 0, B(3, 0, 0, 1), P(3, 0, 0, 1), C(4, 0, 2))
    done = [Processing(0, 0, 0, 0, 2), Processing(0, 1, 0, 0, 2),
            Processing(0, 0, 1, 0, 3), Processing(0, 1, 1, 0, 3)]
    v = verify({0: (0, 2)}, done, [crashed, other])
    assert v.duplicated == 2 and v.crashes[0].duplicated == {}
    assert v.unattributed_duplicated == {0: [0, 1]}


def test_each_crash_that_repeated_a_record_is_named() -> None:
    # Processed by 0.0 and 0.1, both killed before committing, then by 0.2: two repeats,
    # one per crash.
    a = _inc(0, 0, B(1, 0, 0), P(2, 0, 0), killed=3, point="after-process-before-commit")
    b = _inc(0, 1, B(4, 0, 0), P(5, 0, 0), killed=6, point="after-process-before-commit")
    c = _inc(0, 2, B(7, 0, 0), P(8, 0, 0), C(9, 0, 1))
    done = [Processing(0, 0, 0, 0, 2), Processing(0, 0, 0, 1, 5), Processing(0, 0, 0, 2, 8)]
    v = verify({0: (0, 1)}, done, [a, b, c])
    assert v.extra_processings == 2 and v.times == {3: 1}
    assert [x.duplicated for x in v.crashes] == [{0: [0]}, {0: [0]}]
    assert v.unattributed_duplicated == {}


def test_a_run_whose_crashes_never_landed_is_inconclusive_not_a_pass() -> None:
    from tests.unit.probe.reports import consume_report

    report = consume_report("before-process", crashes=0)
    assert report.verdict == "inconclusive"
    assert report.violations()[0].startswith("inconclusive: --crash-worker was asked for")
    assert consume_report("before-process", lost=3).verdict == "fail"
    assert consume_report("after-process", duplicated=3).verdict == "pass"  # loss only


def test_exactly_once_expected_fails_on_a_repeat_and_an_unfinished_run_fails() -> None:
    from dataclasses import replace

    from tests.unit.probe.reports import consume_report

    repeated = consume_report("after-process", duplicated=3)
    strict = replace(repeated, settings=replace(repeated.settings, expect="exactly-once"))
    assert strict.verdict == "fail"
    assert any(v.startswith("duplicated: 3 input record(s)") for v in strict.violations())
    unfinished = consume_report("sink-offsets", finished=False)
    assert unfinished.verdict == "fail" and unfinished.violations()[0].startswith("unfinished")


def test_a_group_that_never_consumed_is_inconclusive_not_a_loss_of_every_record() -> None:
    # Seen with --session-timeout-ms 1000 (the brokers refuse it): the workers never joined,
    # and the run said "fail: lost 100" about a commit strategy that never ran.
    from dataclasses import replace

    from tests.unit.probe.reports import consume_report

    stalled = consume_report("after-process", lost=100, crashes=0, finished=False)
    assert stalled.verification.processings == 0
    assert stalled.verdict == "inconclusive"
    assert stalled.violations()[0].startswith("inconclusive: the group processed no record")
    assert stalled.inconclusive_reason() == "the group consumed nothing"
    # Interrupted before anything was consumed: not a verdict on the group either way.
    stopped = replace(stalled, interrupted=True)
    assert not stopped.never_consumed()
    # One record processed is a group that ran: what it left is lost.
    ran = consume_report("after-process", lost=99, crashes=1, finished=False)
    assert ran.verdict == "fail" and not ran.never_consumed()


def test_an_interrupted_run_counts_only_what_a_worker_was_given() -> None:
    from kaudit.probe.consume.verify import reached

    a = _inc(0, 0, B(1, 0, 0, 1, 2), P(2, 0, 0, 1, 2), C(3, 0, 3), B(4, 0, 3, 4))
    b = _inc(1, 0, B(1, 1, 10, 11))
    # partition 0 polled up to 4, partition 1 to 11, partition 2 never
    assert reached({0: (0, 100), 1: (10, 50), 2: (5, 9)}, [a, b]) == {
        0: (0, 5), 1: (10, 12), 2: (5, 5)}
    # polled and never processed is still lost: 3-4 here
    v = verify(reached({0: (0, 100)}, [a]), [Processing(0, o, 0, 0) for o in (0, 1, 2)], [a])
    assert (v.records, v.lost, v.lost_offsets) == (5, 2, {0: [3, 4]})
