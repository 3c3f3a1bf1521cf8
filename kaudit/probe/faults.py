"""Faults injected during a probe, and their healing.

On the lab (kaudit knows each broker's process): ``kill-leader`` (SIGKILL the
leader of partition 0), ``stop-leader`` (SIGTERM, a controlled shutdown),
``pause-leader`` / ``pause-follower`` (SIGSTOP, resumed at heal time: a frozen
broker keeps its connections open, so requests time out instead of failing
fast), ``kill-broker:ID``, ``bounce-leader:N`` (kill the current leader,
restart it, chase the next one, N times), and the deterministic schedules that make a
failure happen rather than hope for it:

- ``lag-then-kill-leader[:SECONDS]``: freeze partition 0's in-sync followers, let the
  leader write alone, kill it, resume them (see :data:`LAG_THEN_KILL_DEFAULT_S`);
- ``shrink-isr-then-kill-leader[:SECONDS]``: kill the followers and wait until the ISR is
  the leader alone, let it write alone for SECONDS, kill it and restart one stale follower
  (see :data:`SHRINK_WRITE_DEFAULT_S`);
- ``lose-responses[:SECONDS]``: freeze the in-sync followers for SECONDS so acks=all
  requests time out after the leader appended them (see :data:`LOSE_RESPONSES_DEFAULT_S`);
- ``restart-producer``: a new producer session takes over mid-run and re-sends what the old
  one had not seen acknowledged (see :class:`ProducerRestart`).

On any cluster: ``exec:'COMMAND'`` runs a command (a kubectl or systemctl call) and
``exec-heal:'COMMAND'`` the command that undoes it.

The probe keeps its run open until every fault has been injected and healed (see
:meth:`FaultInjector.under_way`), so a fault schedule longer than the sends still
runs to its end instead of being cut short by chance.
"""

from __future__ import annotations

import contextlib
import functools
import re
import shlex
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from kaudit.errors import InputError
from kaudit.probe.monitor import EventLog

LAB_FAULTS = ("kill-leader", "stop-leader", "pause-leader", "pause-follower", "kill-broker",
              "bounce-leader", "lag-then-kill-leader", "shrink-isr-then-kill-leader",
              "lose-responses", "restart-producer")
EXEC_TIMEOUT_S = 120
LAG_THEN_KILL_DEFAULT_S = 3.0
"""``lag-then-kill-leader``: how long partition 0's in-sync followers are frozen before its
leader is killed. A frozen follower stays in the ISR (it is dropped only after
``replica.lag.time.max.ms``, 30 s by default, and fenced only after
``broker.session.timeout.ms``, 9 s), so once the leader dies a follower is elected cleanly
without the writes the leader acknowledged alone during the freeze: with acks=1 they are
lost every time; with acks=all none was acknowledged."""
LAG_THEN_KILL_MAX_S = 8.0
"""Above this the frozen followers could be fenced (9 s broker session by default) and leave
the ISR, and the leader would come back with every write: the loss would not happen."""
SHRINK_WRITE_DEFAULT_S = 3.0
"""``shrink-isr-then-kill-leader``: how long the leader, alone in the ISR, takes writes before
it is killed. With min.insync.replicas=1 acks=all writes are acknowledged by the leader
alone meanwhile; with 2 they are refused (NOT_ENOUGH_REPLICAS)."""
SHRINK_WRITE_MAX_S = 30.0
SHRINK_WAIT_S = 60.0
"""How long the ISR may take to shrink to the leader (a killed follower leaves it once its
broker session expires, ``broker.session.timeout.ms``: 9 s by default)."""
LOSE_RESPONSES_DEFAULT_S = 4.0
"""``lose-responses``: how long the in-sync followers are frozen. Longer than the producer's
``request.timeout.ms`` (the probe sets 1000 ms for this fault unless told otherwise), so the
leader answers REQUEST_TIMED_OUT for batches it has appended and the producer re-sends them;
shorter than the broker session, so the followers stay in the ISR and commit every copy."""
RESTART_FREEZE_S = 2.0
"""``restart-producer`` without transactions: how long partition 0's followers are frozen
before the old session is dropped, so that it has batches the leader appended and never
acknowledged (acks=all waits for the followers)."""
SHORT_REQUEST_TIMEOUT_MS = 1000
"""The producer's ``request.timeout.ms`` under faults that freeze brokers to make requests time
out while the leader holds them (``lose-responses``; the matrix's ``pause-*`` cells): well
below the freeze, so the producer gives up and re-sends before the followers are resumed."""


@dataclass(frozen=True)
class FaultSpec:
    """One ``--fault`` value, parsed."""

    kind: str
    """One of LAB_FAULTS, ``exec`` or ``exec-heal``."""
    argument: str | None = None
    """Broker id, bounce count or command."""

    @property
    def needs_lab(self) -> bool:
        """True for faults that signal lab processes."""
        return self.kind in LAB_FAULTS

    def label(self) -> str:
        """How the fault is named in reports (commands are not repeated: they may hold secrets)."""
        if self.kind in ("exec", "exec-heal"):
            return self.kind
        return f"{self.kind}:{self.argument}" if self.argument else self.kind


_SECONDS_FAULTS = {
    "lag-then-kill-leader": (LAG_THEN_KILL_DEFAULT_S, LAG_THEN_KILL_MAX_S),
    "shrink-isr-then-kill-leader": (SHRINK_WRITE_DEFAULT_S, SHRINK_WRITE_MAX_S),
    "lose-responses": (LOSE_RESPONSES_DEFAULT_S, LAG_THEN_KILL_MAX_S),
}
"""Faults with an optional SECONDS argument: its default and its largest value."""


def parse_fault(text: str) -> FaultSpec:
    """Parse ``kill-leader``, ``kill-broker:2``, ``bounce-leader:3``, ``exec:'cmd'``..."""
    kind, sep, arg = text.partition(":")
    kind = kind.strip()
    if kind in ("exec", "exec-heal"):
        command = arg.strip()
        if len(command) >= 2 and command[0] == command[-1] and command[0] in "'\"":
            command = command[1:-1]
        if not command:
            raise InputError(f"--fault {kind}: needs a command, e.g. {kind}:'systemctl stop kafka'")
        return FaultSpec(kind, command)
    if kind in _SECONDS_FAULTS:
        default, most = _SECONDS_FAULTS[kind]
        seconds = arg.strip() if sep else str(default)
        try:
            value = float(seconds)
        except ValueError:
            value = -1.0
        if not 0 < value <= most:
            raise InputError(f"--fault {text!r}: expected seconds above 0 and at most "
                             f"{most:g}, e.g. {kind}:{default:g}")
        return FaultSpec(kind, f"{value:g}")
    if kind in ("kill-broker", "bounce-leader"):
        if not sep or not arg.strip().isdigit():
            example = "kill-broker:2" if kind == "kill-broker" else "bounce-leader:3"
            raise InputError(f"--fault {text!r}: expected a number, e.g. {example}")
        return FaultSpec(kind, arg.strip())
    if kind in LAB_FAULTS and not sep:
        return FaultSpec(kind)
    choices = ", ".join([*LAB_FAULTS[:4], "kill-broker:ID", "bounce-leader:N",
                         *(f"{k}[:SECONDS]" for k in _SECONDS_FAULTS), "restart-producer",
                         "exec:'CMD'", "exec-heal:'CMD'"])
    raise InputError(f"--fault {text!r} is not a fault ({choices})")


def parse_fault_at(text: str) -> tuple[str, float]:
    """``40%`` -> ("progress", 0.4); ``12`` or ``12s`` -> ("seconds", 12.0)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(%|s)?\s*", text)
    if not m:
        raise InputError(f"--fault-at {text!r}: expected a percentage (40%) or seconds (12s)")
    value = float(m.group(1))
    if m.group(2) == "%":
        if not 0 <= value <= 100:
            raise InputError("--fault-at percentage must be between 0 and 100")
        return "progress", value / 100
    return "seconds", value


class LabControl:
    """Signals lab brokers through the lab's own state (pids, ports, restart commands)."""

    def __init__(self, state_dir: Path) -> None:
        from kaudit.lab.state import LabState

        self.state_dir = state_dir
        LabState.load(state_dir)  # fail early (exit 2) when there is no lab there

    def kill(self, broker: int, signal_name: str) -> None:
        """Send TERM, KILL or STOP to a broker."""
        from kaudit.lab.manager import lab_kill

        lab_kill(self.state_dir, broker, signal_name)

    def start(self, broker: int) -> None:
        """Restart or resume a broker, waiting until it registers."""
        from kaudit.lab.manager import lab_start

        lab_start(self.state_dir, broker, wait_s=120)

    def resume(self, brokers: list[int]) -> None:
        """Resume several paused brokers at the same moment, waiting until they register."""
        from kaudit.lab.manager import lab_resume

        lab_resume(self.state_dir, brokers, wait_s=120)


class ProducerRestart:
    """``restart-producer``: the hand-off between the fault injector and the send loop.

    The injector asks (:attr:`requested`); the send loop drops its producer session as a
    crash would (it purges what is queued and in flight; a transactional one first lets its
    open transaction's writes reach the log and never commits it) and says so
    (:attr:`dropped`); the injector undoes what it did to the cluster and lets the loop go on
    (:attr:`resume`); the loop opens a new session, which re-sends what the old one had not
    seen acknowledged (a transactional one: its whole open transaction, which the new
    session's ``init_transactions`` fenced and aborted), and says so (:attr:`done`).
    """

    WAIT_S = 120.0

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.dropped = threading.Event()
        self.resume = threading.Event()
        self.done = threading.Event()


class FaultInjector(threading.Thread):
    """Waits for the trigger, injects the faults, heals them after ``duration_s``."""

    def __init__(self, faults: list[FaultSpec], trigger: Callable[[], bool], duration_s: float,
                 log: EventLog, lab: LabControl | None,
                 partition_roles: Callable[[], tuple[int, list[int]]],
                 restart: ProducerRestart | None = None, transactional: bool = False) -> None:
        super().__init__(name="kaudit-fault", daemon=True)
        self.faults, self.trigger, self.duration_s = faults, trigger, duration_s
        self.log, self.lab, self.partition_roles = log, lab, partition_roles
        self.restart, self.transactional = restart, transactional
        self._cancel = threading.Event()
        self._injecting = threading.Event()
        self._done = threading.Event()
        self._heals: list[tuple[str, Callable[[], None], bool]] = []
        self._heal_lock = threading.Lock()
        self.errors: list[str] = []

    def cancel(self) -> None:
        """Stop waiting (the run ended or was interrupted); heal() still has to run."""
        self._cancel.set()

    def under_way(self) -> bool:
        """True from the trigger until every fault has been injected and healed: the probe
        holds its last send meanwhile, so a schedule (bounces, a freeze, a broker down for
        --fault-duration) is never cut short by sends that finished first. Also between
        the trigger and the moment this thread notices it."""
        return not self._done.is_set() and (self._injecting.is_set() or self.trigger())

    def run(self) -> None:
        try:
            self._run()
        finally:
            self._done.set()

    def _run(self) -> None:
        while not self._cancel.is_set() and not self.trigger():
            time.sleep(0.05)
        if self._cancel.is_set():
            return
        self._injecting.set()
        try:
            for fault in self.faults:
                if fault.kind == "exec-heal":
                    continue
                try:
                    self._inject(fault)
                except Exception as exc:  # a fault that fails is reported, not fatal
                    self.errors.append(f"{fault.label()}: {exc}")
                    self.log.add("note", f"fault {fault.label()} failed: {exc}")
            with self._heal_lock:
                to_heal = bool(self._heals)
            if to_heal and not any(f.kind == "bounce-leader" for f in self.faults):
                self._cancel.wait(self.duration_s)
            self.heal()
        finally:
            self._injecting.clear()

    def _inject(self, fault: FaultSpec) -> None:
        leader, followers = self.partition_roles()
        if fault.kind == "exec":
            self._exec(fault.argument or "", "fault")
            heal = next((f for f in self.faults if f.kind == "exec-heal"), None)
            if heal is not None:
                # _exec logs the heal event itself, with the command's exit code.
                self._add_heal("exec-heal", lambda: self._exec(heal.argument or "", "heal"),
                               announce=False)
            return
        assert self.lab is not None
        lab = self.lab
        if fault.kind == "bounce-leader":
            rounds = int(fault.argument or 1)
            for i in range(rounds):
                if self._cancel.is_set():
                    # Say so: a short run must not look like it had every bounce it asked for.
                    self.log.add("note", f"bounce-leader: the run ended after {i} of "
                                         f"{rounds} bounces")
                    break
                leader, _ = self.partition_roles()
                lab.kill(leader, "KILL")
                self.log.add("fault", f"bounce {i + 1}/{rounds}: SIGKILL leader {leader}", 0)
                self._cancel.wait(self.duration_s / max(rounds, 1))
                lab.start(leader)
                self.log.add("heal", f"broker {leader} restarted", 0)
            return
        if fault.kind == "lag-then-kill-leader":
            self._lag_then_kill(lab, leader, followers, float(fault.argument or 0))
            return
        if fault.kind == "shrink-isr-then-kill-leader":
            self._shrink_then_kill(lab, leader, followers, float(fault.argument or 0))
            return
        if fault.kind == "lose-responses":
            with self._frozen(lab, followers, "lose-responses") as frozen:
                self.log.add("fault", f"SIGSTOP followers {_ids(frozen)} for "
                                      f"{fault.argument}s: acks=all requests time out after "
                                      "the leader appended them", 0)
                time.sleep(float(fault.argument or 0))
            return
        if fault.kind == "restart-producer":
            self._restart_producer(lab, followers)
            return
        target, signal_name, verb = {
            "kill-leader": (leader, "KILL", "SIGKILL leader"),
            "stop-leader": (leader, "TERM", "SIGTERM leader"),
            "pause-leader": (leader, "STOP", "SIGSTOP leader"),
            "pause-follower": (followers[0] if followers else -1, "STOP", "SIGSTOP follower"),
            "kill-broker": (int(fault.argument or -1), "KILL", "SIGKILL broker"),
        }[fault.kind]
        if target < 0:
            raise InputError(f"{fault.kind}: partition 0 has no such broker right now")
        lab.kill(target, signal_name)
        self.log.add("fault", f"{verb} {target}", 0)
        self._add_heal(f"broker {target} {'resumed' if signal_name == 'STOP' else 'restarted'}",
                       lambda: lab.start(target))

    def _lag_then_kill(self, lab: LabControl, leader: int, followers: list[int],
                       seconds: float) -> None:
        with self._frozen(lab, followers, "lag-then-kill-leader") as frozen:
            self.log.add("fault", f"SIGSTOP followers {_ids(frozen)} "
                                  f"for {seconds:g}s (still in the ISR)", 0)
            time.sleep(seconds)  # the freeze itself: the leader writes alone meanwhile
            lab.kill(leader, "KILL")
            self.log.add("fault", f"SIGKILL leader {leader}", 0)
            self._add_heal(f"broker {leader} restarted", lambda: lab.start(leader))

    @contextlib.contextmanager
    def _frozen(self, lab: LabControl, followers: list[int], fault: str
                ) -> Iterator[list[int]]:
        """SIGSTOP ``followers``; on the way out resume them together and at once, whatever
        failed (a follower left frozen would be fenced and drop out of the ISR)."""
        if not followers:
            raise InputError(f"{fault}: partition 0 has no in-sync follower")
        frozen: list[int] = []
        try:
            for broker in followers:
                lab.kill(broker, "STOP")
                frozen.append(broker)
            yield frozen
        finally:
            if frozen:
                lab.resume(frozen)
                for broker in frozen:
                    self.log.add("heal", f"broker {broker} resumed", 0)

    def _shrink_then_kill(self, lab: LabControl, leader: int, followers: list[int],
                          seconds: float) -> None:
        if not followers:
            raise InputError("shrink-isr-then-kill-leader: partition 0 has no in-sync follower")
        for broker in followers:
            lab.kill(broker, "KILL")
            self._add_heal(f"broker {broker} restarted", functools.partial(lab.start, broker))
        self.log.add("fault", f"SIGKILL followers {_ids(followers)}", 0)
        deadline = time.monotonic() + SHRINK_WAIT_S
        while True:
            now_leader, in_sync = self.partition_roles()
            if now_leader == leader and not in_sync:
                break
            if now_leader != leader or time.monotonic() >= deadline:
                raise RuntimeError(f"the ISR of partition 0 did not shrink to leader {leader} "
                                   f"within {SHRINK_WAIT_S:g}s (leader {now_leader}, "
                                   f"followers in sync {_ids(in_sync) or 'none'})")
            time.sleep(0.2)
        self.log.add("fault", f"the ISR of partition 0 is leader {leader} alone; it takes "
                              f"writes alone for {seconds:g}s", 0)
        time.sleep(seconds)
        lab.kill(leader, "KILL")
        self._add_heal(f"broker {leader} restarted", lambda: lab.start(leader), first=True)
        self.log.add("fault", f"SIGKILL leader {leader}", 0)
        stale = followers[0]
        lab.start(stale)
        with self._heal_lock:
            self._heals = [h for h in self._heals if h[0] != f"broker {stale} restarted"]
        self.log.add("fault", f"restarted stale follower {stale} (it lacks the writes the "
                              "leader took alone): only an unclean election can make it "
                              "leader", 0)

    def _restart_producer(self, lab: LabControl | None, followers: list[int]) -> None:
        restart = self.restart
        if restart is None:
            raise InputError("restart-producer: this run has no producer to restart")
        if not self.transactional and lab is None:
            raise InputError("restart-producer needs the lab (--lab-state-dir)")
        # acks=all waits for the followers: frozen, they leave the old session with batches
        # the leader appended and never acknowledged. A transactional session needs no
        # freeze: its open transaction is aborted by the new session whatever it holds.
        freeze: contextlib.AbstractContextManager[list[int]] = (
            contextlib.nullcontext([]) if self.transactional or lab is None
            else self._frozen(lab, followers, "restart-producer"))
        try:
            with freeze as frozen:
                if frozen:
                    self.log.add("fault", f"SIGSTOP followers {_ids(frozen)} for "
                                          f"{RESTART_FREEZE_S:g}s", 0)
                    time.sleep(RESTART_FREEZE_S)
                restart.requested.set()
                if not restart.dropped.wait(ProducerRestart.WAIT_S):
                    raise RuntimeError("the send loop did not drop its producer session")
                self.log.add("fault", "producer session dropped as a crash would: queued "
                                      "and in-flight sends purged, no commit", 0)
        finally:
            restart.resume.set()  # after the followers were resumed (the with above)
        if restart.done.wait(ProducerRestart.WAIT_S):
            self.log.add("fault", "a new producer session re-sent what the old one had not "
                                  "seen acknowledged", 0)

    def _exec(self, command: str, kind: str) -> None:
        proc = subprocess.run(shlex.split(command), capture_output=True, text=True,
                              timeout=EXEC_TIMEOUT_S, stdin=subprocess.DEVNULL)
        self.log.add(kind, f"exec {'heal ' if kind == 'heal' else ''}command exited "
                           f"{proc.returncode}")
        if proc.returncode != 0:
            raise RuntimeError(f"command exited {proc.returncode}")

    def _add_heal(self, label: str, action: Callable[[], None], *,
                  announce: bool = True, first: bool = False) -> None:
        with self._heal_lock:
            if first:
                self._heals.insert(0, (label, action, announce))
            else:
                self._heals.append((label, action, announce))

    def heal(self) -> None:
        """Undo every injected fault (idempotent: each heal runs once)."""
        with self._heal_lock:
            heals, self._heals = self._heals, []
        for label, action, announce in heals:
            try:
                action()
                if announce:
                    self.log.add("heal", label, 0)
            except Exception as exc:
                self.errors.append(f"heal {label}: {exc}")
                self.log.add("note", f"heal failed: {label}: {exc}")


def _ids(brokers: list[int]) -> str:
    return ",".join(map(str, brokers))
