"""``kaudit probe matrix``: the same probe over a grid of settings, side by side.

Each configuration runs on its own new topic for ``trials`` runs. Faults
that freeze a broker (``pause-*``) run, as in ``kaudit probe``, with
``request.timeout.ms`` far below the time the freeze lasts
(``Fault.shortens_request_timeout``), so acks=all requests time out while the
leader still holds them: the producer retries, and without idempotence the
retry is written a second time. That is the documented way the matrix makes
responses go missing to show duplicates.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from kaudit.connection.settings import ConnectionSettings
from kaudit.errors import InputError
from kaudit.probe.faults.lab import lab_for
from kaudit.probe.faults.registry import PRODUCER, FaultSpec, parse_faults
from kaudit.probe.model import ProbeReport, ProbeSettings
from kaudit.probe.runner import run_probe


@dataclass(frozen=True)
class MatrixCell:
    """One configuration of the grid."""

    acks: str
    idempotence: bool
    min_insync_replicas: int
    unclean_leader_election: bool
    fault: FaultSpec | None

    def label(self) -> str:
        """Short name for progress lines."""
        return (f"acks={self.acks} idempotence={'on' if self.idempotence else 'off'} "
                f"min.isr={self.min_insync_replicas} "
                f"unclean={'on' if self.unclean_leader_election else 'off'} "
                f"fault={self.fault.label() if self.fault else 'none'}")


@dataclass(frozen=True)
class MatrixRow:
    """A configuration and the reports of its trials."""

    cell: MatrixCell
    reports: tuple[ProbeReport, ...]

    def total(self, name: str) -> int:
        """Sum of a verification count over the trials."""
        return sum(int(getattr(r.verification, name)) for r in self.reports)

    @property
    def unavailable_seconds(self) -> int:
        """Seconds without acknowledgements while sending, over the trials."""
        return sum(int(r.timeline.summary()["unavailable_seconds"]) for r in self.reports)


def parse_list(text: str, option: str, allowed: Sequence[str]) -> list[str]:
    """``1,all`` -> ["1", "all"], each checked against ``allowed``."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in items if t not in allowed]
    if not items or bad:
        raise InputError(f"{option} {text!r}: expected a comma list of {', '.join(allowed)}")
    return items


def build_grid(acks: list[str], idempotence: list[str], min_isr: list[int],
               unclean: list[str], faults: list[str]) -> list[MatrixCell]:
    """The Cartesian product, less the combinations Kafka refuses.

    Idempotence needs acks=all, so idempotent cells with acks 0 or 1 are left out.
    """
    fault_specs = [None if f == "none" else parse_faults([f], PRODUCER)[0] for f in faults]
    cells = []
    for a, i, m, u, f in itertools.product(acks, idempotence, min_isr, unclean, fault_specs):
        if i == "on" and a != "all":
            continue
        cells.append(MatrixCell(a, i == "on", m, u == "on", f))
    if not cells:
        raise InputError("the matrix is empty: idempotence needs --acks all")
    return cells


def run_matrix(conn: ConnectionSettings, base: ProbeSettings, cells: list[MatrixCell],
               trials: int, interrupted: threading.Event,
               progress: Callable[[str], None]) -> list[MatrixRow]:
    """Run every cell ``trials`` times; stops early (keeping what ran) on Ctrl-C."""
    # No lab there is exit 2 before the first cell, not after its progress line.
    lab_for(tuple(cell.fault for cell in cells if cell.fault), base.lab_state_dir)
    rows = []
    for n, cell in enumerate(cells, 1):
        settings = replace(base, acks=cell.acks, idempotence=cell.idempotence,
                           min_insync_replicas=cell.min_insync_replicas,
                           unclean_leader_election=cell.unclean_leader_election,
                           faults=(cell.fault,) if cell.fault else (), topic=None,
                           existing=False, keep=False)
        reports = []
        for trial in range(1, trials + 1):
            if interrupted.is_set():
                break
            progress(f"[{n}/{len(cells)}] {cell.label()} trial {trial}/{trials}")
            reports.append(run_probe(conn, settings, interrupted))
        if reports:
            rows.append(MatrixRow(cell, tuple(reports)))
        if interrupted.is_set():
            break
    return rows
