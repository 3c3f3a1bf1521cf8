"""One local Spark session for the comparison-plan tests (every test here is marked spark)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """A small local Spark: one core, 4 shuffle partitions, no UI or progress bars, UTC,
    errors only (the tests' timestamps are UTC)."""
    session = (
        SparkSession.builder.master("local[1]")
        .appName("kaudit-reconcile-unit")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
