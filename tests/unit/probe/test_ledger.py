"""The send ledger and the failed-vs-indeterminate classification."""

from __future__ import annotations

import pytest

from kaudit.probe.ledger import NO_ANSWER, Ledger, SendOutcome, classify_error, explain_error


def test_sequences_are_per_partition_and_start_pending() -> None:
    ledger = Ledger(2)
    assert [ledger.next_seq(0) for _ in range(3)] == [0, 1, 2]
    assert ledger.next_seq_peek(1) == 0
    assert ledger.next_seq(1) == 0
    assert ledger.next_seq_peek(0) == 3
    assert ledger.allocated(0) == 3 and ledger.allocated(1) == 1
    assert ledger.outcome(0, 2) is SendOutcome.pending
    assert ledger.offset(0, 2) == -1
    assert ledger.counts() == {"sent": 4, "acked": 0, "failed": 0, "indeterminate": 0,
                               "pending": 4, "aborted": 0}
    assert ledger.sent == 4


def test_an_ack_without_an_offset_is_acked_at_an_unknown_offset() -> None:
    # acks=0: librdkafka reports success with no offset (None), not -1.
    ledger = Ledger(1)
    ledger.next_seq(0)
    ledger.next_seq(0)
    ledger.acked(0, 0, None)
    ledger.acked(0, 1, -1001)
    assert ledger.outcome(0, 0) is SendOutcome.acked and ledger.offset(0, 0) == -1
    assert ledger.offset(0, 1) == -1 and ledger.last_acked_offset(0) == -1


def test_outcomes_counts_and_tallies() -> None:
    ledger = Ledger(2)
    for _ in range(5):
        ledger.next_seq(0)
    ledger.next_seq(1)
    ledger.acked(0, 0, 100)
    ledger.acked(0, 2, 102)
    ledger.acked(0, 1, 99)
    ledger.failed(0, 3, "NOT_ENOUGH_REPLICAS")
    ledger.indeterminate(1, 0, "_MSG_TIMED_OUT")
    assert ledger.offset(0, 2) == 102
    assert ledger.last_acked_offset(0) == 102
    assert ledger.first_acked_offset(0) == 99
    assert ledger.last_acked_offset(1) == -1
    assert ledger.failed_by_error == {"NOT_ENOUGH_REPLICAS": 1}
    assert ledger.indeterminate_by_reason == {"_MSG_TIMED_OUT": 1}
    assert ledger.partition_counts(0) == {"sent": 5, "acked": 3, "failed": 1,
                                          "indeterminate": 0, "pending": 1, "aborted": 0}
    assert ledger.finish() == 1
    assert ledger.finished
    assert ledger.outcome(0, 4) is SendOutcome.indeterminate
    assert ledger.indeterminate_by_reason == {"_MSG_TIMED_OUT": 1, NO_ANSWER: 1}
    assert ledger.counts() == {"sent": 6, "acked": 3, "failed": 1, "indeterminate": 2,
                               "pending": 0, "aborted": 0}


def test_late_answer_after_finish_replaces_no_answer() -> None:
    ledger = Ledger(1)
    ledger.next_seq(0)
    ledger.finish()
    ledger.acked(0, 0, 7)
    assert ledger.outcome(0, 0) is SendOutcome.acked
    assert ledger.counts()["indeterminate"] == 0 and ledger.counts()["acked"] == 1


def test_acks_zero_offset_is_unknown() -> None:
    ledger = Ledger(1)
    ledger.next_seq(0)
    ledger.acked(0, 0, -1001)  # librdkafka's OFFSET_INVALID with acks=0
    assert ledger.offset(0, 0) == -1
    assert ledger.outcome(0, 0) is SendOutcome.acked
    assert ledger.last_acked_offset(0) == -1


def test_mark_aborted_range_and_iterable() -> None:
    ledger = Ledger(1)
    for _ in range(10):
        ledger.next_seq(0)
    ledger.mark_aborted(0, range(2, 5))
    ledger.mark_aborted(0, range(3, 6))  # overlaps: counted once
    ledger.mark_aborted(0, [8, 8, 9])
    ledger.mark_aborted(0, range(9, 20))  # clipped to what was allocated
    assert [ledger.is_aborted(0, s) for s in range(10)] == [
        False, False, True, True, True, True, False, False, True, True]
    assert ledger.counts()["aborted"] == 6
    with pytest.raises(IndexError):
        ledger.mark_aborted(0, [10])


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        Ledger(0)
    ledger = Ledger(1)
    ledger.next_seq(0)
    with pytest.raises(IndexError):
        ledger.acked(0, -1, 5)
    with pytest.raises(IndexError):
        ledger.acked(0, 1, 5)
    with pytest.raises(IndexError):
        ledger.next_seq(1)


def test_nbytes_is_about_ten_bytes_per_message() -> None:
    ledger = Ledger(4)
    n = 100_000
    for i in range(n):
        ledger.next_seq(i % 4)
    per_message = ledger.nbytes() / n
    assert 10 <= per_message <= 11.5


@pytest.mark.parametrize("name", [
    "NOT_ENOUGH_REPLICAS", "MSG_SIZE_TOO_LARGE", "MESSAGE_TOO_LARGE", "_MSG_SIZE_TOO_LARGE",
    "INVALID_TOPIC_EXCEPTION", "TOPIC_AUTHORIZATION_FAILED", "RECORD_LIST_TOO_LARGE",
    "INVALID_RECORD", "UNKNOWN_TOPIC_OR_PART", "_UNKNOWN_PARTITION", "_UNKNOWN_TOPIC",
    "_INVALID_ARG", "_QUEUE_FULL", "_PURGE_QUEUE", "CORRUPT_MESSAGE", "INVALID_REQUIRED_ACKS",
    "CLUSTER_AUTHORIZATION_FAILED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH",
    "not_enough_replicas", "KafkaError.NOT_ENOUGH_REPLICAS",
])
def test_definite_failures(name: str) -> None:
    assert classify_error(name) is SendOutcome.failed
    assert "write may have happened" not in explain_error(name)


@pytest.mark.parametrize("name", [
    "_MSG_TIMED_OUT", "_TIMED_OUT", "REQUEST_TIMED_OUT", "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    "NETWORK_EXCEPTION", "_TRANSPORT", "NOT_LEADER_OR_FOLLOWER", "NOT_LEADER_FOR_PARTITION",
    "LEADER_NOT_AVAILABLE", "_PURGE_INFLIGHT", "_ALL_BROKERS_DOWN", "_FATAL", "_FENCED",
    "OUT_OF_ORDER_SEQUENCE_NUMBER", "UNKNOWN_PRODUCER_ID", "KAFKA_STORAGE_ERROR", "UNKNOWN",
    "_DESTROY", "SOMETHING_NEW_IN_KAFKA_9", "", "_UNKNOWN",
])
def test_maybe_written_is_never_failed(name: str) -> None:
    assert classify_error(name) is SendOutcome.indeterminate
    assert explain_error(name)
