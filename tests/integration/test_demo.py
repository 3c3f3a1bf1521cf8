"""`kaudit demo` end to end, on the session's lab (the demo reuses a running lab).

The demo kills partition leaders, creates topics and starts Spark twice: it takes
a few minutes. It runs once per module; every test reads what that one run left.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kaudit.demo.model import (
    DEMO_TOPICS,
    ORDER_COUNT,
    ORDERS_TOPIC,
    SINK_CHANGED,
    SINK_DUPLICATED,
    SINK_MISSING,
    TOPIC_PREFIX,
)
from tests.conftest import Lab, Run, run_kaudit
from tests.integration.test_lab import admin, wait_until

# probe as well: the demo runs the probe matrix and kills leaders on the lab it is given.
pytestmark = [pytest.mark.kafka, pytest.mark.spark, pytest.mark.probe]

PAYMENTS_TOPIC = f"{TOPIC_PREFIX}payments"
EARLIER_ORDERS = 50


@pytest.fixture(scope="module")
def demo(lab: Lab) -> Iterator[Run]:
    """One `kaudit demo` on the running session lab; its topics are deleted afterwards.

    Two demo topics are there before it starts, as after an earlier run: the orders
    topic already holds other records, and the payments topic has had its
    min.insync.replicas raised. The demo must put the configs back and reconcile
    only the orders it produced itself.
    """
    from confluent_kafka.admin import NewTopic

    shutil.rmtree(Path(lab.state_dir) / "demo", ignore_errors=True)
    names = [t.name for t in DEMO_TOPICS]
    leftovers = [n for n in names if n in admin(lab).list_topics(timeout=5).topics]
    if leftovers:  # a reused lab (KAUDIT_TEST_LAB_DIR) after an earlier test run
        admin(lab).delete_topics(leftovers)
        wait_until(lambda: not set(names) & set(admin(lab).list_topics(timeout=5).topics),
                   60, "old demo topics deleted")
    futures = admin(lab).create_topics([
        NewTopic(ORDERS_TOPIC, 3, 3, config={"min.insync.replicas": "2"}),
        NewTopic(PAYMENTS_TOPIC, 3, 3, config={"min.insync.replicas": "2"})])
    for future in futures.values():
        future.result(30)
    wait_until(lambda: ORDERS_TOPIC in admin(lab).list_topics(timeout=5).topics, 30, "topic")
    produce_earlier_orders(lab)
    run = run_kaudit("demo", "--state-dir", lab.state_dir, timeout=900)
    yield run
    admin(lab).delete_topics(names)


def produce_earlier_orders(lab: Lab) -> None:
    """Records from before the demo (the producer is gone before the lab stops)."""
    from confluent_kafka import Producer

    earlier = Producer({"bootstrap.servers": lab.bootstrap})
    for i in range(EARLIER_ORDERS):
        earlier.produce(ORDERS_TOPIC, key=str(i), value=json.dumps({"id": i, "status": "old"}))
    assert earlier.flush(30) == 0


def report(lab: Lab, name: str) -> Any:
    return json.loads((Path(lab.state_dir) / "demo" / name).read_text(encoding="utf-8"))


def test_demo_exits_0_and_says_what_it_does(demo: Run, lab: Lab) -> None:
    assert demo.code == 0, demo.stderr
    steps = [line for line in demo.stderr.splitlines() if line.startswith("kaudit demo: [")]
    assert [s.split("]")[0] for s in steps] == [f"kaudit demo: [{n}/6" for n in range(1, 7)]
    assert f"reusing the lab running in {lab.state_dir}" in demo.stderr
    assert "Traceback" not in demo.stderr
    # The closing lines say where the reports are and how to stop the lab.
    assert f"Reports in {lab.state_dir}/demo" in demo.stdout
    assert f"kaudit lab down --state-dir {lab.state_dir}" in demo.stdout


def test_check_finds_the_unsound_topics_and_not_the_sound_one(demo: Run, lab: Lab) -> None:
    doc = report(lab, "check.json")
    assert doc["schema"] == "kaudit.check/v1"
    errors = {(f["rule"], f["subject"]["name"]) for f in doc["findings"]
              if f["severity"] == "error" and f["subject"]["kind"] == "topic"}
    assert ("KA104", PAYMENTS_TOPIC) in errors                  # min.isr 1 inherited
    assert ("KA108", f"{TOPIC_PREFIX}ledger") in errors          # unclean election
    assert ("KA105", f"{TOPIC_PREFIX}audit") in errors           # min.isr = RF
    assert ("KA101", f"{TOPIC_PREFIX}clicks") in errors          # RF 1
    assert not [e for e in errors if e[1] == ORDERS_TOPIC]
    # ... but the acks=1 producer that writes the sound topic is caught.
    assert any(f["rule"] == "KA401" and f["subject"]["kind"] == "client"
               for f in doc["findings"])
    topic_alone = {g["topic"]: g for g in doc["guarantees"] if g.get("producer") is None}
    assert topic_alone[ORDERS_TOPIC]["loss_tolerance"] == 1
    assert topic_alone[PAYMENTS_TOPIC]["loss_tolerance"] == 0
    assert topic_alone[f"{TOPIC_PREFIX}audit"]["write_tolerance"] == 0
    pair = [g for g in doc["guarantees"] if g["topic"] == ORDERS_TOPIC and g.get("producer")]
    assert pair and pair[0]["loss_tolerance"] == 0
    sarif = report(lab, "check.sarif")
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"]
    assert "Guarantees" in demo.stdout and f"{TOPIC_PREFIX}ledger" in demo.stdout


def test_probe_matrix_acks_1_loses_writes_and_acks_all_none(demo: Run, lab: Lab) -> None:
    doc = report(lab, "probe-matrix.json")
    rows = {r["acks"]: r for r in doc["rows"]}
    assert set(rows) == {"1", "all"}
    for row in rows.values():
        assert row["fault"] == "lag-then-kill-leader:3" and row["min_insync_replicas"] == 2
        assert row["sent"] == 30_000 and row["acked"] > 0
    # The followers were frozen while the leader wrote, then it died: acks=1 loses what it
    # acknowledged alone, every run; with min.insync.replicas=2 acks=all acknowledged none.
    assert rows["1"]["lost"] > 0
    assert rows["all"]["lost"] == 0
    # Each acks=1 loss has its cause in the matrix's report: the log cut back after the
    # leader change (the old leader had acknowledged what no follower held).
    for run in rows["1"]["runs"]:
        causes = run["lost_causes"]
        assert (causes["truncated"], causes["deleted"], causes["unknown"]) == (
            run["lost"], 0, 0), causes
    assert f"acks=1: {rows['1']['lost']:,} of" in demo.stdout
    plot = Path(lab.state_dir) / "demo" / "probe-acks1-lag-then-kill-leader-3.png"
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The page: the matrix and both runs' timelines, the acks=1 loss drawn in the seconds
    # whose writes were lost (the timeline in the JSON says which seconds those are).
    page = (Path(lab.state_dir) / "demo" / "probe-matrix.html").read_text(encoding="utf-8")
    assert page.count('<img alt="') == 2 and page.count("data:image/png;base64,") == 2
    acks1 = next(r for r in doc["rows"] if r["acks"] == "1")
    assert acks1["runs"][0]["verdict"] == "fail"
    assert "probe page" in demo.stdout


def test_reconcile_finds_exactly_the_injected_faults(demo: Run, lab: Lab) -> None:
    doc = report(lab, "reconcile.json")
    counts = doc["counts"]
    assert counts["topic_records"] == ORDER_COUNT
    assert (counts["missing_in_sink"], counts["duplicated_in_sink"], counts["mismatched"],
            counts["extra_in_sink"]) == (len(SINK_MISSING), len(SINK_DUPLICATED),
                                         len(SINK_CHANGED), 0)

    def keys(cls: str) -> set[int]:
        return {int(s["key"]) for s in doc["samples"][cls]}

    assert keys("missing_in_sink") == set(SINK_MISSING)
    assert keys("duplicated_in_sink") == set(SINK_DUPLICATED)
    assert keys("mismatched") == set(SINK_CHANGED)
    assert doc["verdict"] == "fail"
    assert doc["output_files"] and Path(doc["output_files"][0]).exists()


def test_a_rerun_resets_topic_configs_and_reconciles_only_its_own_orders(
        demo: Run, lab: Lab) -> None:
    assert f"exists  {ORDERS_TOPIC}" in demo.stderr
    assert f"exists  {PAYMENTS_TOPIC}" in demo.stderr
    payments = [f for f in report(lab, "check.json")["findings"]
                if f["rule"] == "KA104" and f["subject"]["name"] == PAYMENTS_TOPIC]
    assert payments and payments[0]["source"] != "DYNAMIC_TOPIC_CONFIG"  # inherited again
    doc = report(lab, "reconcile.json")
    assert doc["counts"]["topic_records"] == ORDER_COUNT
    starts = [start for start, _ in doc["source"]["offsets"].values()]
    assert sum(starts) == EARLIER_ORDERS  # the earlier records are before the pinned range


def test_demo_without_java_is_exit_3_in_one_line(tmp_path: Path) -> None:
    """No lab running and no Java: the lab cannot start, so the demo stops with exit 3."""
    result = run_kaudit("demo", "--state-dir", str(tmp_path / "lab"),
                        env={"PATH": str(tmp_path), "JAVA_HOME": str(tmp_path / "no-java")})
    assert result.code == 3, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("kaudit: error:")]
    assert len(errors) == 1 and "Traceback" not in result.stderr


def test_the_readme_tour_is_what_a_real_run_prints(demo: Run, lab: Lab) -> None:
    from tests.guide_examples import example, mismatches

    tour = example("kaudit demo --state-dir")
    # What the run said about its reads (features, ELR, quorum, ACLs), so that a mismatch
    # there shows why the read came back empty.
    reads = [line for line in demo.stdout.splitlines()
             if line.startswith(("features:", "eligible leader replicas:",
                                 "controller quorum:", "ACLs:"))]
    assert mismatches(tour, demo.stdout, demo.stderr, lab.state_dir, "kaudit demo:") == [], \
        reads


def test_the_guide_examples_on_the_lab_the_demo_left_are_real_output(demo: Run,
                                                                      lab: Lab) -> None:
    from tests.guide_examples import commands, example, mismatches

    status, _, cluster = commands(example("kaudit lab status --state-dir"))
    real = run_kaudit("lab", "status", "--state-dir", lab.state_dir, "-f", "table")
    assert mismatches(status, real.stdout, real.stderr, lab.state_dir, "kaudit lab:") == []
    real = run_kaudit("cluster", "-b", lab.bootstrap, "-f", "table")
    assert mismatches(cluster, real.stdout, real.stderr, lab.state_dir, "kaudit cluster:") == []
    github = example("kaudit check --policy /tmp/helper-demo-lab/demo/policy.yaml --format")
    real = run_kaudit("check", "-b", lab.bootstrap, "--policy",
                      str(Path(lab.state_dir) / "demo" / "policy.yaml"), "--format", "github")
    assert real.code == 1, real.stderr
    # Every line of it is stdout, its summary ("kaudit check: 8 errors...") too.
    assert mismatches(github, real.stdout, real.stderr, lab.state_dir, "\0") == []
