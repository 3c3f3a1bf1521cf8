"""``kaudit probe share`` on the lab: every record's fate under each acknowledgement
treatment, and a worker killed while it holds locks; the account checked against the
brokers' own view of the group and a plain read of the topic."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

from kaudit.probe.share.verify import Mix, Treatment, treatment
from tests.conftest import Lab, run_kaudit
from tests.integration.test_lab import admin
from tests.integration.test_share_groups import share_group_command

pytestmark = pytest.mark.kafka


def _probe(lab: Lab, *args: str) -> tuple[int, dict[str, Any], str]:
    run = run_kaudit("probe", "share", "-b", lab.bootstrap, "--format", "json", "--keep",
                     *args, timeout=400)
    assert run.code in (0, 1), run.stderr
    return run.code, json.loads(run.stdout), run.stderr


def _kinds(count: int, mix: Mix) -> dict[Treatment, int]:
    kinds = [treatment(s, mix) for s in range(count)]
    return {k: kinds.count(k) for k in Treatment}


def _cleanup(lab: Lab, doc: dict[str, Any]) -> None:
    admin(lab).delete_topics([doc["topic"]])


def test_each_treatment_ends_as_it_must_and_the_brokers_agree(lab: Lab) -> None:
    mix = Mix(release=0.1, reject=0.05, poison=0.03)
    code, doc, err = _probe(lab, "--count", "300", "--release", "0.1", "--reject", "0.05",
                            "--poison", "0.03", "--delivery-limit", "3",
                            "--expect", "at-least-once")
    try:
        kinds = _kinds(300, mix)
        assert code == 0, (doc["violations"], err)
        assert doc["settled"] and doc["delivery_limit"] == 3
        assert doc["fates"] == {
            "processed": kinds[Treatment.accept] + kinds[Treatment.release],
            "processed_twice": 0, "rejected": kinds[Treatment.reject],
            "archived": kinds[Treatment.poison], "never_delivered": 0, "unsettled": 0}
        poison = [r for r in doc["records"] if r["treatment"] == "poison"]
        assert len(poison) == kinds[Treatment.poison]
        assert all(r["fate"] == "archived" and r["deliveries"] == 3 for r in poison)
        # The brokers are done with every record of the group: nothing left to deliver.
        rows = share_group_command(lab, doc["group"], "--offsets")
        assert rows and all(row[4] == "0" for row in rows), rows
    finally:
        _cleanup(lab, doc)


def test_without_keep_the_topic_and_the_journals_go(lab: Lab) -> None:
    before = set(Path(tempfile.gettempdir()).glob("kaudit-share-*"))
    run = run_kaudit("probe", "share", "-b", lab.bootstrap, "--format", "json", "--count",
                     "30", "--expect", "at-least-once", timeout=400)
    assert run.code == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["topic_deleted"] and doc["fates"]["processed"] == 30
    assert set(Path(tempfile.gettempdir()).glob("kaudit-share-*")) == before


def test_a_killed_workers_records_come_back_and_exactly_once_says_why_not(lab: Lab) -> None:
    # One partition that both workers share: the killed worker's records come back as its
    # connections close, not after the group's session timeout (45 s by default).
    code, doc, err = _probe(lab, "--count", "200", "--workers", "2", "--partitions", "1",
                            "--kill-worker", "--hold-after", "10", "--lock-ms", "15000",
                            "--expect", "exactly-once")
    try:
        assert code == 1, (doc, err)
        (killed,) = doc["killed"]
        worker = killed.split(":")[0]  # whichever got the records first
        assert killed == f"{worker}: SIGKILLed while it held its records' locks"
        assert doc["settled"] and doc["fates"]["never_delivered"] == 0
        twice = [r for r in doc["records"] if r["fate"] == "processed_twice"]
        # It held the 10 it had processed: each came back and was processed again.
        assert len(twice) == 10, doc["fates"]
        assert all(r["why"].startswith(f"{worker} processed it (delivery 1) and was "
                                       "SIGKILLed while it held its records' locks before "
                                       "its acceptance was committed") for r in twice), twice
        # Not lost: every record was processed, once or (those the killed worker had in
        # hand) twice.
        assert doc["fates"]["processed"] + len(twice) == 200
        assert doc["violations"] == [f"{len(twice)} record(s) processed 2 times "
                                     f"(e.g. record {twice[0]['seq']})"]
    finally:
        _cleanup(lab, doc)
