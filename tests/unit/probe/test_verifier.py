"""The verifier on hand-built runs: one scenario per class, passes, samples, verdicts."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

import pytest

from kaudit.probe.ledger import Ledger
from kaudit.probe.outcomes import CLASSES
from kaudit.probe.payload import ProbeRecord
from kaudit.probe.verifier import Verification, Verifier

RUN = bytes(range(16))
OTHER_RUN = bytes(range(1, 17))

# one partition's sends: ("acked", offset) | ("failed",) | ("indeterminate",) | ("pending",)
Send = tuple[str] | tuple[str, int]


def _ledger(*partitions: Sequence[Send], aborted: Iterable[tuple[int, int]] = ()) -> Ledger:
    ledger = Ledger(len(partitions))
    for p, sends in enumerate(partitions):
        for send in sends:
            seq = ledger.next_seq(p)
            if send[0] == "acked":
                ledger.acked(p, seq, send[1])  # type: ignore[misc]
            elif send[0] == "failed":
                ledger.failed(p, seq, "NOT_ENOUGH_REPLICAS")
            elif send[0] == "indeterminate":
                ledger.indeterminate(p, seq, "_MSG_TIMED_OUT")
    for p, seq in aborted:
        ledger.mark_aborted(p, [seq])
    ledger.finish()
    return ledger


def _acked(*offsets: int) -> list[Send]:
    return [("acked", o) for o in offsets]


def _read(verifier: Verifier, log: Iterable[tuple[int, int]], partition: int = 0,
          pass_no: int = 1, run_id: bytes = RUN) -> None:
    """Feed a pass: ``log`` is (offset, sequence) in offset order."""
    for offset, seq in log:
        verifier.observe(partition, offset, ProbeRecord(run_id, seq, 0, 0), pass_no)


def _verify(ledger: Ledger, *passes: list[tuple[int, int]], samples: int = 10) -> Verification:
    verifier = Verifier(ledger, RUN, samples)
    for pass_no, log in enumerate(passes, start=1):
        _read(verifier, log, pass_no=pass_no)
        verifier.pass_done(pass_no)
    return verifier.result()


def _nonzero(v: Verification) -> dict[str, int]:
    names = [*CLASSES, "duplicate_copies", "foreign", "redelivered"]
    return {name: getattr(v, name) for name in names if getattr(v, name)}


def _in_order(n: int) -> list[tuple[int, int]]:
    return [(i, i) for i in range(n)]


def test_clean_run() -> None:
    v = _verify(_ledger(_acked(0, 1, 2, 3, 4)), _in_order(5), _in_order(5))
    assert _nonzero(v) == {}
    assert (v.sent, v.acked, v.passes) == (5, 5, (1, 2))
    assert all(v.verdict(e) == "pass" for e in (None, "at-least-once", "exactly-once",
                                                 "at-most-once"))
    assert v.violations("exactly-once") == []
    summary = v.partitions[0]
    assert (summary.first_offset, summary.last_offset) == (0, 4)
    assert (summary.first_seen_offset, summary.last_seen_offset) == (0, 4)


def test_lost() -> None:
    log = [(0, 0), (1, 1), (3, 3), (4, 4)]
    v = _verify(_ledger(_acked(0, 1, 2, 3, 4)), log, log)
    assert _nonzero(v) == {"lost": 1}
    (sample,) = v.samples["lost"]
    assert (sample.partition, sample.sequence, sample.acked_offset,
            sample.seen_offsets) == (0, 2, 2, ())
    assert v.verdict("at-least-once") == "fail"
    assert v.verdict("at-most-once") == "pass"
    assert v.violations("at-least-once") == [
        "lost: 1 acknowledged message(s) never read back (at-least-once)"]


def test_consumer_miss_rescued_by_second_pass() -> None:
    first = [(0, 0), (1, 1), (3, 3), (4, 4)]
    v = _verify(_ledger(_acked(0, 1, 2, 3, 4)), first, _in_order(5))
    assert _nonzero(v) == {"consumer_missed": 1}
    assert v.lost_first_pass_only == 1
    assert v.samples["consumer_missed"][0].seen_offsets == (2,)
    assert v.verdict("exactly-once") == "pass"


def test_without_a_second_pass_a_miss_is_a_loss() -> None:
    first = [(0, 0), (1, 1), (3, 3), (4, 4)]
    assert _nonzero(_verify(_ledger(_acked(0, 1, 2, 3, 4)), first)) == {"lost": 1}


def test_duplicate_at_two_offsets() -> None:
    # seq 2 written, its answer lost, retried without idempotence: acked at the retry's offset
    log = [(0, 0), (1, 1), (2, 2), (3, 3), (4, 2)]
    v = _verify(_ledger(_acked(0, 1, 4, 3)), log, log)
    assert _nonzero(v) == {"duplicated": 1, "duplicate_copies": 1}
    (sample,) = v.samples["duplicated"]
    assert (sample.sequence, sample.acked_offset, sample.seen_offsets) == (2, 4, (2, 4))
    assert v.verdict("at-least-once") == "pass"
    assert v.verdict(None) == "pass"
    assert v.verdict("at-most-once") == "fail"
    assert v.verdict("exactly-once") == "fail"


def test_many_copies() -> None:
    log = [(0, 0), (1, 0), (2, 0), (3, 1), (4, 0)]
    v = _verify(_ledger(_acked(0, 3)), log)
    assert _nonzero(v) == {"duplicated": 1, "duplicate_copies": 3}


def test_reorder_is_not_loss_plus_duplicate() -> None:
    # seq 1's first attempt failed, seq 2 landed, the retry of 1 landed after it
    log = [(0, 0), (1, 2), (2, 1), (3, 3)]
    v = _verify(_ledger(_acked(0, 2, 1, 3)), log, log)
    assert _nonzero(v) == {"reordered": 1}
    assert v.samples["reordered"][0].sequence == 1
    assert all(v.verdict(e) == "pass" for e in (None, "at-least-once", "exactly-once"))


def test_reorder_counts_sequences_not_pairs() -> None:
    # 3 jumps ahead of 0, 1, 2: three sequences are late, not three pairs each
    log = [(0, 3), (1, 0), (2, 1), (3, 2), (4, 4)]
    v = _verify(_ledger(_acked(1, 2, 3, 0, 4)), log)
    assert _nonzero(v) == {"reordered": 3}


def test_inconsistent_offset_seen_only_elsewhere() -> None:
    v = _verify(_ledger(_acked(0, 1, 3)), [(0, 0), (1, 1), (2, 2)])
    assert _nonzero(v) == {"inconsistent_offsets": 1}
    sample = v.samples["inconsistent_offsets"][0]
    assert (sample.sequence, sample.acked_offset, sample.seen_offsets) == (2, 3, (2,))
    assert v.verdict(None) == "fail"
    assert v.verdict("at-least-once") == "pass"


def test_acked_offset_holding_another_message() -> None:
    # the log was truncated after offset 0 and offset 1 rewritten with seq 2
    v = _verify(_ledger(_acked(0, 1, 2)), [(0, 0), (1, 2)])
    assert _nonzero(v) == {"lost": 1, "inconsistent_offsets": 2}
    assert {s.sequence for s in v.samples["inconsistent_offsets"]} == {1, 2}


def test_aborted_transaction() -> None:
    ledger = _ledger(_acked(0, 1, 2, 3), aborted=[(0, 2), (0, 3)])
    hidden = _verify(ledger, [(0, 0), (1, 1)], [(0, 0), (1, 1)])
    assert _nonzero(hidden) == {}
    assert hidden.aborted == 2
    visible = _verify(ledger, [(0, 0), (1, 1), (2, 2)])
    assert _nonzero(visible) == {"aborted_visible": 1}
    assert visible.verdict("exactly-once") == "fail"
    assert visible.verdict(None) == "fail"
    assert visible.verdict("at-least-once") == "pass"
    assert visible.verdict("at-most-once") == "pass"


def test_failed_but_present() -> None:
    v = _verify(_ledger([("acked", 0), ("failed",), ("acked", 2)]), _in_order(3))
    assert _nonzero(v) == {"failed_present": 1}
    assert v.samples["failed_present"][0].seen_offsets == (1,)
    assert v.failed == 1
    assert v.verdict("exactly-once") == "pass"


def test_failed_and_absent_is_fine() -> None:
    v = _verify(_ledger([("acked", 0), ("failed",), ("acked", 1)]), [(0, 0), (1, 2)])
    assert _nonzero(v) == {}


def test_indeterminate_present_and_absent() -> None:
    ledger = _ledger([("acked", 0), ("indeterminate",), ("pending",), ("acked", 2)])
    v = _verify(ledger, [(0, 0), (1, 1), (2, 3)])
    assert _nonzero(v) == {"indeterminate_present": 1, "indeterminate_absent": 1}
    assert v.indeterminate == 2
    assert v.verdict("exactly-once") == "pass"


def test_unexpected_and_foreign() -> None:
    ledger = _ledger(_acked(0, 1))
    verifier = Verifier(ledger, RUN)
    _read(verifier, [(0, 0), (1, 1), (2, 7)])  # seq 7 was never allocated
    _read(verifier, [(0, 0)], partition=3)  # the ledger has one partition
    _read(verifier, [(3, 0)], run_id=OTHER_RUN)
    verifier.pass_done(1)
    v = verifier.result()
    assert _nonzero(v) == {"unexpected": 2, "foreign": 1}
    assert v.partitions[0].unexpected == 1
    assert [(s.partition, s.sequence) for s in v.samples["unexpected"]] == [(0, 7), (3, 0)]
    assert v.verdict(None) == "pass"


def test_unexpected_message_at_an_acked_offset_is_inconsistent() -> None:
    v = _verify(_ledger(_acked(0, 1)), [(0, 0), (1, 9)])
    assert _nonzero(v) == {"unexpected": 1, "lost": 1, "inconsistent_offsets": 1}


def test_redelivered_offsets_are_not_duplicates() -> None:
    ledger = _ledger(_acked(0, 1, 2))
    verifier = Verifier(ledger, RUN)
    _read(verifier, [(0, 0), (1, 1), (0, 0), (1, 1), (2, 2)])  # consumer seeked back
    v = verifier.result()
    assert _nonzero(v) == {"redelivered": 2}


def test_second_pass_only_rescues() -> None:
    ledger = _ledger(_acked(0, 1, 2, 3))
    # pass 2 sees a duplicate and a reorder that pass 1 did not: neither counts
    v = _verify(ledger, _in_order(4), [(0, 0), (1, 2), (2, 1), (3, 3), (4, 3)])
    assert _nonzero(v) == {}


def test_observation_before_its_ack() -> None:
    ledger = Ledger(1)
    seqs = [ledger.next_seq(0) for _ in range(3)]
    verifier = Verifier(ledger, RUN)
    ledger.acked(0, seqs[0], 0)
    _read(verifier, [(0, 0), (1, 1)])  # seq 1 read before its delivery report
    ledger.acked(0, seqs[1], 1)
    seqs.append(ledger.next_seq(0))  # the ledger grows while the consumer reads
    ledger.acked(0, seqs[2], 2)
    ledger.acked(0, seqs[3], 3)
    _read(verifier, [(2, 2), (3, 3)])
    ledger.finish()
    assert _nonzero(verifier.result()) == {}


def test_observe_sequence_is_observe_without_the_record() -> None:
    """The read-back passes' fast path classifies exactly like observe()."""
    sends = [_acked(0, 1, 2, 4, 3)]  # seq 3 acked at 4, seq 4 at 3
    log = [(0, 0), (1, 1), (2, 2), (3, 4), (4, 3), (5, 1), (9, 7)]  # a reorder, a copy...
    by_record = _verify(_ledger(*sends), log)
    ledger = _ledger(*sends)
    verifier = Verifier(ledger, RUN)
    for offset, seq in log:
        verifier.observe_sequence(0, offset, seq, 1)
    verifier.observe_foreign()
    verifier.pass_done(1)
    by_sequence = verifier.result()
    assert by_sequence.foreign == by_record.foreign + 1
    assert dataclasses.replace(by_sequence, foreign=by_record.foreign) == by_record
    assert by_record.duplicated and by_record.reordered and by_record.unexpected


def test_acks_zero_unknown_offsets() -> None:
    ledger = _ledger([("acked", -1001), ("acked", -1001), ("acked", -1001)])
    v = _verify(ledger, [(0, 0), (5, 2)])
    assert _nonzero(v) == {"lost": 1}
    assert v.samples["lost"][0].acked_offset is None


def test_partition_summaries_and_sample_limit() -> None:
    ledger = _ledger(_acked(*range(20)), _acked(*range(5)))
    verifier = Verifier(ledger, RUN, samples=3)
    _read(verifier, [])
    _read(verifier, _in_order(4), partition=1)
    v = verifier.result()
    assert v.lost == 21
    assert [(s.partition, s.lost, s.sent, s.acked) for s in v.partitions] == [
        (0, 20, 20, 20), (1, 1, 5, 5)]
    assert [s.sequence for s in v.samples["lost"]] == [0, 1, 2]
    assert v.partitions[0].first_seen_offset is None
    data = v.to_dict()
    assert data["lost"] == 21 and data["partitions"][1]["lost"] == 1
    assert set(data["samples"]) == set(CLASSES)
    assert data["samples"]["lost"][0] == {"partition": 0, "sequence": 0, "acked_offset": 0,
                                          "seen_offsets": []}


def test_result_is_repeatable() -> None:
    ledger = _ledger(_acked(0, 1, 2, 3))
    verifier = Verifier(ledger, RUN)
    _read(verifier, [(0, 0), (1, 2), (2, 1)])
    assert verifier.result() == verifier.result()


def test_misuse() -> None:
    ledger = _ledger(_acked(0))
    with pytest.raises(ValueError):
        Verifier(ledger, b"short")
    verifier = Verifier(ledger, RUN)
    verifier.pass_done(1)
    with pytest.raises(ValueError):
        _read(verifier, [(0, 0)])
    with pytest.raises(ValueError):
        verifier.observe(0, 0, ProbeRecord(RUN, 0, 0, 0), 0)
    with pytest.raises(ValueError):
        verifier.result().verdict("exactly-twice")


# --- verdict table (issue 4, item 6) ------------------------------------------------------

_ZERO = Verification(
    sent=10, acked=10, failed=0, indeterminate=0, aborted=0, lost=0, consumer_missed=0,
    duplicated=0, duplicate_copies=0, reordered=0, inconsistent_offsets=0, aborted_visible=0,
    failed_present=0, indeterminate_present=0, indeterminate_absent=0, unexpected=0,
    foreign=0, redelivered=0, passes=(1, 2), partitions=())

_EXPECTS = (None, "at-most-once", "at-least-once", "exactly-once")


@pytest.mark.parametrize(("finding", "fails_for"), [
    ({}, set()),
    ({"lost": 1}, {None, "at-least-once", "exactly-once"}),
    ({"duplicated": 1, "duplicate_copies": 1}, {"at-most-once", "exactly-once"}),
    ({"aborted_visible": 1}, {None, "exactly-once"}),
    ({"inconsistent_offsets": 1}, {None}),
    ({"reordered": 5}, set()),
    ({"consumer_missed": 3}, set()),
    ({"failed_present": 1}, set()),
    ({"indeterminate_present": 1, "indeterminate_absent": 1}, set()),
    ({"unexpected": 1, "foreign": 2}, set()),
    ({"lost": 1, "duplicated": 1, "duplicate_copies": 2},
     {None, "at-most-once", "at-least-once", "exactly-once"}),
])
def test_verdict_table(finding: dict[str, Any], fails_for: set[str | None]) -> None:
    v = dataclasses.replace(_ZERO, **finding)
    for expect in _EXPECTS:
        want = "fail" if expect in fails_for else "pass"
        assert v.verdict(expect) == want, (finding, expect)
        lines = v.violations(expect)
        assert bool(lines) == (want == "fail")
        assert all("\n" not in line for line in lines)


def test_exactly_once_lists_every_reason() -> None:
    v = dataclasses.replace(_ZERO, lost=2, duplicated=1, duplicate_copies=1, aborted_visible=3)
    lines = v.violations("exactly-once")
    assert [line.split(":")[0] for line in lines] == ["lost", "duplicated", "aborted_visible"]
