"""The probe's counts and class names, defined once for the verifier and the reports.

A run counts every send twice over: by what the producer learnt of it (its send outcome:
acked, failed, indeterminate, aborted on purpose) and by what the read-back passes found
(its classes: lost, duplicated, ...; see :mod:`kaudit.probe.verifier`). The names here are
the JSON contract's names (``kaudit.probe/v1``, ``kaudit.probe-matrix/v1``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

SEND_OUTCOMES = ("sent", "acked", "failed", "indeterminate", "aborted")
"""What the producer learnt of its sends, in report order (``sent`` is their total)."""

CLASSES = ("lost", "consumer_missed", "duplicated", "reordered", "inconsistent_offsets",
           "aborted_visible", "failed_present", "indeterminate_present",
           "indeterminate_absent", "unexpected")
"""Sample classes, in report order."""

ANOMALIES = ("lost", "duplicated", "reordered", "aborted_visible", "inconsistent_offsets")
"""The classes that show the log or the reader breaking a promise, headline first: what
the probe matrix totals, and what the run summary lists first."""

SUMMARY_CLASSES = (*ANOMALIES, "consumer_missed", "failed_present", "indeterminate_present",
                   "unexpected")
"""The classes the run's terminal summary lists, in its order: every class but
``indeterminate_absent``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OutcomeCounts:
    """A run's or a partition's counts, in sequences: send outcomes, then classes.

    Keyword-only: sixteen integers in a row are too easy to pass in the wrong order.
    """

    sent: int
    acked: int
    failed: int
    indeterminate: int
    """Sends without a definite answer, including those still pending at the end."""
    aborted: int
    lost: int
    consumer_missed: int
    duplicated: int
    duplicate_copies: int
    """The extra copies of the duplicated sequences."""
    reordered: int
    inconsistent_offsets: int
    aborted_visible: int
    failed_present: int
    indeterminate_present: int
    indeterminate_absent: int
    unexpected: int


COUNTS = tuple(f.name for f in fields(OutcomeCounts))
"""Every count's name, in JSON order: :data:`SEND_OUTCOMES`, then :data:`CLASSES` with
``duplicate_copies`` after ``duplicated``."""
