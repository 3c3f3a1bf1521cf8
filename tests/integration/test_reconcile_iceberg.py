"""Reconcile against an Apache Iceberg table (Hadoop catalog in a temp warehouse), read at
one pinned snapshot that the report records and a rerun can name."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Lab
from tests.integration.test_reconcile import (
    CHANGED,
    DUPLICATED,
    EXTRA,
    MISSING,
    amount,
    keys_of,
    reconcile,
    sink_rows,
    topic,  # noqa: F401 - the module's own topic of JSON orders
)

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

TABLE = "lake.shop.orders"
LATE = min(MISSING)  # the sink writes this missing record in a second commit


@pytest.fixture(scope="module")
def iceberg_table(local_spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The sink as faulty consumers wrote it (snapshot ``first``), then one late record
    committed on top (snapshot ``current``)."""
    warehouse = tmp_path_factory.mktemp("warehouse")
    spark = local_spark
    spark.conf.set("spark.sql.catalog.lake", "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set("spark.sql.catalog.lake.type", "hadoop")
    spark.conf.set("spark.sql.catalog.lake.warehouse", str(warehouse))
    schema = "id BIGINT, status STRING, amount DOUBLE, customer_id BIGINT"
    spark.createDataFrame(sink_rows(drop_tombstoned=False), schema).writeTo(TABLE).create()
    first = spark.sql(f"SELECT snapshot_id FROM {TABLE}.refs WHERE name = 'main'").first()[0]
    late = [{"id": LATE, "status": "new", "amount": amount(LATE), "customer_id": LATE % 7}]
    spark.createDataFrame(late, schema).writeTo(TABLE).append()
    current = spark.sql(f"SELECT snapshot_id FROM {TABLE}.refs WHERE name = 'main'").first()[0]
    assert first != current
    return {"warehouse": warehouse, "first": first, "current": current}


def _catalog(table: dict[str, Any]) -> list[str]:
    return ["--sink-option", "type=hadoop", "--sink-option", f"warehouse={table['warehouse']}"]


def _snapshots(spark: Any) -> list[int]:
    return [r[0] for r in spark.sql(f"SELECT snapshot_id FROM {TABLE}.snapshots").collect()]


def test_iceberg_sink_is_read_at_its_current_snapshot_and_recorded(
        lab: Lab, topic: dict[str, Any], iceberg_table: dict[str, Any],  # noqa: F811
        local_spark: Any) -> None:
    before = _snapshots(local_spark)
    code, doc, stderr = reconcile(
        lab, "--topic", topic["name"], "--sink", f"iceberg:{TABLE}", *_catalog(iceberg_table),
        "--key", "id", "--compare", "status,amount,customer.id", "--samples", "10")
    assert code == 1, stderr
    assert doc["sink"] == {"uri": f"iceberg:{TABLE}", "kind": "iceberg",
                           "snapshot_id": iceberg_table["current"]}
    assert doc["repeat_with"]["--sink-option"] == f"snapshot-id={iceberg_table['current']}"
    counts = doc["counts"]
    assert (counts["missing_in_sink"], counts["extra_in_sink"], counts["duplicated_in_sink"],
            counts["mismatched"]) == (len(MISSING) - 1, len(EXTRA), len(DUPLICATED),
                                      len(CHANGED))
    assert keys_of(doc, "missing_in_sink") == MISSING - {LATE}
    assert keys_of(doc, "duplicated_in_sink") == DUPLICATED
    assert keys_of(doc, "mismatched") == CHANGED
    assert keys_of(doc, "extra_in_sink") == EXTRA
    assert _snapshots(local_spark) == before  # only ever read


def test_an_earlier_snapshot_is_read_when_named(
        lab: Lab, topic: dict[str, Any], iceberg_table: dict[str, Any]) -> None:  # noqa: F811
    code, doc, stderr = reconcile(
        lab, "--topic", topic["name"], "--sink", f"iceberg:{TABLE}", *_catalog(iceberg_table),
        "--sink-option", f"snapshot-id={iceberg_table['first']}",
        "--key", "id", "--compare", "status,amount,customer.id")
    assert code == 1, stderr
    assert doc["sink"]["snapshot_id"] == iceberg_table["first"]
    assert doc["counts"]["missing_in_sink"] == len(MISSING)  # before the late commit
    assert doc["counts"]["sink_rows"] == len(sink_rows(drop_tombstoned=False))


@pytest.mark.parametrize("sink, options, message", [
    (f"iceberg:{TABLE}", ["--sink-option", "snapshot-id=latest"], "expected a snapshot id"),
    ("iceberg:lake.orders", [], "expected iceberg:CATALOG.DB.TABLE"),
    ("iceberg:nocatalog.shop.orders", [], "the Spark session has no catalog 'nocatalog'"),
    ("iceberg:lake.shop.absent", ["warehouse"], "catalog 'lake' has no table shop.absent"),
])
def test_bad_iceberg_sinks_are_one_line_and_exit_2(
        lab: Lab, topic: dict[str, Any], iceberg_table: dict[str, Any],  # noqa: F811
        sink: str, options: list[str], message: str) -> None:
    if options == ["warehouse"]:
        options = _catalog(iceberg_table)
    code, _, stderr = reconcile(lab, "--topic", topic["name"], "--sink", sink, *options,
                                  "--key", "id", "--compare", "amount")
    assert code == 2, stderr
    assert message in stderr
    assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr
