"""Each lost record's cause, from its acknowledged offset and the log start after the run
(the signals are read on the lab in tests/integration/test_probe.py)."""

from __future__ import annotations

from kaudit.probe.causes import attribute_losses

# A partition whose losses have no leader epochs to tell (deleted records need none).
NO_EPOCHS = {"acked_epochs": None, "leader": None, "epoch_asked": None, "kept_below": None,
             "epoch_on_leader": None, "epoch_end_offset": None, "epoch_end_unread": None}


def test_records_below_the_log_start_were_deleted_the_others_are_unknown() -> None:
    causes = attribute_losses({0: [10, 11, 4999, 5000, 7000], 1: [3]}, {0: 5000, 1: 0})
    assert (causes.deleted, causes.unknown) == (3, 3)
    zero, one = causes.partitions
    assert (zero.deleted, zero.unknown, zero.deleted_offsets) == (3, 2, (10, 4999))
    assert (one.deleted, one.unknown, one.deleted_offsets) == (0, 1, None)
    assert causes.sentence() == (
        "3 deleted below the log start offset before they were read, retention or "
        "DeleteRecords (partition 0 (log start 5000)); 3 of unknown cause (no signal kaudit "
        "reads says why)")


def test_no_acknowledged_offset_or_no_log_start_is_never_called_deleted() -> None:
    causes = attribute_losses({0: [None, -1], 1: [5]}, {0: 100, 1: None})
    assert (causes.deleted, causes.unknown) == (0, 3)
    assert causes.to_dict()["partitions"][1] == {
        "partition": 1, "log_start": None, "log_end": None, "deleted": 0, "truncated": 0,
        "unknown": 1, "deleted_offsets": None, "truncated_offsets": None, "rewritten": 0,
        **NO_EPOCHS}


def test_partitions_without_losses_are_left_out() -> None:
    causes = attribute_losses({0: [], 2: [1]}, {0: 0, 2: 5})
    assert [p.partition for p in causes.partitions] == [2]
    assert causes.to_dict() == {"deleted": 1, "truncated": 0, "unknown": 0, "partitions": [
        {"partition": 2, "log_start": 5, "log_end": None, "deleted": 1, "truncated": 0,
         "unknown": 0, "deleted_offsets": [1, 1], "truncated_offsets": None,
         "rewritten": 0, **NO_EPOCHS}]}


def test_an_offset_acknowledged_twice_or_past_the_log_end_was_truncated() -> None:
    # acks=1 and a leader change: 100-104 were acked by the old leader; the new one's log
    # ended at 100, and 100-102 were acked again to later records; the log ends at 103.
    causes = attribute_losses({0: [100, 101, 102, 103, 104]}, {0: 0}, {0: 103},
                              {0: {100, 101, 102, 50}})
    part = causes.partitions[0]
    assert (part.truncated, part.rewritten, part.unknown) == (5, 3, 0)
    assert part.truncated_offsets == (100, 104) and part.log_end == 103
    assert causes.sentence() == (
        "5 truncated: the log was cut below offsets it had acknowledged, after a leader "
        "change (partition 0 (acknowledged offsets 100-104, 3 written again; log end 103))")


def test_deleted_comes_before_truncated_and_a_hole_in_the_log_stays_unknown() -> None:
    causes = attribute_losses({0: [5, 60, 70]}, {0: 10}, {0: 200}, {0: {5}})
    part = causes.partitions[0]
    assert (part.deleted, part.truncated, part.unknown) == (1, 0, 2)
