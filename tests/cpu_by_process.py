"""CPU seconds by kind of process over a run of anything (opt-in; run beside ``.ci/run``).

``python3 -m tests.cpu_by_process FILE`` samples every process on the machine each second
until SIGTERM or Ctrl-C, and writes FILE (JSON, rewritten every 30 s and at the end): the
machine's busy CPU seconds, and the CPU seconds of each kind of process (lab brokers,
controllers, Connect workers, Spark drivers and executors, pytest, kaudit's CLI, its
workers, PostgreSQL...). Where :mod:`tests.cpu_by_test` says which tests cost the most,
this says which programs: on two saturated cores, that is where a cut must come from.

A process is classified by its command line, read again after an ``exec`` (a shell
script that becomes a JVM is the JVM). One that ends between two samples is counted up to
its last sample; the rest, and every process too short-lived to be seen, counts in its
parent's reaped-children time, under ``reaped by`` the parent's kind.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from kaudit.lab.state import command_line

_CLOCK = os.sysconf("SC_CLK_TCK")
_JAVA_MAINS = (("ConnectDistributed", "Connect worker"),
               ("deploy.master.Master", "Spark master"),
               ("deploy.worker.Worker", "Spark worker"),
               ("CoarseGrainedExecutorBackend", "Spark executor"),
               ("SparkSubmit", "Spark driver"),
               ("apicurio", "schema registry"),
               ("plexus-classworlds", "Maven"))
"""A JVM's kind by a word of its command line, first match wins."""


def kind(argv: list[str]) -> str:
    """What a process is, by its command line."""
    if not argv:
        return "unknown"
    line, program = " ".join(argv), os.path.basename(argv[0])
    if program == "java":
        if "-Dkaudit.lab.node=" in line and "ConnectDistributed" not in line:
            node = line.split("-Dkaudit.lab.node=")[1].split()[0].rstrip("/")
            return f"lab {os.path.basename(node).split('-')[0]}"
        return next((name for word, name in _JAVA_MAINS if word in line),
                    "Kafka's tools and other JVMs")
    if program.startswith("python"):
        if "pytest" in line or "execnet" in line or "import sys;exec" in line:
            return "pytest"
        if "kaudit.probe." in line or "kaudit.canary" in line:
            return "kaudit workers"
        if "-m kaudit" in line:
            return "kaudit CLI"
        if "pyspark" in line:
            return "pyspark workers"
        return "other Python"
    if program.startswith(("postgres", "initdb", "pg_")):
        return "PostgreSQL"
    if "chrom" in program:
        return "Chromium"
    return program if program in ("prometheus", "bash", "sh", "mvn") else "other"


@dataclass
class Seen:
    kind: str
    parent: int
    own: int
    """Its own CPU ticks at the last sample."""
    reaped: int
    """Its reaped children's CPU ticks at the last sample."""


class Ticks(NamedTuple):
    """One process's CPU ticks and lineage, from /proc/PID/stat."""

    parent: int
    own: int
    reaped: int
    """Its reaped children's ticks."""
    start: int
    """When it started (ticks since boot): with the pid, it names the process."""


def process_ticks(pid: int) -> Ticks | None:
    """Process ``pid``'s ticks, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # from the state on: field 3
    return Ticks(int(fields[1]), int(fields[11]) + int(fields[12]),
                 int(fields[13]) + int(fields[14]), int(fields[19]))


def _busy() -> int:
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    return sum(ticks) - ticks[3] - ticks[4]


class Sampler:
    """Each process's CPU since the first sample, summed by kind."""

    def __init__(self) -> None:
        self.seen: dict[int, Seen] = {}
        self.by_kind: dict[str, int] = {}
        self.sample(count=False)

    def add(self, what: str, ticks: int) -> None:
        if ticks > 0:
            self.by_kind[what] = self.by_kind.get(what, 0) + ticks

    def sample(self, count: bool = True) -> None:
        now: dict[int, Seen] = {}
        for name in os.listdir("/proc"):
            if not name.isdigit() or (found := process_ticks(int(name))) is None:
                continue
            pid, (parent, own, reaped, _) = int(name), found
            old = self.seen.get(pid)
            # A shell that exec'd a program is that program from then on.
            what = old.kind if old and old.kind not in ("bash", "sh") else \
                kind(command_line(pid) or [])
            now[pid] = Seen(what, parent, own, reaped)
            if count:
                self.add(what, own - (old.own if old else 0))
        if count:
            self._reaped(now)
        self.seen = now

    def _reaped(self, now: dict[int, Seen]) -> None:
        """The reaped-children time each parent gained, less what was counted already of
        the children that ended since the last sample (and of theirs)."""
        gone = {pid: s for pid, s in self.seen.items() if pid not in now}

        def counted(pid: int) -> int:
            s = gone[pid]
            return s.own + s.reaped + sum(counted(c) for c, g in gone.items() if g.parent == pid)

        for pid, s in now.items():
            old = self.seen.get(pid)
            if old is not None and s.reaped > old.reaped:
                known = sum(counted(c) for c, g in gone.items() if g.parent == pid)
                self.add(f"reaped by {s.kind}", s.reaped - old.reaped - known)


def main(argv: list[str]) -> int:
    target = Path(argv[1])
    stop: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    signal.signal(signal.SIGINT, lambda *_: stop.append(True))
    busy, started = _busy(), time.monotonic()
    sampler = Sampler()

    def write() -> None:
        target.write_text(json.dumps({
            "wall_s": round(time.monotonic() - started, 1),
            "busy_cpu_s": round((_busy() - busy) / _CLOCK, 1),
            "cpu_s_by_kind": {k: round(v / _CLOCK, 1) for k, v in
                              sorted(sampler.by_kind.items(), key=lambda kv: -kv[1])}},
            indent=1) + "\n")

    written = time.monotonic()
    while not stop:
        time.sleep(1.0)
        sampler.sample()
        if time.monotonic() - written >= 30:
            write()
            written = time.monotonic()
    write()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
