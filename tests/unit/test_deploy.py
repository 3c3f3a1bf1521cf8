"""What deploy/ ships for operators: alerting rules promtool accepts, a dashboard on the
canary's own metric names."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kaudit.canary.book import CAUSES, COUNTS

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
METRICS = {"kaudit_canary_records_total", "kaudit_canary_lost_records_total",
           "kaudit_canary_partition_leader", "kaudit_canary_partition_isr_size",
           "kaudit_canary_produce_available", "kaudit_canary_consume_available",
           "kaudit_canary_last_round_trip_timestamp_seconds",
           "kaudit_canary_ack_latency_seconds_bucket", "kaudit_canary_e2e_latency_seconds_bucket"}


def test_the_alerting_rules_pass_promtool() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is missing: .ci/run installs Debian's prometheus")
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    rules = DEPLOY / "prometheus" / "kaudit-canary.rules.yml"
    check = subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True,
                           text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SUCCESS: 6 rules found" in check.stdout


def test_rules_and_dashboard_name_only_metrics_and_labels_the_canary_serves() -> None:
    texts = [(DEPLOY / "prometheus" / "kaudit-canary.rules.yml").read_text()]
    texts += [p["targets"][0]["expr"] for p in
              json.loads((DEPLOY / "grafana" / "kaudit-canary.json").read_text())["panels"]]
    named = {m for text in texts for m in re.findall(r"kaudit_canary_\w+", text)}
    assert named <= METRICS, named - METRICS
    fates = {f for text in texts for f in re.findall(r'fate=~?"([^"]+)"', text)}
    assert all(set(f.split("|")) <= set(COUNTS) for f in fates), fates
    assert named >= {"kaudit_canary_lost_records_total", "kaudit_canary_records_total"}
    causes = {c for text in texts for c in re.findall(r'cause="([^"]+)"', text)}
    assert causes <= set(CAUSES)
