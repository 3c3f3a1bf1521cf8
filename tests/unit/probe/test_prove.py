"""`kaudit probe prove` judges each claim on the runs it names, and only on evidence."""

from __future__ import annotations

import json

from kaudit.probe.model import ProbeReport
from kaudit.probe.prove import CLAIMS, EXPERIMENTS, judge
from kaudit.report.base import render
from kaudit.report.prove import PROVE, Proof
from tests.unit.probe.reports import probe_report


def _as_kafka_behaves() -> dict[str, ProbeReport]:
    return {
        "acks0": probe_report(acked=100, lost=40),
        "acks1": probe_report(acked=100, lost=40, read_then_lost=0),
        "acksall": probe_report(acked=100),
        "isr1-unclean": probe_report(acked=100, lost=30),
        "isr1-clean": probe_report(acked=100, unavailable_s=8),
        "retries": probe_report(acked=100, duplicated=5),
        "idempotent": probe_report(acked=100),
        "idempotent-restart": probe_report(acked=100, duplicated=3),
        "txn-restart": probe_report(acked=100),
        "txn-aborts": probe_report(acked=100),
    }


def _verdicts(reports: dict[str, ProbeReport]) -> dict[str, bool]:
    return {row.claim.claim: row.confirmed for row in judge(reports)}


def test_every_claim_names_runs_the_proof_makes() -> None:
    names = {e.name for e in EXPERIMENTS}
    assert len(names) == len(EXPERIMENTS)
    assert {n for c in CLAIMS for n in c.experiments} == names
    assert len(CLAIMS) >= 11


def test_the_counts_kafka_gives_confirm_every_claim_but_aborts_need_aborted_sends() -> None:
    verdicts = _verdicts(_as_kafka_behaves())
    # txn-aborts: these reports have no aborted sends, so that claim has no evidence.
    assert verdicts.pop("read_committed never sees aborted records") is False
    assert all(verdicts.values()), verdicts


def test_a_claim_the_counts_contradict_is_not_confirmed() -> None:
    reports = _as_kafka_behaves()
    reports["acksall"] = probe_report(acked=100, lost=1)
    reports["isr1-clean"] = probe_report(acked=100, lost=1)
    verdicts = _verdicts(reports)
    assert verdicts["acks=all with min.insync.replicas=2 does not"] is False
    assert verdicts["unclean election truncates acknowledged writes"] is False
    assert verdicts["acks=1 loses acknowledged writes when the leader dies first"] is True


def test_a_reader_shown_a_lost_message_contradicts_the_high_watermark_claim() -> None:
    reports = _as_kafka_behaves()
    reports["acks1"] = probe_report(acked=100, lost=40, read_then_lost=2)
    row = next(r for r in judge(reports) if "high watermark" in r.claim.claim)
    assert not row.confirmed
    assert row.observed == "lost 40, of which a reader had seen 2"


def test_an_inconclusive_or_missing_run_confirms_nothing() -> None:
    reports = _as_kafka_behaves()
    # idempotent: duplicated = 0 would hold, but nothing was acknowledged
    reports["idempotent"] = probe_report(acked=0, failed=10)
    del reports["retries"]
    rows = {r.claim.claim: r for r in judge(reports)}
    assert not rows["idempotence does not"].confirmed
    assert rows["idempotence does not"].observed == ("run idempotent inconclusive "
                                                     "(nothing acknowledged)")
    assert not rows["retries without idempotence duplicate"].confirmed
    assert rows["retries without idempotence duplicate"].observed == "run retries not made"


def test_the_report_has_one_row_per_claim_in_table_and_json() -> None:
    proof = Proof(judge(_as_kafka_behaves()), _as_kafka_behaves(), 12.0)
    assert proof.verdict == "not confirmed"
    doc = json.loads(render(PROVE, proof, "json"))
    assert doc["schema"] == "kaudit.prove/v1"
    assert [r["claim"] for r in doc["rows"]] == [c.claim for c in CLAIMS]
    assert doc["verdict"] == "not confirmed"
    assert doc["runs"]["acks1"]["lost"] == 40
    table = render(PROVE, proof, "table")
    assert f"{len(CLAIMS) - 1} of {len(CLAIMS)} claims confirmed in 12s" in table
    assert table.count("NOT CONFIRMED") == 1
