"""The verdict in a sentence (kaudit.report.explain): built from the JSON document alone,
it names the faults and the leader change that explain a loss, and says "cause unknown"
where the events do not."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from kaudit.probe.faults.registry import parse_fault
from kaudit.probe.matrix import MatrixCell, MatrixRow
from kaudit.probe.monitor import ProbeEvent
from kaudit.probe.prove import judge
from kaudit.report.explain import (
    EXPLANATIONS,
    LOST_DELETED,
    UNVERIFIED,
    explain,
    matrix_sentence,
    probe_sentence,
    prove_sentence,
)
from kaudit.report.matrix import matrix_document
from kaudit.report.probe import probe_document
from kaudit.report.prove import Proof, prove_document
from tests.unit.probe.reports import probe_report
from tests.unit.report.probe_sample import lag_then_kill_report


def _sample() -> dict[str, Any]:
    return probe_document(lag_then_kill_report())


def test_a_loss_is_explained_by_the_faults_before_it_and_the_leader_change_after_it() -> None:
    assert probe_sentence(_sample()) == (
        "4,657 of 20,000 acknowledged writes lost: acknowledged by the leader alone "
        "(acks=1), sent between 10 s and 13 s, after 'SIGSTOP followers 2, 3 for 3s (still "
        "in the ISR)' at 10.0 s and 'SIGKILL leader 1' at 13.0 s; gone when broker 3 "
        "became leader of partition 0 at 14.1 s.")


def test_a_loss_with_no_fault_before_it_has_no_known_cause() -> None:
    doc = _sample()
    doc["events"] = [e for e in doc["events"] if e["kind"] != "fault"]
    sentence = probe_sentence(doc)
    assert sentence.startswith("4,657 of 20,000 acknowledged writes lost:")
    assert "cause unknown: no fault was injected before them" in sentence
    # What the record does say is kept, and not offered as the cause.
    assert "though broker 3 became leader of partition 0 at 14.1 s" in sentence
    assert "SIGSTOP" not in sentence and "gone when" not in sentence


def test_a_loss_with_nothing_around_it_has_no_known_cause() -> None:
    doc = probe_document(probe_report(acked=50, lost=5))
    assert probe_sentence(doc) == ("5 of 50 acknowledged writes lost, cause unknown: no "
                                   "fault was injected before them.")


def test_a_loss_after_a_fault_but_no_leader_change_has_no_known_cause() -> None:
    doc = _sample()
    doc["events"] = [e for e in doc["events"] if e["kind"] != "leader-change"]
    sentence = probe_sentence(doc)
    assert "after 'SIGSTOP followers 2, 3 for 3s (still in the ISR)' at 10.0 s" in sentence
    assert sentence.endswith("no leader change followed them, so the cause is unknown.")


def test_a_fault_after_the_new_leader_took_over_is_not_a_cause() -> None:
    doc = _sample()
    doc["events"].append({"at_s": 16.0, "kind": "fault", "detail": "SIGKILL leader 3",
                          "partition": 0})
    assert "SIGKILL leader 3" not in probe_sentence(doc)


def test_a_leader_change_before_the_loss_or_on_another_partition_is_not_its_end() -> None:
    doc = _sample()
    doc["events"] = [e for e in doc["events"] if e["kind"] != "leader-change"] + [
        {"at_s": 5.0, "kind": "leader-change", "detail": "leader 2 -> 1", "partition": 0},
        {"at_s": 14.0, "kind": "leader-change", "detail": "leader 1 -> 2", "partition": 7}]
    assert "cause is unknown" in probe_sentence(doc)


def test_the_last_faults_of_many_are_named_and_the_earlier_ones_counted() -> None:
    report = lag_then_kill_report()
    bounces = [ProbeEvent(float(s), "fault", f"bounce {s}/4: SIGKILL leader 1", 0)
               for s in range(1, 5)]
    doc = probe_document(replace(report, events=[*bounces, *report.events]))
    sentence = probe_sentence(doc)
    assert "(after 4 earlier faults)" in sentence and "bounce 4/4" not in sentence
    assert "'SIGKILL leader 1' at 13.0 s" in sentence


def test_a_loss_the_timeline_does_not_place_is_read_from_the_events_alone() -> None:
    doc = _sample()
    for second in doc["timeline"]:
        second["lost"] = 0
    sentence = probe_sentence(doc)
    assert "sent between" not in sentence
    assert "gone when broker 3 became leader of partition 0 at 14.1 s" in sentence


def test_a_pass_says_every_acknowledged_write_was_read_back_through_the_fault() -> None:
    report = probe_report(acked=20_000, settings=lag_then_kill_report().settings)
    assert probe_sentence(probe_document(report)) == (
        "All 20,000 acknowledged writes were read back through the fault "
        "lag-then-kill-leader:3 at 40%.")


def test_a_pass_names_what_it_allowed() -> None:
    doc = probe_document(probe_report(acked=30, lost=2, duplicated=3, unavailable_s=2))
    doc["verdict"], doc["violations"] = "pass", []
    doc["settings"]["expect"] = "at-most-once"
    assert probe_sentence(doc) == (
        "2 of 30 acknowledged writes lost, which --expect at-most-once allows; 3 stored "
        "more than once, which --expect at-most-once allows; writes went unanswered for 2 s.")


def test_an_inconclusive_run_says_nothing_was_acknowledged_and_why() -> None:
    doc = probe_document(probe_report(acked=0, failed=10,
                                      errors={"MSG_SIZE_TOO_LARGE": 10}))
    assert doc["verdict"] == "inconclusive"
    assert probe_sentence(doc) == (
        "None of the 10 writes was acknowledged, so the run shows nothing about delivery; "
        "the producer's errors: MSG_SIZE_TOO_LARGE x10 (1 more reason below).")


def test_a_failure_without_loss_is_said_in_plain_words() -> None:
    doc = probe_document(replace(probe_report(acked=10), drain_complete=False))
    assert probe_sentence(doc) == (
        "Some acknowledged writes could not be checked: reading back stopped before the "
        "last acknowledged offset of a partition.")
    doc["violations"].insert(0, "unavailable: writes were refused or unanswered for 30s, "
                                "more than --max-unavailable 10s")
    assert probe_sentence(doc) == (
        "Writes were refused or unanswered for 30s, more than --max-unavailable 10s "
        "(1 more reason below).")


def test_an_interrupted_run_says_so() -> None:
    doc = probe_document(replace(probe_report(acked=10), interrupted=True))
    assert probe_sentence(doc).endswith("The run was interrupted: it judges only what was "
                                        "sent before.")


@pytest.mark.parametrize("reason", [
    "inconclusive: none of 10 message(s) was acknowledged, so the run shows nothing",
    "lost: 4 acknowledged message(s) never read back (no expectation given)",
    "duplicated: 3 message(s) stored at more than one offset, 3 extra copies (exactly-once)",
    "aborted_visible: 2 message(s) of aborted transactions were visible to the reader",
    "inconsistent_offsets: 1 acknowledged offset(s) did not hold the acknowledged message",
    "could not read every partition back past its last acknowledged offset",
    "read_then_lost: 3 message(s) a reader was shown were lost afterwards",
    "unavailable: writes were refused or unanswered for 30s, more than --max-unavailable 5s",
    "MSG_SIZE_TOO_LARGE x10: permanent, a --message-size of 100 bytes is above ...",
])
def test_every_reason_a_run_fails_for_is_explained(reason: str) -> None:
    found = explain(reason)
    assert found is not None and found.means and found.to_do


def test_the_reasons_the_model_gives_are_the_ones_explained() -> None:
    """Each start in EXPLANATIONS is one a real report's violations begin with."""
    seen = [
        *probe_report(acked=0, failed=3, errors={"MSG_SIZE_TOO_LARGE": 3}).violations(),
        *probe_report(acked=10, lost=2).violations(),
        *replace(probe_report(acked=10), drain_complete=False).violations(),
        *probe_report(acked=10, lost=2, read_then_lost=1).violations(),
    ]
    assert len(seen) == 6 and all(explain(reason) is not None for reason in seen)
    drain = explain("could not read every partition back past its last acknowledged offset")
    assert drain is EXPLANATIONS["could not read every partition back"]
    assert "ended before offsets the producer had acknowledged" in drain.means
    assert "--timeout" in drain.to_do and "truncation" in drain.to_do
    assert explain("something new") is None


def test_a_matrix_sentence_names_the_configurations_that_failed() -> None:
    lossy = MatrixCell("1", False, 2, False, parse_fault("lag-then-kill-leader:3"))
    safe = MatrixCell("all", True, 2, False, parse_fault("lag-then-kill-leader:3"))
    rows = [MatrixRow(lossy, (lag_then_kill_report(), probe_report(acked=20))),
            MatrixRow(safe, (probe_report(acked=20),))]
    assert matrix_sentence(matrix_document(rows)) == (
        "1 of 3 runs failed, in 1 of 2 configurations: acks=1 idempotence=off min.isr=2 "
        "unclean=off fault=lag-then-kill-leader:3 failed 1 of 2 runs, losing 4,657 of "
        "20,020 acknowledged writes.")
    assert matrix_sentence(matrix_document(rows[1:])) == (
        "The only run kept every acknowledged write.")
    assert matrix_sentence(matrix_document([rows[1], rows[1]])) == (
        "All 2 runs of 2 configurations kept every acknowledged write.")


def test_a_prove_sentence_counts_the_claims_and_names_one_that_did_not_hold() -> None:
    reports = {"acks1": probe_report(acked=30, lost=4, read_then_lost=0),
               "acksall": probe_report(acked=30, lost=1)}
    doc = prove_document(Proof(judge(reports), reports, 5.0))
    assert prove_sentence(doc) == (
        "2 of 19 claims confirmed in 5 s; 'acks=all with min.insync.replicas=2 does not' "
        "did not hold: expected lost = 0, observed acked 30, lost 1; 16 could not be "
        "judged, their run not made or inconclusive.")
    doc["rows"] = [r for r in doc["rows"] if r["verdict"] == "CONFIRMED"]
    assert prove_sentence(doc) == "All 2 claims held in 5 s."
    # A run's notes say why evidence is missing (a loss whose cause is unknown).
    noted = probe_report(acked=30, lost=4, read_then_lost=0)
    noted.notes.append("the partitions' log start and end offsets were not read")
    doc = prove_document(Proof(judge({"acks1": noted}), {"acks1": noted}, 5.0))
    assert doc["runs"]["acks1"]["notes"] == [
        "the partitions' log start and end offsets were not read"]


def test_a_loss_to_deletion_alone_is_explained_as_retention_not_as_a_failover() -> None:
    canary = explain("lost: 10 acknowledged record(s) (10 deleted)")
    probe = explain("lost: 6 acknowledged message(s) never read back: 6 deleted below the "
                    "log start offset before they were read, retention or DeleteRecords")
    assert canary is probe is LOST_DELETED and "retention" in canary.means
    mixed = explain("lost: 12 acknowledged record(s) (10 deleted, 2 truncated)")
    assert mixed is EXPLANATIONS["lost:"]
    assert explain("lost: 3 acknowledged record(s) (3 unknown)") is EXPLANATIONS["lost:"]
    assert explain("unverified: 4 acknowledged record(s) not read back before the end "
                   "(not counted lost)") is UNVERIFIED
