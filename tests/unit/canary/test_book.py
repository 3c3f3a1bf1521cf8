"""The canary's books: each fate by its rule, on a clock the test moves itself."""

from __future__ import annotations

from kaudit.canary.book import FateMemory, PartitionBook


def book() -> PartitionBook:
    return PartitionBook(partition=0, window_s=60, late_after_s=5)


def delivered(b: PartitionBook, seq: int, offset: int, t: float) -> None:
    b.sent(seq, t)
    b.acked(seq, offset, t + 0.01)
    assert b.read(seq, offset, t + 0.02) == []


def test_a_delivered_record_is_forgotten_and_its_duplicate_caught_within_the_window() -> None:
    b = book()
    delivered(b, 0, 100, 0.0)
    assert not b.open and not b.owners  # final: no memory kept but its sequence
    [event] = b.read(0, 101, 30.0)
    assert event["kind"] == "duplicated" and event["offset"] == 101
    b.expire(61.0)  # past the window: the sequence is forgotten too
    assert b.memory.remembered() == 0
    [event] = b.read(0, 102, 62.0)
    assert event["kind"] == "beyond_window"
    assert b.counts["duplicated"] == 1 and b.counts["beyond_window"] == 1


def test_reading_again_offsets_already_passed_is_a_redelivery_not_a_duplicate() -> None:
    b = book()
    for seq in range(4):
        delivered(b, seq, 100 + seq, 0.0)
    # The reader went back to offset 101 (a rewind after a leader change): one copy each.
    assert b.read(1, 101, 1.0) == [] and b.read(2, 102, 1.0) == [] and b.read(3, 103, 1.0) == []
    assert b.counts["redelivered"] == 3 and b.counts["duplicated"] == 0
    # A second copy lies past every offset read: that one is a duplicate.
    [event] = b.read(2, 104, 1.1)
    assert event["kind"] == "duplicated" and b.counts["duplicated"] == 1
    # An unread record below the highest offset read is read, not redelivered.
    b.sent(4, 2.0)
    b.acked(4, 99, 2.0)
    assert b.read(4, 99, 2.1) == []
    assert b.counts["read"] == 5 and b.counts["redelivered"] == 3 and not b.open


def test_a_record_read_before_its_ack_is_delivered_once_acked() -> None:
    b = book()
    b.sent(0, 0.0)
    assert b.read(0, 7, 0.1) == []
    assert 0 in b.open  # not final: the answer is still to come
    b.acked(0, 7, 0.2)
    assert not b.open and b.counts["read"] == 1 and b.counts["lost"] == 0


def test_late_is_counted_and_never_lost() -> None:
    b = book()
    b.sent(0, 0.0)
    b.acked(0, 5, 0.1)
    assert b.passed(5, 0, 10.0) == []  # the reader is not past offset 5 yet
    [event] = b.read(0, 5, 12.0)
    assert event["kind"] == "late" and event["seconds"] == 12.0
    assert b.counts["late"] == 1 and b.counts["lost"] == 0


def test_passing_an_acknowledged_offset_unread_is_a_loss_with_its_cause() -> None:
    b = book()
    for seq, offset in ((0, 10), (1, 11), (2, 12)):
        b.sent(seq, 0.0)
        b.acked(seq, offset, 0.1)
    b.read(2, 12, 0.2)
    events = b.passed(13, 11, 0.3)  # retention moved the log start to 11
    assert [(e["seq"], e["cause"]) for e in events] == [(0, "deleted"), (1, "unknown")]
    assert "below the log start offset 11" in events[0]["evidence"]
    assert b.counts["lost"] == 2 and dict(b.lost_by_cause) == {"deleted": 1, "unknown": 1}
    assert not b.open


def test_an_offset_acknowledged_again_or_read_holding_another_record_is_a_truncation() -> None:
    b = book()
    b.sent(0, 0.0)
    b.acked(0, 20, 0.1)  # acks=1: the leader acknowledged 20, then died before replicating
    b.sent(1, 0.2)
    b.acked(1, 20, 0.3)  # the new leader's log reused offset 20
    b.sent(2, 0.4)
    b.acked(2, 21, 0.5)
    b.sent(3, 0.6)
    b.acked(3, 22, 0.7)  # acknowledged at 22 ...
    b.read(1, 20, 1.0)
    b.read(4, 22, 1.1)   # ... but 22 holds sequence 4 when read: 3 was cut off too
    events = b.passed(23, 0, 1.2)
    assert [(e["seq"], e["cause"]) for e in events] == [(0, "truncated"), (2, "unknown"),
                                                         (3, "truncated")]
    assert "sequence 1" in events[0]["evidence"] and "sequence 4" in events[2]["evidence"]


def test_indeterminate_and_failed_records_settle_present_or_absent() -> None:
    b = book()
    b.sent(0, 0.0)
    b.not_acked(0, 1.0, indeterminate=True)
    b.sent(1, 0.0)
    b.not_acked(1, 1.0, indeterminate=True)
    b.sent(2, 0.0)
    b.not_acked(2, 1.0, indeterminate=False)
    [present] = b.read(0, 3, 2.0)
    assert present["kind"] == "indeterminate_present"
    assert b.expire(30.0) == [] and 1 in b.open  # within the window: still may show up
    [absent] = b.expire(62.0)
    assert absent["kind"] == "indeterminate_absent" and absent["seq"] == 1
    assert not b.open and b.counts["failed"] == 1 and b.counts["failed_present"] == 0
    # An indeterminate record that shows up after it was called absent is reported.
    [again] = b.read(1, 9, 63.0)
    assert again["kind"] == "reappeared"


def test_reordered_reads_are_counted() -> None:
    b = book()
    for seq in (0, 1, 2):
        b.sent(seq, 0.0)
        b.acked(seq, 10 + seq, 0.1)
    b.read(1, 11, 0.2)
    [event] = b.read(0, 10, 0.3)
    assert event["kind"] == "reordered" and event["after"] == 1
    assert b.counts["reordered"] == 1 and b.counts["duplicated"] == 0


def test_memory_is_bounded_by_what_is_in_flight_plus_the_window() -> None:
    b = PartitionBook(partition=0, window_s=10, late_after_s=5)
    for second in range(1000):  # 100 records a second for 1,000 s
        for i in range(100):
            seq = second * 100 + i
            b.sent(seq, second)
            b.acked(seq, seq, second)
            b.read(seq, seq, second + 0.5)
        b.passed(second * 100 + 100, 0, second + 0.5)
        b.expire(second + 0.5)
    assert not b.open and not b.owners
    # A fate is kept for the window (10 s, 1,000 records) and at most a block more.
    assert b.memory.remembered() <= len(b.memory.marks) <= 1100 + 2 * FateMemory.BLOCK
    assert b.counts["read"] == 100_000 and b.counts["lost"] == 0


def test_unsettled_says_what_is_still_open_at_the_end() -> None:
    b = book()
    b.sent(0, 0.0)
    b.acked(0, 1, 0.1)
    b.sent(1, 0.2)
    assert b.unsettled() == {"acked_unread": 1, "unanswered": 1}


def test_a_truncation_names_the_leader_epochs_when_the_client_gives_them() -> None:
    b = book()
    b.sent(0, 0.0)
    b.acked(0, 20, 0.1, epoch=3)
    b.sent(1, 0.2)
    b.acked(1, 20, 0.3, epoch=4)
    b.read(1, 20, 0.4, epoch=4)
    [event] = b.passed(21, 0, 0.5)
    assert event["cause"] == "truncated"
    assert "acknowledged to it in leader epoch 3" in event["evidence"]
    assert "sequence 1 (leader epoch 4)" in event["evidence"]


def test_an_aborted_transaction_is_never_to_be_read_and_a_read_of_it_is_a_violation() -> None:
    book = PartitionBook(0, 60, 10)
    for seq in range(3):
        book.sent(seq, 0.0)
    book.acked(0, 0, 0.1)
    book.acked(1, 1, 0.1)
    assert book.withdrawn(0, 0.5, aborted=True) == []
    assert book.withdrawn(1, 0.5, aborted=True) == []
    assert book.withdrawn(2, 0.5, aborted=True) == []  # its delivery report never came
    book.acked(2, 2, 0.6)  # ... or came after the abort: the abort stands
    assert (book.counts["acked"], book.counts["aborted"]) == (0, 3)
    assert book.passed(10, 0, 1.0) == []  # the reader skips them: nothing is lost
    [seen] = book.read(1, 1, 1.1)  # a reader shown an aborted record
    assert seen["kind"] == "aborted_visible" and book.counts["aborted_visible"] == 1


def test_a_commit_with_no_known_outcome_leaves_its_records_indeterminate() -> None:
    book = PartitionBook(0, 60, 10)
    book.sent(0, 0.0)
    book.acked(0, 0, 0.1)
    book.sent(1, 0.0)
    book.acked(1, 1, 0.1)
    book.withdrawn(0, 0.5, aborted=False)
    book.withdrawn(1, 0.5, aborted=False)
    book.read(1, 1, 0.6)
    assert (book.counts["acked"], book.counts["indeterminate"]) == (0, 2)
    assert book.counts["indeterminate_present"] == 1
    assert book.passed(5, 0, 1.0) == [] and book.counts["lost"] == 0  # never lost
    book.expire(100.0)
    assert book.counts["indeterminate_absent"] == 1


def test_fate_memory_keeps_each_fate_for_the_window_and_drops_whole_blocks_after() -> None:
    m, block = FateMemory(), FateMemory.BLOCK
    for seq in range(3 * block):  # blocks 0, 1, 2 forgotten at t = 0, 1, 2
        m.remember(seq, "gone" if seq == 5 else "read", seq // block)
    assert m.fate(5) == "gone" and m.fate(block) == "read" and m.fate(3 * block) is None
    m.expire(60.0, 60, keep_from=3 * block)  # block 0 is exactly a window old: kept
    assert m.fate(0) == "read"
    m.expire(60.5, 60, keep_from=3 * block)
    assert m.base == block and m.fate(5) is None and m.fate(block) == "read"
    m.expire(1000.0, 60, keep_from=3 * block)
    assert m.remembered() == 0 and m.fate(3 * block - 1) is None


def test_fate_memory_never_drops_a_block_an_open_record_may_still_be_forgotten_into() -> None:
    m, block = FateMemory(), FateMemory.BLOCK
    for seq in range(1, 2 * block):  # sequence 0 is still open (an unread ack, say)
        m.remember(seq, "read", 0.0)
    m.expire(500.0, 60, keep_from=0)
    assert m.remembered() == 2 * block - 1
    m.remember(0, "gone", 501.0)
    assert m.fate(0) == "gone"
    m.expire(502.0, 60, keep_from=2 * block)  # block 0 was touched at 501: kept
    assert m.base == 0 and m.fate(1) == "read"


def test_fate_memory_clears_below_the_open_records_in_a_block_still_being_written() -> None:
    m = FateMemory()
    for seq in range(10):
        m.remember(seq, "read", 0.0)
    m.expire(100.0, 60, keep_from=7)
    assert [m.fate(s) for s in (6, 7, 9)] == [None, "read", "read"]
    assert m.remembered() == 3


def test_an_ack_without_an_offset_is_delivered_when_read_and_lost_once_a_later_one_is_read(
        ) -> None:
    b = book()
    for seq in range(4):
        b.sent(seq, 0.0)
    b.acked(0, None, 0.1)  # a retry the broker already had: written, where not said
    b.acked(1, None, 0.1)
    b.acked(2, 20, 0.1)
    b.acked(3, 21, 0.1)
    assert b.read(0, 18, 0.2) == [] and 0 not in b.open  # read: delivered, forgotten
    assert b.passed(19, 0, 0.3) == [] and 1 in b.open  # nothing after it read yet
    b.read(2, 20, 0.4)
    [lost] = b.passed(21, 0, 0.5)
    assert (lost["kind"], lost["seq"], lost["cause"]) == ("lost", 1, "unknown")
    assert "acknowledged without an offset" in lost["evidence"]
    assert b.counts["acked"] == 4 and b.counts["lost"] == 1 and b.lost_by_cause["unknown"] == 1


def test_records_past_the_new_leaders_log_end_are_truncated_at_once() -> None:
    """acks=1, followers frozen: offsets 3-5 acknowledged by the leader alone, never
    copied. The leader goes; the new one, in epoch 5, ends its log at 3, and nothing is
    written after: no reader will pass those offsets, the leader's log end says it."""
    from kaudit.canary.book import LogEnd

    b = PartitionBook(0, window_s=60, late_after_s=5)
    for seq in range(6):
        b.sent(seq, 0.0)
        b.acked(seq, seq, 0.1)
    for seq in range(3):
        b.read(seq, seq, 0.2)
    assert b.beyond(3, settled_before=1.5) and not b.beyond(3, settled_before=0.05)
    end = LogEnd(high_watermark=3, leader=2, epoch=5, log_end=3, asked_at=1.5)
    events = b.past_end(end, 2.0)
    assert [(e["seq"], e["offset"], e["cause"]) for e in events] == [
        (3, 3, "truncated"), (4, 4, "truncated"), (5, 5, "truncated")]
    assert events[0]["evidence"] == (
        "offset 3 was acknowledged to it; the current leader, broker 2, in leader epoch 5, "
        "ends its log at offset 3 (high watermark 3): the log was cut back below it after a "
        "leader change")
    assert b.counts["lost"] == 3 and b.lost_by_cause["truncated"] == 3
    assert b.unsettled()["acked_unread"] == 0 and not b.beyond(3, 9.0)


def test_a_leader_that_holds_them_or_a_later_ack_proves_nothing_lost() -> None:
    """Records past the high watermark that the leader's log still holds (only its
    followers lag), or acknowledged after the question (the answer cannot speak for
    them): not lost."""
    from kaudit.canary.book import LogEnd

    b = PartitionBook(0, window_s=60, late_after_s=5)
    for seq in range(4):
        b.sent(seq, 0.0)
        b.acked(seq, seq, 0.1 if seq < 3 else 2.0, epoch=4)
    # The leader, still in its epoch, ends its log at 3: offsets 0-2 are on it.
    assert b.past_end(LogEnd(0, leader=1, epoch=4, log_end=3, asked_at=1.0), 3.0) == []
    # A new leader ends its log at 2: offset 2 is gone (its epoch named); offset 3 was
    # acknowledged after the question, and waits for the next one.
    lost = b.past_end(LogEnd(0, leader=2, epoch=5, log_end=2, asked_at=1.0), 3.0)
    assert [(e["seq"], e["cause"]) for e in lost] == [(2, "truncated")]
    assert "acknowledged to it in leader epoch 4; the current leader, broker 2, in leader " \
           "epoch 5" in lost[0]["evidence"]
    assert b.unsettled()["acked_unread"] == 3  # 0 and 1 (on the leader) and 3 (later ack)
