"""A truncation in leader epochs: the epochs the lost records were written in, kept in runs,
and where the log was cut, in the evidence and the verdict's words (the epoch ends are read
from the lab's leaders in tests/integration/test_probe.py)."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from kaudit.connection.settings import ConnectionSettings
from kaudit.probe.causes import EpochCut, LossCauses, attribute_losses
from kaudit.probe.epochs import EpochRuns
from kaudit.probe.evidence import _epochs, last_kept_below
from kaudit.probe.latency import LatencyHistogram, Timeline
from kaudit.probe.ledger import Ledger
from kaudit.probe.payload import encoder
from kaudit.probe.produce import AckTally
from tests.unit.probe.reports import probe_report


def test_consecutive_sequences_of_one_epoch_are_one_run() -> None:
    runs = EpochRuns()
    for seq in range(1000):
        runs.note(seq, 3)
    for seq in range(1000, 1500):
        runs.note(seq, 4)
    assert len(runs) == 2
    assert runs.epochs_of([0, 999, 1000, 1499, 1500]) == [3, 3, 4, 4, None]


def test_an_epoch_not_reported_is_never_kept_and_a_later_note_wins() -> None:
    runs = EpochRuns()
    runs.note(0, None)
    runs.note(1, -1)
    assert len(runs) == 0 and runs.epochs_of([0, 1]) == [None, None]
    runs.note(5, 2)
    runs.note(7, 2)  # not consecutive: a run of its own
    runs.note(5, 3)  # an answer replaced by a later one
    assert len(runs) == 3
    assert runs.epochs_of([7, 6, 5]) == [2, None, 3]


def test_the_ledger_keeps_acknowledged_epochs_without_a_byte_per_message() -> None:
    ledger = Ledger(2)
    for seq in range(10_000):
        ledger.next_seq(0)
        ledger.acked(0, seq, seq, None)  # librdkafka reports none to a producer
    plain = ledger.nbytes()
    assert ledger.acked_epochs(0, [0, 9_999]) == [None, None]
    for seq in range(100):
        ledger.next_seq(1)
        ledger.acked(1, seq, 500 + seq, 7 if seq < 60 else 8)
    assert ledger.acked_epochs(1, [0, 59, 60, 99]) == [7, 7, 8, 8]
    assert ledger.nbytes() - plain < 2_000  # the runs, not 100 per-message entries


@dataclass
class _Delivered:
    """What a delivery report carries, as confluent-kafka's Message gives it."""

    raw: bytes
    at: int
    epoch: int | None

    def value(self) -> bytes:
        return self.raw

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self.at

    def leader_epoch(self) -> int | None:
        return self.epoch


def test_a_delivery_report_hands_its_leader_epoch_to_the_ledger() -> None:
    ledger = Ledger(1)
    tally = AckTally(ledger, Timeline(), LatencyHistogram(), time.time_ns())
    encode = encoder(bytes(16), 100)
    for seq, epoch in enumerate([4, 4, None]):
        ledger.next_seq(0)
        tally.on_delivery(None, _Delivered(encode(seq, seq, time.time_ns()), 10 + seq, epoch))
    assert ledger.acked_epochs(0, [0, 1, 2]) == [4, 4, None]
    assert [ledger.offset(0, seq) for seq in range(3)] == [10, 11, 12]


def test_truncated_records_name_the_epochs_they_were_written_in_deleted_ones_do_not() -> None:
    causes = attribute_losses({0: [3, 100, 101, 102]}, {0: 10}, {0: 100}, {0: set()},
                              {0: [1, 4, None, 5]})
    part = causes.partitions[0]
    assert (part.deleted, part.truncated, part.acked_epochs) == (1, 3, (4, 5))
    unreported = attribute_losses({0: [100]}, {0: 0}, {0: 100}, None, {0: [None]})
    assert unreported.partitions[0].acked_epochs is None


def _truncated(**cut: object) -> LossCauses:
    causes = attribute_losses({0: [4711, 4712, 5200]}, {0: 0}, {0: 4711}, {0: {4711}},
                              {0: [3, 3, 3]} if "acked" in cut else None)
    cut.pop("acked", None)
    return causes.with_cuts({0: EpochCut(**cut)})  # type: ignore[arg-type]


def test_a_cut_read_from_the_leader_is_said_with_its_epochs() -> None:
    causes = _truncated(acked=True, leader=2, epoch_asked=3, epoch_on_leader=3,
                        end_offset=4711)
    assert causes.sentence() == (
        "3 truncated: the log was cut below offsets it had acknowledged, after a leader "
        "change (partition 0 (acknowledged offsets 4711-5200 in leader epoch 3, 1 written "
        "again; log end 4711; cut at offset 4711, where leader epoch 3 ended on the current "
        "leader, broker 2))")
    part = causes.to_dict()["partitions"][0]
    assert {k: part[k] for k in ("acked_epochs", "leader", "epoch_asked", "kept_below",
                                 "epoch_on_leader", "epoch_end_offset",
                                 "epoch_end_unread")} == {
        "acked_epochs": [3, 3], "leader": 2, "epoch_asked": 3, "kept_below": None,
        "epoch_on_leader": 3, "epoch_end_offset": 4711, "epoch_end_unread": None}


def test_with_no_epoch_reported_the_one_of_the_last_record_kept_is_asked_and_said_so() -> None:
    causes = _truncated(leader=1, epoch_asked=3, kept_below=(4710, 3), epoch_on_leader=3,
                        end_offset=4711)
    assert causes.partitions[0].acked_epochs is None
    assert ("acknowledged offsets 4711-5200, 1 written again; log end 4711; cut at offset "
            "4711, where leader epoch 3 (that of the last record kept below them, offset "
            "4710) ended on the current leader, broker 1") in causes.sentence()
    part = causes.to_dict()["partitions"][0]
    assert part["acked_epochs"] is None
    assert part["kept_below"] == {"offset": 4710, "leader_epoch": 3}


def test_an_epoch_the_leader_does_not_hold_is_said_with_the_one_it_answered_for() -> None:
    causes = _truncated(acked=True, leader=2, epoch_asked=3, epoch_on_leader=2,
                        end_offset=4700)
    assert ("cut at offset 4700, where leader epoch 2 ended on the current leader, broker 2 "
            "(epoch 3 is not on its log)") in causes.sentence()


def test_an_epoch_that_runs_past_the_lost_offsets_is_said_as_it_is() -> None:
    causes = _truncated(acked=True, leader=2, epoch_asked=3, epoch_on_leader=3,
                        end_offset=6000)
    assert ("leader epoch 3 runs on to offset 6000 on the current leader, broker 2, past "
            "offset 4711") in causes.sentence()


def test_an_epoch_end_not_read_is_said_with_why_never_guessed() -> None:
    causes = _truncated(leader=2, epoch_asked=3, kept_below=(4710, 3),
                        unread="broker 2 (h:9092) gave no answer within 10s")
    part = causes.to_dict()["partitions"][0]
    assert part["epoch_end_offset"] is None and part["epoch_on_leader"] is None
    assert part["epoch_end_unread"] == "broker 2 (h:9092) gave no answer within 10s"
    assert causes.sentence().endswith(
        "log end 4711; epoch end not read: broker 2 (h:9092) gave no answer within 10s))")


def test_read_then_lost_says_its_causes() -> None:
    report = replace(probe_report(acked=10, lost=2, read_then_lost=1),
                     read_then_lost_causes=_truncated(acked=True, leader=2, epoch_asked=3,
                                                      epoch_on_leader=3, end_offset=4711))
    line = next(v for v in report.violations() if v.startswith("read_then_lost:"))
    assert line.startswith("read_then_lost: 1 message(s) a reader was shown were lost "
                           "afterwards: 3 truncated: the log was cut")
    assert "where leader epoch 3 ended on the current leader, broker 2" in line


def test_a_record_takes_its_acknowledgements_epoch_else_the_one_a_reader_was_shown() -> None:
    ledger = Ledger(1)
    for seq in range(4):
        ledger.next_seq(0)
        ledger.acked(0, seq, seq, 5 if seq == 0 else None)
    shown = EpochRuns()
    shown.note(0, 4)
    shown.note(1, 6)
    assert _epochs(ledger, 0, [0, 1, 2], [shown]) == [5, 6, None]
    assert _epochs(ledger, 0, [0, 1], None) == [5, None]


def test_nothing_below_offset_0_is_said_without_reading() -> None:
    said = last_kept_below(ConnectionSettings("127.0.0.1:1"), "t", {0: 0}, {}, b"r" * 16)
    assert said == {0: "the records' leader epochs were not reported, and no record lies "
                       "below offset 0"}
