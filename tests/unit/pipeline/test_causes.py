"""The causes given to reconcile's discrepancies, from the pipeline's evidence alone."""

from __future__ import annotations

from kaudit.pipeline import causes as c
from kaudit.pipeline.causes import (
    Cause,
    DeadLetter,
    PipelineEvidence,
    Restart,
    Snapshot,
    TaskState,
)

LETTER = DeadLetter(0, 5, "org.apache.kafka.connect.errors.DataException",
                    "Converting byte[] to Kafka Connect data failed")
S1 = Snapshot(101, 1_000, "append", "c-1")
S2 = Snapshot(102, 2_000, "append", "c-2")
S3 = Snapshot(103, 3_000, "delete")


def evidence(**changes: object) -> PipelineEvidence:
    base: dict[str, object] = {
        "committed": {0: 10, 1: 4}, "end_offsets": {0: 15, 1: 4},
        "tasks": (TaskState(0, "RUNNING"),), "dead_letter_topic": "dlq",
        "dead_letters": {(0, 5): LETTER}, "restarts": ()}
    return PipelineEvidence(**(base | changes))  # type: ignore[arg-type]


def test_a_record_in_the_dead_letter_queue_is_dead_lettered_with_its_exception() -> None:
    cause = c.missing(0, 5, "k5", evidence())
    assert cause.name == c.DEAD_LETTERED
    assert cause.detail["exception"] == LETTER.exception
    assert "in the dead letter queue dlq" in cause.evidence and LETTER.message in cause.evidence


def test_at_or_past_the_committed_offset_is_not_yet_delivered_with_the_lag() -> None:
    for offset in (10, 14):
        cause = c.missing(0, offset, "k", evidence())
        assert cause.name == c.NOT_YET_DELIVERED
        assert (cause.detail["committed"], cause.detail["lag"]) == (10, 5)
    assert "task 0 RUNNING" in c.missing(0, 10, "k", evidence()).evidence


def test_a_failed_task_is_shown_with_the_first_line_of_its_trace() -> None:
    failed = evidence(tasks=(TaskState(0, "FAILED", "ConnectException: duplicate key"),))
    cause = c.missing(0, 12, "k", failed)
    assert cause.name == c.NOT_YET_DELIVERED
    assert cause.evidence.endswith("task 0 FAILED: ConnectException: duplicate key")
    assert cause.detail["tasks"] == [{"task": 0, "state": "FAILED",
                                      "trace": "ConnectException: duplicate key"}]


def test_below_the_committed_offset_and_not_dead_lettered_is_skipped() -> None:
    cause = c.missing(0, 3, "k", evidence())
    assert cause.name == c.SKIPPED and cause.detail == {"committed": 10}
    assert "not in the dead letter queue" in cause.evidence
    silent = c.missing(0, 3, "k", evidence(tolerates_errors=True, dead_letter_topic=None,
                                           dead_letters=None))
    assert silent.name == c.SKIPPED
    assert "errors.tolerance=all without a dead letter queue" in silent.evidence
    unread = c.missing(0, 3, "k", evidence(dead_letters=None))
    assert "the dead letter queue dlq was not read" in unread.evidence
    none = c.missing(0, 3, "k", evidence(dead_letter_topic=None, dead_letters={}))
    assert "the connector has no dead letter queue" in none.evidence


def test_a_row_an_earlier_snapshot_had_is_deleted_in_sink_by_the_snapshot_that_removed_it(
        ) -> None:
    cause = c.missing(0, 3, "k3", evidence(removed_by={"k3": S3}))
    assert cause.name == c.DELETED_IN_SINK
    assert cause.detail == {"snapshot_id": 103, "at_ms": 3_000, "operation": "delete"}
    # The dead letter queue wins: a record dead-lettered was never written.
    assert c.missing(0, 5, "k3", evidence(removed_by={"k3": S3})).name == c.DEAD_LETTERED


def test_without_offsets_the_cause_is_unknown_and_says_what_was_looked_at() -> None:
    ev = evidence(committed=None, unread={"committed offsets": "group connect-x not found"})
    cause = c.missing(0, 3, "k", ev)
    assert cause.name == c.UNKNOWN
    assert cause.evidence == ("looked at dead letter queue, status topic; committed offsets "
                              "unread: group connect-x not found")
    assert c.missing(2, 0, "k", evidence()).name == c.UNKNOWN  # a partition it never read


def test_a_key_added_by_two_snapshots_is_written_twice_naming_both() -> None:
    cause = c.duplicated("k", None, evidence(added_by={"k": (S1, S2)}))
    assert cause.name == c.WRITTEN_TWICE and cause.detail == {"snapshots": [101, 102]}
    assert cause.evidence == ("added by snapshot 101 (append) at 1000 ms, commit id c-1 and "
                              "again by snapshot 102 (append) at 2000 ms, commit id c-2")


def test_a_duplicate_after_a_restart_is_a_redelivery_and_none_is_unknown() -> None:
    restarts = (Restart(0, 500), Restart(1, 900), Restart(0, 1_500))
    cause = c.duplicated("k", 800, evidence(restarts=restarts))
    assert cause.name == c.REDELIVERED
    assert cause.detail == {"task": 1, "restarted_at_ms": 900}
    assert c.duplicated("k", 2_000, evidence(restarts=restarts)).name == c.UNKNOWN
    assert c.duplicated("k", 800, evidence(restarts=None)).name == c.UNKNOWN
    untimed = c.duplicated("k", None, evidence(restarts=restarts))
    assert untimed.name == c.UNKNOWN and "the record's time was not read" in untimed.evidence
    # One snapshot that added both copies is no second write: a restart may still say why.
    assert c.duplicated("k", 800, evidence(added_by={"k": (S1, S1)},
                                           restarts=restarts)).name == c.REDELIVERED


def test_an_extra_row_names_the_snapshot_that_added_it_else_unknown() -> None:
    cause = c.extra("k", evidence(added_by={"k": (S2,)}))
    assert (cause.name, cause.detail) == (c.ADDED_BY_SNAPSHOT, {"snapshot_id": 102})
    assert c.extra("k", evidence()).name == c.UNKNOWN


def test_a_mismatch_whose_latest_record_is_not_delivered_yet_is_behind_not_wrong() -> None:
    assert c.mismatched((0, 11), evidence()).name == c.NOT_YET_DELIVERED
    assert c.mismatched((0, 9), evidence()).name == c.UNKNOWN
    assert c.mismatched(None, evidence()).name == c.UNKNOWN
    assert c.mismatched((0, 11), evidence(committed=None)).name == c.UNKNOWN


def test_the_breakdown_counts_each_cause_most_first() -> None:
    found = [Cause(c.SKIPPED, ""), Cause(c.DEAD_LETTERED, ""), Cause(c.DEAD_LETTERED, "")]
    assert list(c.breakdown(found).items()) == [(c.DEAD_LETTERED, 2), (c.SKIPPED, 1)]


def test_each_class_a_pipeline_explains_goes_to_its_own_cause_and_others_to_none() -> None:
    ev = evidence(restarts=(Restart(0, 5_000),))
    assert c.cause_of(c.Discrepancy("missing_in_sink", "k5", 0, 5), ev).name == c.DEAD_LETTERED
    assert c.cause_of(c.Discrepancy("missing_in_sink", "k", 0, 12), ev).name == \
        c.NOT_YET_DELIVERED
    # Written before the restart: redelivered; written after it: no restart explains it.
    assert c.cause_of(c.Discrepancy("duplicated_in_sink", "k", 0, 3, 4_000), ev).name == \
        c.REDELIVERED
    assert c.cause_of(c.Discrepancy("duplicated_in_sink", "k", 0, 3, 6_000), ev).name == \
        c.UNKNOWN
    assert c.cause_of(c.Discrepancy("extra_in_sink", "k"), ev).name == c.UNKNOWN
    assert c.cause_of(c.Discrepancy("mismatched", "k", 0, 11), ev).name == \
        c.NOT_YET_DELIVERED
    assert c.cause_of(c.Discrepancy("undecodable", None, 0, 1), ev) is None


def test_a_missing_row_without_its_place_is_unknown_not_guessed() -> None:
    cause = c.cause_of(c.Discrepancy("missing_in_sink", "k"), evidence())
    assert cause is not None and cause.name == c.UNKNOWN
