"""Values compared as a whole: ``string`` (as their text) and ``bytes`` (by their bytes'
hash). No field is read from such a value: the key is ``@key``, the compared field
``value``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kaudit.errors import InputError
from kaudit.reconcile.classes import KAFKA_KEY, UNDECODABLE
from kaudit.reconcile.formats.base import Decoded, ValueFormat

if TYPE_CHECKING:
    from kaudit.reconcile.request import ReconcileRequest


class WholeValue(ValueFormat):
    """A value compared as a whole, as its text or by its bytes' hash."""

    def __init__(self, name: str, *, hashed: bool, note: str = "") -> None:
        self.name, self.hashed, self.note = name, hashed, note

    def decode(self, raw: Any, request: ReconcileRequest, targets: dict[str, Any]) -> Decoded:
        from pyspark.sql import functions as F

        keys = request.key_fields()
        for name in [*keys, *request.compare]:
            if name not in {"value", KAFKA_KEY}:
                raise InputError(f"--value-format {self.name}: fields cannot be "
                                 f"read from the value; use --key @key and --compare value")
        payload = (F.xxhash64(F.col("value")) if self.hashed
                   else F.col("value").cast("string"))
        no_reason = F.lit(None).cast("string")
        frame = raw.select("*", payload.alias("value_payload"), no_reason.alias(UNDECODABLE))
        value = F.col("value_payload")
        return Decoded(frame=frame, tombstone=F.col("value").isNull(),
                       values={c: value for c in request.compare},
                       key_texts={k: value for k in keys if k != KAFKA_KEY},
                       key_unread=F.lit(False), raw_text=no_reason)

    def shape_sink(self, sink: Any, request: ReconcileRequest) -> Any:
        if not self.hashed:
            return sink
        from pyspark.sql import functions as F

        # The topic side compares the value by the hash of its bytes: hash the sink's
        # column alike (a text column by its UTF-8 bytes).
        for c in request.compare:
            column = request.sink_column(c)
            sink = sink.withColumn(column, F.xxhash64(F.col(column).cast("binary")))
        return sink


STRING = WholeValue("string", hashed=False)
BYTES = WholeValue("bytes", hashed=True, note="bytes are compared by hash")
