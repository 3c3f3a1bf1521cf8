"""The demo's orders: produced to the orders topic, and written to a Parquet sink with
known faults (rows missing, duplicated and changed) for reconcile to find."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kaudit.demo.model import ORDER_COUNT, SINK_CHANGED, SINK_DUPLICATED, SINK_MISSING
from kaudit.errors import RuntimeUnavailable

if TYPE_CHECKING:
    from kaudit.connection.settings import ConnectionSettings


def produce_orders(conn: ConnectionSettings, topic: str, count: int
                   ) -> dict[int, tuple[int, int]]:
    """Produce ``count`` JSON orders keyed by id; the [start, end) offsets they took."""
    from kaudit.cluster.client import new_producer
    from kaudit.errors import ConnectionFailure

    offsets: dict[int, list[int]] = {}
    errors: list[str] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))
            return
        offsets.setdefault(msg.partition(), []).append(msg.offset())

    producer = new_producer(conn, None, acks="all", **{"enable.idempotence": True})
    for order in demo_orders(count):
        producer.produce(topic, key=str(order["id"]), value=json.dumps(order),
                         on_delivery=delivered)
        producer.poll(0)
    remaining = producer.flush(conn.timeout * 3)
    if remaining or errors:
        raise ConnectionFailure(f"could not produce the demo orders to {topic}: "
                                f"{errors[0] if errors else f'{remaining} unacknowledged'}")
    # An idempotent producer's records sit contiguously in each partition.
    return {p: (min(o), max(o) + 1) for p, o in offsets.items()}


def demo_orders(count: int) -> list[dict[str, Any]]:
    """The orders the demo produces: id, status, amount and customer."""
    statuses = ("new", "paid", "shipped")
    return [{"id": i, "status": statuses[i % 3], "amount": round(5 + (i * 7.31) % 200, 2),
             "customer": f"c-{i % 37}"} for i in range(count)]


def faulty_sink_rows(orders: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows a faulty consumer would have written: some missing, doubled, changed."""
    rows: list[dict[str, Any]] = []
    for order in orders:
        if order["id"] in SINK_MISSING:
            continue
        row = dict(order)
        if order["id"] in SINK_CHANGED:
            row["amount"] = round(row["amount"] + 10.0, 2)
        rows.append(row)
        if order["id"] in SINK_DUPLICATED:
            rows.append(dict(row))
    return rows


def write_faulty_sink(spark: Any, work_dir: Path, target: Path) -> None:
    """Write the faulty sink as one Parquet file with ``spark``: the session the reconcile
    step then runs on (one driver JVM for both, started once)."""
    from kaudit.reconcile.spark import error_line

    work_dir.mkdir(parents=True, exist_ok=True)
    lines = work_dir / "orders.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n"
                             for r in faulty_sink_rows(demo_orders(ORDER_COUNT))),
                     encoding="utf-8")
    try:
        frame = spark.read.schema(
            "id BIGINT, status STRING, amount DOUBLE, customer STRING").json(str(lines))
        frame.coalesce(1).write.mode("overwrite").parquet(str(target))
    except Exception as exc:  # Py4J errors carry a Java trace: one line of it
        raise RuntimeUnavailable(
            f"could not write the demo's Parquet sink with Spark: {error_line(exc)}") from None
