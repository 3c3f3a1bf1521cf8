"""The fault injector: waits for the run's cue, injects each fault, heals it.

Each fault in :data:`~kaudit.probe.faults.registry.FAULTS` names its step here
(``Fault.step``: the method ``_inject_<step>``) and what it aims at (``Fault.target``); what
a command offers its faults to aim at (partition 0's leader and in-sync followers, the
group's coordinator, the producer to restart, the reader to stall) it hands over as a
:class:`Targets`. :func:`start_injector` is how every command starts it, with the lab it
looked for before it made any topic.

The run stays open until every fault has been injected and healed (see
:meth:`FaultInjector.under_way`), so a schedule longer than the sends runs to its end
instead of being cut short by chance. While a fault is in force, and for ``settle_s`` after
it is healed, :meth:`FaultInjector.excused_until` tells the run's waits that a missing
leader or coordinator is the fault's doing, not an unreachable cluster.
"""

from __future__ import annotations

import contextlib
import functools
import shlex
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from kaudit.errors import InputError
from kaudit.probe.faults.lab import LabControl
from kaudit.probe.faults.registry import FaultAt, FaultSpec, describe_fault_at
from kaudit.waiting import Deadline

EXEC_TIMEOUT_S = 120
SHRINK_WAIT_S = 60.0
"""How long the ISR may take to shrink to the leader (a killed follower leaves it once its
broker session expires, ``broker.session.timeout.ms``: 9 s by default)."""
RESTART_FREEZE_S = 2.0
"""``restart-producer`` without transactions: how long partition 0's followers are frozen
before the old session is dropped, so that it has batches the leader appended and never
acknowledged (acks=all waits for the followers)."""
COPIED_WAIT_S = 10.0
"""``lag-then-kill-leader``: how long it waits for the followers to hold a record first."""
COORDINATOR_WAIT_S = 30.0
"""How long ``kill-coordinator`` keeps asking for the group's coordinator: right after a
worker's crash or a rebalance the lookup can time out, or find the group's state still
loading."""


class FaultLog(Protocol):
    """Where the injector says what it did: a run's event log."""

    def add(self, kind: str, detail: str, partition: int | None = None) -> None: ...


class Excusable(Protocol):
    """A run's admin session: told when a fault explains a missing leader or coordinator."""

    def excuse(self, until: Callable[[], float]) -> None: ...


class FaultSettings(Protocol):
    """The faults a run was asked for, and how long each is in force."""

    @property
    def faults(self) -> tuple[FaultSpec, ...]: ...

    @property
    def fault_duration(self) -> float: ...

    @property
    def fault_at(self) -> FaultAt: ...


class ReaderStall:
    """``stall-reader``: the canary's reader is stopped while :attr:`held` is set."""

    def __init__(self) -> None:
        self.held = threading.Event()


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


@dataclass
class Targets:
    """What the run offers its faults to aim at."""

    partition_roles: Callable[[], tuple[int, list[int]]]
    """Partition 0's leader and in-sync followers, fresh from metadata."""
    coordinator: Callable[[], int] | None = None
    """The group's coordinator (``probe consume``, ``probe share``)."""
    share_coordinator: Callable[[], int] | None = None
    """The share coordinator of the share group's partition 0 (``probe share``)."""
    restart: ProducerRestart | None = None
    """The send loop's side of ``restart-producer``."""
    reader: ReaderStall | None = None
    """The canary reader's side of ``stall-reader``."""
    transactional: bool = False
    committed: Callable[[], int] | None = None
    """Partition 0's high watermark: how much of it the in-sync followers hold."""


class FaultInjector(threading.Thread):
    """Waits for the trigger, injects the faults, heals them after ``duration_s``."""

    def __init__(self, faults: list[FaultSpec], trigger: Callable[[], bool], duration_s: float,
                 log: FaultLog, lab: LabControl | None, targets: Targets,
                 settle_s: float = 10.0, cue: str = "its cue") -> None:
        super().__init__(name="kaudit-fault", daemon=True)
        self.faults, self.trigger, self.duration_s = faults, trigger, duration_s
        self.log, self.lab, self.targets, self.settle_s = log, lab, targets, settle_s
        self.cue = cue
        """When the faults strike, as the report says it (``--fault-at 30%``)."""
        self._cancel = threading.Event()
        self._injecting = threading.Event()
        self._struck = threading.Event()
        self._done = threading.Event()
        self._heals: list[tuple[str, Callable[[], None], bool]] = []
        self._heal_lock = threading.Lock()
        self._healed_at: float | None = None
        self.errors: list[str] = []

    def cancel(self) -> None:
        """Stop waiting (the run ended or was interrupted); heal() still has to run."""
        self._cancel.set()

    def finish(self, wait_s: float | None) -> list[str]:
        """End the injector with its run: stop waiting for the cue, give a fault under way
        up to ``wait_s`` to end (None: as long as it takes), heal whatever is still broken.
        What the run's notes should say: each fault that failed, and faults asked for that
        never struck (the run ended before their cue), so that a run is never read as having
        survived a fault it did not meet."""
        self.cancel()
        self.join(wait_s)
        self.heal()
        missed = [] if self.struck() else [
            f"{', '.join(f.label() for f in self.faults)}: never struck: the run ended "
            f"before {self.cue}"]
        return [*self.errors, *missed]

    def struck(self) -> bool:
        """Whether the cue came and the faults began (failed ones included)."""
        return self._struck.is_set()

    def under_way(self) -> bool:
        """True from the trigger until every fault has been injected and healed: the probe
        holds its last send meanwhile, so a schedule (bounces, a freeze, a broker down for
        --fault-duration) is never cut short by sends that finished first. Also between
        the trigger and the moment this thread notices it."""
        return not self._done.is_set() and (self._injecting.is_set() or self.trigger())

    def excused_until(self) -> float:
        """The monotonic moment until which a wait for a leader or a coordinator is the
        fault's doing: while a fault is in force, ``settle_s`` from now; once every fault is
        healed, ``settle_s`` after that; 0 when no fault ever was."""
        if self._injecting.is_set():
            return time.monotonic() + self.settle_s
        healed = self._healed_at
        return healed + self.settle_s if healed is not None else 0.0

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
        self._struck.set()
        self._injecting.set()
        try:
            for fault in self.faults:
                step = fault.registered.step
                if step is None:  # another fault's heal (exec-heal): run by that fault
                    continue
                try:
                    getattr(self, f"_inject_{step}")(fault)
                except Exception as exc:  # a fault that fails is reported, not fatal
                    self.errors.append(f"{fault.label()}: {exc}")
                    self.log.add("note", f"fault {fault.label()} failed: {exc}")
            with self._heal_lock:
                to_heal = bool(self._heals)
            if to_heal and not any(f.registered.spends_duration for f in self.faults):
                self._cancel.wait(self.duration_s)
            self.heal()
        finally:
            self._injecting.clear()

    def _inject_signal(self, fault: FaultSpec) -> None:
        """The one-signal faults: a broker killed, stopped or frozen, then restarted or
        resumed at heal time."""
        signal_name, target = fault.registered.signal, fault.registered.target
        assert signal_name is not None and target is not None, fault.kind
        self._kill_then_heal(self._broker(fault), signal_name, f"SIG{signal_name} {target}")

    def _broker(self, fault: FaultSpec) -> int:
        """The broker a one-signal fault aims at, found now."""
        target = fault.registered.target
        if target == "broker":
            return int(fault.argument or -1)
        if target == "coordinator":
            return self._coordinator(fault, self.targets.coordinator)
        if target == "share-coordinator":
            return self._coordinator(fault, self.targets.share_coordinator)
        leader, followers = self.targets.partition_roles()
        if target == "leader":
            return leader
        if not followers:
            raise InputError(f"{fault.kind}: partition 0 has no such broker right now")
        return followers[0]

    def _kill_then_heal(self, target: int, signal_name: str, verb: str) -> None:
        lab = self._lab()
        lab.kill(target, signal_name)
        self.log.add("fault", f"{verb} {target}", 0)
        self._add_heal(f"broker {target} {'resumed' if signal_name == 'STOP' else 'restarted'}",
                       lambda: lab.start(target))

    def _coordinator(self, fault: FaultSpec, find: Callable[[], int] | None) -> int:
        if find is None:
            raise InputError(f"{fault.kind}: this run has no such group")
        deadline = Deadline(COORDINATOR_WAIT_S)
        while True:
            try:
                return find()
            except Exception:
                if deadline.expired() or self._cancel.is_set():
                    raise
            self._cancel.wait(0.5)

    def _inject_bounce(self, fault: FaultSpec) -> None:
        lab = self._lab()
        rounds = int(fault.argument or 1)
        for i in range(rounds):
            if self._cancel.is_set():
                # Say so: a short run must not look like it had every bounce it asked for.
                self.log.add("note", f"{fault.kind}: the run ended after {i} of "
                                     f"{rounds} bounces")
                break
            leader, _ = self.targets.partition_roles()
            lab.kill(leader, "KILL")
            self.log.add("fault", f"bounce {i + 1}/{rounds}: SIGKILL leader {leader}", 0)
            self._cancel.wait(self.duration_s / max(rounds, 1))
            lab.start(leader)
            self.log.add("heal", f"broker {leader} restarted", 0)

    def _inject_lag_then_kill(self, fault: FaultSpec) -> None:
        lab, seconds = self._lab(), float(fault.argument or 0)
        self._wait_for_a_copied_record()
        leader, followers = self.targets.partition_roles()
        with self._frozen(lab, followers, fault.kind) as frozen:
            self.log.add("fault", f"SIGSTOP followers {_ids(frozen)} "
                                  f"for {seconds:g}s (still in the ISR)", 0)
            time.sleep(seconds)  # the freeze itself: the leader writes alone meanwhile
            lab.kill(leader, "KILL")
            self.log.add("fault", f"SIGKILL leader {leader}", 0)
            self._add_heal(f"broker {leader} restarted", lambda: lab.start(leader))

    def _wait_for_a_copied_record(self) -> None:
        """Until the followers hold a record of partition 0 (bounded): a record kept below
        the ones the leader then takes alone places their loss in the log's epochs."""
        committed, deadline = self.targets.committed, Deadline(COPIED_WAIT_S)
        while committed is not None and not deadline.expired() and not self._cancel.is_set():
            with contextlib.suppress(Exception):  # a slow answer: ask again
                if committed() > 0:
                    return
            time.sleep(0.2)

    def _inject_lose_responses(self, fault: FaultSpec) -> None:
        _, followers = self.targets.partition_roles()
        with self._frozen(self._lab(), followers, fault.kind) as frozen:
            self.log.add("fault", f"SIGSTOP followers {_ids(frozen)} for "
                                  f"{fault.argument}s: acks=all requests time out after "
                                  "the leader appended them", 0)
            time.sleep(float(fault.argument or 0))

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

    def _inject_shrink_then_kill(self, fault: FaultSpec) -> None:
        lab, seconds = self._lab(), float(fault.argument or 0)
        leader, followers = self.targets.partition_roles()
        if not followers:
            raise InputError(f"{fault.kind}: partition 0 has no in-sync follower")
        for broker in followers:
            lab.kill(broker, "KILL")
            self._add_heal(f"broker {broker} restarted", functools.partial(lab.start, broker))
        self.log.add("fault", f"SIGKILL followers {_ids(followers)}", 0)
        self._wait_for_leader_alone(leader)
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

    def _wait_for_leader_alone(self, leader: int) -> None:
        deadline = Deadline(SHRINK_WAIT_S)
        while True:
            now_leader, in_sync = self.targets.partition_roles()
            if now_leader == leader and not in_sync:
                return
            if now_leader != leader or deadline.expired():
                raise RuntimeError(f"the ISR of partition 0 did not shrink to leader {leader} "
                                   f"within {SHRINK_WAIT_S:g}s (leader {now_leader}, "
                                   f"followers in sync {_ids(in_sync) or 'none'})")
            time.sleep(0.2)

    def _inject_restart_producer(self, fault: FaultSpec) -> None:
        restart, lab = self.targets.restart, self.lab
        transactional = self.targets.transactional
        if restart is None:
            raise InputError(f"{fault.kind}: this run has no producer to restart")
        if not transactional and lab is None:
            raise InputError(f"{fault.kind} needs the lab (--lab-state-dir)")
        # acks=all waits for the followers: frozen, they leave the old session with batches
        # the leader appended and never acknowledged. A transactional session needs no
        # freeze: its open transaction is aborted by the new session whatever it holds.
        freeze: contextlib.AbstractContextManager[list[int]] = (
            contextlib.nullcontext([]) if transactional or lab is None
            else self._frozen(lab, self.targets.partition_roles()[1], fault.kind))
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

    def _inject_exec(self, fault: FaultSpec) -> None:
        self._exec(fault.argument or "", "fault")
        heal = next((f for f in self.faults if f.registered.heals == fault.kind), None)
        if heal is not None:
            # _exec logs the heal event itself, with the command's exit code.
            self._add_heal(heal.kind, lambda: self._exec(heal.argument or "", "heal"),
                           announce=False)

    def _exec(self, command: str, kind: str) -> None:
        proc = subprocess.run(shlex.split(command), capture_output=True, text=True,
                              timeout=EXEC_TIMEOUT_S, stdin=subprocess.DEVNULL)
        self.log.add(kind, f"exec {'heal ' if kind == 'heal' else ''}command exited "
                           f"{proc.returncode}")
        if proc.returncode != 0:
            raise RuntimeError(f"command exited {proc.returncode}")

    def _lab(self) -> LabControl:
        assert self.lab is not None, "a lab fault without a lab (lab_for checks this)"
        return self.lab

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
        if self._injecting.is_set() or heals:
            self._healed_at = time.monotonic()

    def _inject_stall_reader(self, fault: FaultSpec) -> None:
        stall = self.targets.reader
        if stall is None:
            raise InputError(f"{fault.kind}: this run has no reader to stall")
        stall.held.set()
        self.log.add("fault", f"the reader stopped for {fault.argument}s, its position held")
        try:
            self._cancel.wait(float(fault.argument or 0))
        finally:
            stall.held.clear()
            self.log.add("heal", "the reader resumed")


def start_injector(settings: FaultSettings, lab: LabControl | None, trigger: Callable[[], bool],
                   log: FaultLog, targets: Targets, session: Excusable,
                   settle_s: float) -> FaultInjector:
    """Start injecting ``settings``' faults at ``trigger``, into ``lab``: the one the run
    looked for with :func:`~kaudit.probe.faults.lab.lab_for` before it made any topic, so
    that no lab there is exit 2 with nothing left behind. ``session``'s waits are excused
    while a fault is in force and for ``settle_s`` after its heal."""
    injector = FaultInjector(list(settings.faults), trigger, settings.fault_duration, log, lab,
                             targets, settle_s=settle_s,
                             cue=f"--fault-at {describe_fault_at(settings.fault_at)}")
    # A leader or coordinator missing while the fault is in force is the fault's doing.
    session.excuse(injector.excused_until)
    injector.start()
    return injector


def _ids(brokers: list[int]) -> str:
    return ",".join(map(str, brokers))
