"""`kaudit probe prove` judges each claim on the runs it names, and only on evidence."""

from __future__ import annotations

import json

from kaudit.probe.prove import (
    CLAIMS,
    CONSUMER_EXPERIMENTS,
    EXPERIMENTS,
    SHARE_EXPERIMENTS,
    RunReport,
    judge,
)
from kaudit.report.base import render
from kaudit.report.prove import PROVE, Proof
from tests.unit.probe.reports import consume_report, probe_report, share_report


def _as_kafka_behaves() -> dict[str, RunReport]:
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
        "consume-before-process": consume_report("before-process", lost=25, crashes=3),
        "consume-after-process": consume_report("after-process", duplicated=25, crashes=3),
        "consume-transactional": consume_report("transactional", crashes=3),
        "consume-sink-offsets": consume_report("sink-offsets", crashes=3),
        **{e.name: share_report(e.name) for e in SHARE_EXPERIMENTS},
    }


def _verdicts(reports: dict[str, RunReport]) -> dict[str, bool]:
    return {row.claim.claim: row.confirmed for row in judge(reports)}


def test_every_claim_names_runs_the_proof_makes() -> None:
    names = {e.name for e in (*EXPERIMENTS, *CONSUMER_EXPERIMENTS, *SHARE_EXPERIMENTS)}
    assert len(names) == len(EXPERIMENTS) + len(CONSUMER_EXPERIMENTS) + len(SHARE_EXPERIMENTS)
    assert {n for c in CLAIMS for n in c.experiments} == names
    assert len(CLAIMS) >= 19
    assert {c.side for c in CLAIMS} == {"producer", "consumer", "share"}


def test_each_share_claim_is_confirmed_by_its_run_and_refuted_when_it_goes_otherwise() -> None:
    rows = {r.claim.experiments: r for r in judge(_as_kafka_behaves(), ("share",))}
    assert len(rows) == 4 and all(r.confirmed for r in rows.values()), rows
    assert rows[("share-poison",)].observed == (
        "archived 11 of 11 poison records after exactly 3 deliveries")
    assert rows[("share-latest",)].observed == (
        "never delivered 100 of the 100 written before; processed 1 written after")
    for experiment in SHARE_EXPERIMENTS:
        broken = {**_as_kafka_behaves(), experiment.name: share_report(experiment.name,
                                                                       break_it=True)}
        row = next(r for r in judge(broken, ("share",))
                   if r.claim.experiments == (experiment.name,))
        assert not row.confirmed, (experiment.name, row.observed)
    slow = {**_as_kafka_behaves(), "share-slow": share_report("share-slow", break_it=True)}
    row = next(r for r in judge(slow, ("share",)) if r.claim.experiments == ("share-slow",))
    assert row.observed == "run share-slow inconclusive (no record was held past its lock)"


def test_a_consumer_claim_needs_its_outcome_class_and_a_finished_run() -> None:
    reports = _as_kafka_behaves()
    # after-process that lost as well as repeated is not "repeats, never loses"
    reports["consume-after-process"] = consume_report("after-process", lost=2, duplicated=5)
    # a transactional run that stopped before the end proves nothing
    reports["consume-transactional"] = consume_report("transactional", finished=False)
    # crashes asked for and none landed: inconclusive
    reports["consume-sink-offsets"] = consume_report("sink-offsets", crashes=0)
    rows = {r.claim.claim: r for r in judge(reports)}
    assert not rows["processing before committing repeats it"].confirmed
    assert rows["processing before committing repeats it"].observed == (
        "lost 2, duplicated 5 after 1 crash(es)")
    assert not rows["offsets in the producer's transaction: exactly once for "
                    "read_committed"].confirmed
    sink = next(r for r in rows.values() if r.claim.experiments == ("consume-sink-offsets",))
    assert not sink.confirmed
    assert sink.observed == "run consume-sink-offsets inconclusive (no crash landed on a batch)"
    assert rows["committing before processing loses what a crash interrupts"].confirmed


def test_only_one_side_judges_that_sides_claims() -> None:
    rows = judge(_as_kafka_behaves(), ("consumer",))
    assert [r.claim.side for r in rows] == ["consumer"] * len(rows) and len(rows) == 4
    assert all(r.confirmed for r in rows)


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
