"""CPU seconds per test, for finding what makes the Kafka and Spark tier long (opt-in).

With ``KAUDIT_TEST_CPU_LOG=FILE``, each test's line is appended to FILE: the CPU its
share of the tier used while it ran, its wall time and its id. A share's processes are
this pytest, its descendants, and every process that inherited its ``KAUDIT_TEST_LAB_DIR``
or names that lab's directory on its command line (the lab's brokers, started before
pytest). The tier
runs each share's tests one at a time, so the share's CPU during a test is that test's,
plus its lab idling. Wall time says nothing of this: the tier is CPU-bound, and a test
that waits on a killed broker for a minute may cost less than one busy for ten seconds.

A process that ends during a test counts in its parent's children's time when the parent
is the share's and reaps it; otherwise (a lab broker killed by the test) up to when it was
last seen, so the CPU it used since the test began is not counted.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kaudit.lab.state import command_line
from tests.cpu_by_process import process_ticks

_CLOCK = os.sysconf("SC_CLK_TCK")
_TARGET = os.environ.get("KAUDIT_TEST_CPU_LOG")
_members: dict[tuple[int, int], bool] = {}
"""(pid, start time) -> whether the process belongs to this share, decided once."""


def _belongs(pid: int, lab: str) -> bool:
    """Whether process ``pid`` names ``lab`` on its command line or inherited it."""
    if any(lab in arg for arg in command_line(pid) or ()):
        return True
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return f"KAUDIT_TEST_LAB_DIR={lab}\0".encode() in environ


def share_ticks(seen: dict[tuple[int, int], tuple[int, bool]]) -> int:
    """The share's CPU ticks so far, each process at the latest value seen (``seen`` is
    updated): its own time and its reaped children's, and whether its parent is the
    share's. The share: this process, its descendants, and what names its lab."""
    lab = os.environ.get("KAUDIT_TEST_LAB_DIR", "")
    procs: dict[tuple[int, int], tuple[int, int]] = {}  # key -> (ticks, parent pid)
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if (ticks := process_ticks(pid)) is None:
            continue
        key = (pid, ticks.start)
        procs[key] = (ticks.own + ticks.reaped, ticks.parent)
        if key not in _members:
            _members[key] = pid == os.getpid() or (bool(lab) and _belongs(pid, lab))
    ours = {pid for pid, start in procs if _members[(pid, start)]}
    grown = True
    while grown:  # descendants of the share's processes are the share's
        more = {key[0] for key, (_, parent) in procs.items()
                if parent in ours and key[0] not in ours}
        ours |= more
        grown = bool(more)
    for key, (ticks, parent) in procs.items():
        if key[0] in ours:
            seen[key] = (ticks, parent in ours)
    for key, (_, parent_ours) in list(seen.items()):
        if key not in procs and parent_ours:  # its whole time is in its parent's now
            seen[key] = (0, parent_ours)
    return sum(ticks for ticks, _ in seen.values())


if _TARGET:
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item: Any, nextitem: Any) -> Iterator[None]:
        seen: dict[tuple[int, int], tuple[int, bool]] = {}
        before, started = share_ticks(seen), time.monotonic()
        yield
        used = (share_ticks(seen) - before) / _CLOCK
        with open(_TARGET, "a", encoding="utf-8") as out:
            out.write(f"{used:8.1f} {time.monotonic() - started:8.1f} {item.nodeid}\n")
