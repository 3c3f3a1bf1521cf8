"""The comparison-plan tests (every test here is marked spark) run on the suite's one local
Spark (``local_spark`` in tests/conftest.py), with few shuffle partitions."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession


@pytest.fixture()
def spark(local_spark: Any) -> SparkSession:
    """The suite's local Spark (UTC, as kaudit runs it), 4 shuffle partitions."""
    session: SparkSession = local_spark
    session.conf.set("spark.sql.shuffle.partitions", "4")
    return session


@pytest.fixture(params=["values", "hashes"])
def each_shuffle(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a plan test once with each ``shuffle``: the verdicts must not depend on it."""
    from tests.unit.reconcile import frames

    monkeypatch.setattr(frames, "SHUFFLE", request.param)
    return str(request.param)
