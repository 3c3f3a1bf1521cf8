"""The worker processes of one run: start, crash, restart and stop them, and remember how
each incarnation ended (what :func:`~kaudit.probe.consume.verify.verify` attributes to)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kaudit.probe.consume.journal import journal_name, read_journal
from kaudit.probe.consume.worker import EXIT_FATAL, EXIT_STUCK
from kaudit.probe.spawn import spawn_worker
from kaudit.waiting import Deadline

STOP_WAIT_S = 30.0
"""How long a worker may take to finish its batch and leave after SIGTERM."""
EXIT_REASONS = {EXIT_FATAL: "a fatal client error", EXIT_STUCK: "a client call hung"}


class Fleet:
    """Worker processes by worker index; each start is a new incarnation."""

    def __init__(self, config: dict[str, Any], run_dir: Path,
                 event: Callable[[str, str], None]) -> None:
        self.config, self.run_dir, self.event = config, run_dir, event
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.incarnation: dict[int, int] = {}
        self.pending_crash: set[int] = set()
        self.ended: dict[tuple[int, int], tuple[int, str]] = {}
        """(worker, incarnation) -> (when, how) for every incarnation that did not stop
        cleanly: a crash point, ``anywhere`` (SIGKILLed by the runner), ``exit N``."""
        self.killed_at: dict[tuple[int, int], int] = {}
        self.asked_to_stop: set[tuple[int, int]] = set()
        """Incarnations sent SIGTERM: one that dies of it (it came before its handler, on a
        busy machine) stopped as asked, before it read anything."""
        self.crashes = 0
        self.restarts = 0
        self.dynamic: set[int] = set()
        """Workers started without a group.instance.id (the --rebalance one)."""

    def start(self, worker: int, dynamic: bool = False) -> None:
        """Start the worker's next incarnation; ``dynamic``: without a group.instance.id
        whatever --static-membership says, so its joins and leaves rebalance the group."""
        incarnation = self.incarnation.get(worker, -1) + 1
        self.incarnation[worker] = incarnation
        config = dict(self.config, worker=worker, incarnation=incarnation,
                      parent_pid=os.getpid())
        if dynamic or worker in self.dynamic:
            self.dynamic.add(worker)
            config["static_membership"] = False
        self.procs[worker] = spawn_worker("kaudit.probe.consume.worker", config,
                                          self.run_dir / f"w{worker}-i{incarnation}.err")

    def running(self) -> list[int]:
        return sorted(w for w, p in self.procs.items() if p.poll() is None)

    def busy(self, worker: int) -> bool:
        """Whether the worker's current incarnation has polled a batch: it has its signal
        handlers and its partitions, so a crash asked of it can land on a batch."""
        path = self.run_dir / journal_name(worker, self.incarnation[worker])
        return path.exists() and any(e.kind == "B" for e in read_journal(path))

    def crash(self, worker: int, anywhere: bool) -> None:
        """SIGKILL now (``anywhere``), or ask for a SIGKILL at the next crash point."""
        proc = self.procs[worker]
        key = (worker, self.incarnation[worker])
        self.crashes += 1
        if anywhere:
            self.killed_at[key] = time.time_ns()
            proc.send_signal(signal.SIGKILL)
            self.event("crash", f"worker {worker}.{key[1]} SIGKILLed")
        else:
            self.pending_crash.add(worker)
            proc.send_signal(signal.SIGUSR1)
            self.event("crash", f"worker {worker}.{key[1]} asked to crash at its crash point")

    def stop_one(self, worker: int) -> None:
        """A graceful leave (SIGTERM): the worker finishes its batch and closes."""
        proc = self.procs.get(worker)
        if proc is not None and proc.poll() is None:
            self.asked_to_stop.add((worker, self.incarnation[worker]))
            proc.send_signal(signal.SIGTERM)

    def reap(self, restart: bool) -> None:
        """Notice workers that ended; restart the crashed ones (as an orchestrator would)."""
        for worker, proc in list(self.procs.items()):
            code = proc.poll()
            if code is None:
                continue
            self.procs.pop(worker)
            self.pending_crash.discard(worker)
            key = (worker, self.incarnation[worker])
            if code == 0 or (code == -signal.SIGTERM and key in self.asked_to_stop):
                self.event("stopped", f"worker {worker}.{key[1]} stopped")
                continue
            if key not in self.ended:
                self.ended[key] = self._how_it_ended(key, code)
            self.event("ended", f"worker {worker}.{key[1]} ended: {self.ended[key][1]}")
            if restart:
                self.restarts += 1
                self.start(worker)
                self.event("restart", f"worker {worker}.{key[1] + 1} started")

    def _how_it_ended(self, key: tuple[int, int], code: int) -> tuple[int, str]:
        crashed = [e for e in read_journal(self.run_dir / journal_name(*key)) if e.kind == "K"]
        if crashed:
            return crashed[-1].t_ns, crashed[-1].text
        if key in self.killed_at:
            return self.killed_at[key], "anywhere"
        why = EXIT_REASONS.get(code)
        return time.time_ns(), f"exit {code}" + (f" ({why})" if why else "")

    def stop_all(self) -> list[int]:
        """SIGTERM every worker, wait, SIGKILL what is left; the workers that had to be
        killed."""
        for worker in self.running():
            self.stop_one(worker)
        deadline = Deadline(STOP_WAIT_S)
        killed = []
        for worker, proc in list(self.procs.items()):
            try:
                proc.wait(max(0.1, deadline.left()))
            except subprocess.TimeoutExpired:
                key = (worker, self.incarnation[worker])
                self.ended[key] = (time.time_ns(), "killed at stop")
                proc.send_signal(signal.SIGUSR2)  # its stack, into its .err file
                time.sleep(0.2)
                proc.kill()
                proc.wait()
                killed.append(worker)
        self.reap(restart=False)
        return killed
