"""The counts and class names are defined once: the verifier's JSON keeps its contract order."""

from __future__ import annotations

from kaudit.probe.ledger import Ledger
from kaudit.probe.outcomes import (
    ANOMALIES,
    CLASSES,
    COUNTS,
    SEND_OUTCOMES,
    SUMMARY_CLASSES,
    OutcomeCounts,
)
from kaudit.probe.verifier import PartitionSummary, Verification, Verifier

RUN = bytes(range(16))

# The kaudit.probe/v1 contract's count keys, in order (verification and partitions).
CONTRACT_COUNTS = (
    "sent", "acked", "failed", "indeterminate", "aborted", "lost", "consumer_missed",
    "duplicated", "duplicate_copies", "reordered", "inconsistent_offsets", "aborted_visible",
    "failed_present", "indeterminate_present", "indeterminate_absent", "unexpected")


def test_counts_are_the_send_outcomes_then_the_classes() -> None:
    assert COUNTS == CONTRACT_COUNTS
    assert COUNTS[:len(SEND_OUTCOMES)] == SEND_OUTCOMES
    assert tuple(n for n in COUNTS[len(SEND_OUTCOMES):] if n != "duplicate_copies") == CLASSES
    assert set(ANOMALIES) <= set(SUMMARY_CLASSES) <= set(CLASSES)
    assert len(set(SUMMARY_CLASSES)) == len(SUMMARY_CLASSES)


def test_both_results_are_outcome_counts() -> None:
    assert issubclass(Verification, OutcomeCounts)
    assert issubclass(PartitionSummary, OutcomeCounts)


def test_json_keys_keep_their_order() -> None:
    ledger = Ledger(2)
    for p in range(2):
        for offset in range(3):
            ledger.acked(p, ledger.next_seq(p), offset)
    ledger.finish()
    verifier = Verifier(ledger, RUN)
    for p in range(2):
        for seq in range(3):
            verifier.observe_sequence(p, seq, seq, 1)
    verifier.pass_done(1)
    doc = verifier.result().to_dict()
    assert tuple(doc) == (*CONTRACT_COUNTS, "foreign", "redelivered", "passes", "partitions",
                          "samples")
    assert tuple(doc["partitions"][1]) == ("partition", *CONTRACT_COUNTS, "first_offset",
                                           "last_offset", "first_seen_offset",
                                           "last_seen_offset")
    assert doc["partitions"][1]["partition"] == 1
    assert doc["partitions"][1]["acked"] == 3 and doc["acked"] == 6
    assert tuple(doc["samples"]) == CLASSES
