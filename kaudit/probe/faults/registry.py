"""Every fault kaudit can inject, registered once: its name, its argument, what it does,
which commands take it, and how it behaves (its injection step, the broker or the part of
the run it aims at, whether the producer's requests must time out sooner under it).
``--fault`` is parsed here and the help text and the "not a fault" error are generated
from here, so they cannot drift apart; nothing outside this module tells faults apart by
name.

This module imports nothing of Kafka: ``--help`` and shell completion read it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from kaudit.errors import InputError

PRODUCER = "probe"
"""The producer probe: ``kaudit probe``, ``probe matrix`` and ``probe prove``."""
CONSUMER = "probe consume"
SHARE = "probe share"
CANARY = "canary"
"""``kaudit canary``: the producer's faults but restart-producer, and stall-reader."""

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
LOSE_RESPONSES_DEFAULT_S = 4.0
"""``lose-responses``: how long the in-sync followers are frozen. Longer than the producer's
``request.timeout.ms`` (the probe sets 1000 ms for this fault unless told otherwise), so the
leader answers REQUEST_TIMED_OUT for batches it has appended and the producer re-sends them;
shorter than the broker session, so the followers stay in the ISR and commit every copy."""
STALL_READER_DEFAULT_S = 30.0
STALL_READER_MAX_S = 3600.0
"""``stall-reader`` (canary): how long the reader stays stopped, at most an hour."""
SHORT_REQUEST_TIMEOUT_MS = 1000
"""The producer's ``request.timeout.ms`` under faults that freeze brokers to make requests time
out while the leader holds them (:attr:`Fault.shortens_request_timeout`: ``lose-responses``,
``pause-*``), unless ``--producer-property`` sets it: well below the freeze, so the producer
gives up and re-sends before the brokers are resumed."""
COMMAND = "'CMD'"
"""The argument of the faults that run a command (never repeated in reports: it may hold
secrets)."""

Target = Literal["leader", "follower", "broker", "coordinator", "share-coordinator", "reader",
                 "producer"]
"""What a fault aims at: partition 0's leader or an in-sync follower of it, the broker its
argument names, the group's coordinator, the share coordinator of the share group's
partition 0, the canary's reader, the probe's producer session. The run offers them as
the injector's ``Targets``."""


@dataclass(frozen=True)
class Fault:
    """One kind of fault: how it is written, what it does, where it applies."""

    name: str
    description: str
    argument: str | None = None
    """The argument's placeholder: ``ID``, ``N``, ``SECONDS`` or ``'CMD'`` (None: none)."""
    default: float | None = None
    """A SECONDS argument's default (it may then be left out) ..."""
    most: float | None = None
    """... and its largest value."""
    on_lab: bool = True
    """It signals the lab's broker processes (kaudit knows their pids)."""
    commands: tuple[str, ...] = (PRODUCER, CANARY)
    step: str | None = None
    """How the injector injects it: the name of its step, ``FaultInjector._inject_<step>``
    (``signal``: one signal to the target broker, undone at heal time). None: no step of
    its own (``exec-heal`` is run as the heal of the fault it :attr:`heals`)."""
    signal: str | None = None
    """The ``signal`` step's signal: ``KILL`` (restarted at heal time), ``TERM``
    (restarted) or ``STOP`` (resumed)."""
    target: Target | None = None
    """What it aims at (None: nothing of the run's, e.g. a command)."""
    shortens_request_timeout: bool = False
    """The producer's requests time out after :data:`SHORT_REQUEST_TIMEOUT_MS` under it:
    it freezes a broker so that requests go unanswered, and the producer must give up and
    re-send while the freeze lasts."""
    spends_duration: bool = False
    """Its step itself lasts ``--fault-duration`` (``bounce-leader``'s rounds): nothing is
    left to wait for before the heal."""
    heals: str | None = None
    """The fault whose heal this one is, run at heal time (``exec-heal``: ``exec``'s)."""

    def usage(self) -> str:
        """How it is written: ``kill-broker:ID``, ``lose-responses[:SECONDS]``..."""
        if self.argument is None:
            return self.name
        if self.default is not None:
            return f"{self.name}[:{self.argument}]"
        return f"{self.name}:{self.argument}"


_ALL = (PRODUCER, CONSUMER, CANARY, SHARE)
FAULTS: dict[str, Fault] = {f.name: f for f in (
    Fault("kill-leader", "SIGKILL the leader of partition 0 (probe consume: of its input "
          "topic); restarted after --fault-duration", commands=_ALL,
          step="signal", signal="KILL", target="leader"),
    Fault("kill-coordinator", "SIGKILL the group's coordinator (probe consume: the consumer "
          "group's, probe share: the share group's); restarted after --fault-duration",
          commands=(CONSUMER, SHARE), step="signal", signal="KILL", target="coordinator"),
    Fault("kill-share-coordinator", "SIGKILL the share coordinator of the share group's "
          "partition 0 (the leader of the __share_group_state partition that keeps its "
          "delivery state); restarted after --fault-duration", commands=(SHARE,),
          step="signal", signal="KILL", target="share-coordinator"),
    Fault("stop-leader", "SIGTERM the leader of partition 0 (a controlled shutdown)",
          step="signal", signal="TERM", target="leader"),
    Fault("pause-leader", "SIGSTOP the leader of partition 0, resumed after --fault-duration "
          "(requests time out instead of failing fast)",
          step="signal", signal="STOP", target="leader", shortens_request_timeout=True),
    Fault("pause-follower", "SIGSTOP an in-sync follower of partition 0",
          step="signal", signal="STOP", target="follower", shortens_request_timeout=True),
    Fault("kill-broker", "SIGKILL broker ID", argument="ID", commands=(PRODUCER, CANARY, SHARE),
          step="signal", signal="KILL", target="broker"),
    Fault("bounce-leader", "kill the leader of partition 0, restart it, and chase the next "
          "leader, N times within --fault-duration", argument="N",
          step="bounce", target="leader", spends_duration=True),
    Fault("lag-then-kill-leader", "freeze partition 0's in-sync followers for SECONDS (still "
          "in the ISR), kill the leader that wrote alone, resume them: acks=1 loses writes "
          "every time", argument="SECONDS", default=LAG_THEN_KILL_DEFAULT_S,
          most=LAG_THEN_KILL_MAX_S, step="lag_then_kill", target="leader"),
    Fault("shrink-isr-then-kill-leader", "kill the followers until the ISR is the leader "
          "alone, let it write alone for SECONDS, kill it and restart a stale follower",
          argument="SECONDS", default=SHRINK_WRITE_DEFAULT_S, most=SHRINK_WRITE_MAX_S,
          step="shrink_then_kill", target="leader"),
    Fault("lose-responses", "freeze the in-sync followers for SECONDS so acks=all requests "
          "time out after the leader appended them", argument="SECONDS",
          default=LOSE_RESPONSES_DEFAULT_S, most=LAG_THEN_KILL_MAX_S,
          step="lose_responses", target="follower", shortens_request_timeout=True),
    Fault("restart-producer", "a new producer session takes over mid-run and re-sends what "
          "the old one had not seen acknowledged", commands=(PRODUCER,),
          step="restart_producer", target="producer"),
    Fault("stall-reader", "the canary's reader stops for SECONDS, its position held, while "
          "the producer goes on (records deleted meanwhile are lost unread)",
          argument="SECONDS", default=STALL_READER_DEFAULT_S, most=STALL_READER_MAX_S,
          on_lab=False, commands=(CANARY,), step="stall_reader", target="reader"),
    Fault("exec", "run CMD (a kubectl or systemctl call, say)",
          argument=COMMAND, on_lab=False, commands=(PRODUCER, CANARY, SHARE), step="exec"),
    Fault("exec-heal", "the command that undoes exec's, run at heal time", argument=COMMAND,
          on_lab=False, commands=(PRODUCER, CANARY, SHARE), heals="exec"),
)}


@dataclass(frozen=True)
class FaultSpec:
    """One ``--fault`` value, parsed."""

    kind: str
    """A name in :data:`FAULTS`."""
    argument: str | None = None
    """Broker id, bounce count, seconds or command."""

    @property
    def registered(self) -> Fault:
        """Its kind as registered: what it does, what it aims at, how it is injected."""
        return FAULTS[self.kind]

    @property
    def needs_lab(self) -> bool:
        """True for faults that signal lab processes."""
        return self.registered.on_lab

    def label(self) -> str:
        """How the fault is named in reports (commands are not repeated: they may hold secrets)."""
        if self.registered.argument == COMMAND:
            return self.kind
        return f"{self.kind}:{self.argument}" if self.argument else self.kind


def faults_of(command: str) -> list[Fault]:
    """The faults ``command`` takes, in the registry's order."""
    return [f for f in FAULTS.values() if command in f.commands]


def fault_help(command: str) -> str:
    """The ``--fault`` help of ``command``: every fault it takes, by how it is written."""
    lab = [f.usage() for f in faults_of(command) if f.on_lab]
    anywhere = [f.usage() for f in faults_of(command) if not f.on_lab]
    text = ", ".join(lab) + " (lab)"
    if anywhere:
        text += "; " + ", ".join(anywhere) + " (any cluster)"
    return text


def shortened_request_timeout(command: str) -> str:
    """Which of ``command``'s faults shorten the producer's request timeout, said for its
    ``--fault`` help ("" when none does)."""
    names = [f.name for f in faults_of(command) if f.shortens_request_timeout]
    if not names:
        return ""
    listed = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
    return (f"{listed} run with request.timeout.ms={SHORT_REQUEST_TIMEOUT_MS} unless "
            "--producer-property sets it")


def parse_faults(values: Iterable[str] | None, command: str) -> tuple[FaultSpec, ...]:
    """Every ``--fault`` of ``command``, parsed, and checked to run together."""
    faults = tuple(parse_fault(text, command) for text in values or ())
    check_faults(faults)
    return faults


def parse_fault(text: str, command: str = PRODUCER) -> FaultSpec:
    """Parse ``kill-leader``, ``kill-broker:2``, ``bounce-leader:3``, ``exec:'cmd'``... as a
    fault of ``command``."""
    name, sep, arg = text.partition(":")
    fault = FAULTS.get(name.strip())
    if fault is None or (fault.argument is None and sep):
        choices = ", ".join(f.usage() for f in faults_of(command))
        raise InputError(f"--fault {text!r} is not a fault ({choices})")
    if command not in fault.commands:
        raise InputError(f"--fault {fault.name} is not a fault of kaudit {command}: "
                         f"only of kaudit {' and '.join(fault.commands)}")
    if fault.argument is None:
        return FaultSpec(fault.name)
    if fault.argument == COMMAND:
        return FaultSpec(fault.name, _command(fault, arg))
    if fault.default is not None:
        return FaultSpec(fault.name, _seconds(fault, text, arg if sep else None))
    if not sep or not arg.strip().isdigit():
        raise InputError(f"--fault {text!r}: expected a number, e.g. {fault.name}:"
                         f"{'2' if fault.argument == 'ID' else '3'}")
    return FaultSpec(fault.name, arg.strip())


def _command(fault: Fault, arg: str) -> str:
    command = arg.strip()
    if len(command) >= 2 and command[0] == command[-1] and command[0] in "'\"":
        command = command[1:-1]
    if not command:
        raise InputError(f"--fault {fault.name}: needs a command, e.g. "
                         f"{fault.name}:'systemctl stop kafka'")
    return command


def _seconds(fault: Fault, text: str, arg: str | None) -> str:
    assert fault.default is not None and fault.most is not None
    try:
        value = float(arg.strip()) if arg is not None else fault.default
    except ValueError:
        value = -1.0
    if not 0 < value <= fault.most:
        raise InputError(f"--fault {text!r}: expected seconds above 0 and at most "
                         f"{fault.most:g}, e.g. {fault.name}:{fault.default:g}")
    return f"{value:g}"


def check_faults(faults: tuple[FaultSpec, ...]) -> None:
    """Refuse a set of faults that cannot run together."""
    kinds = {f.kind for f in faults}
    for fault in (f.registered for f in faults):
        if fault.heals is not None and fault.heals not in kinds:
            raise InputError(f"--fault {fault.usage()} needs an {FAULTS[fault.heals].usage()} "
                             "fault to heal")


FaultAt = tuple[str, float]
"""``--fault-at``: ("progress", share 0..1) or ("seconds", seconds from the start)."""


def parse_fault_at(text: str) -> FaultAt:
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


def fault_at_reached(fault_at: FaultAt, share: float, seconds: float) -> bool:
    """Whether a run ``share`` done (0..1) and ``seconds`` old is at its ``--fault-at``."""
    kind, value = fault_at
    return share >= value if kind == "progress" else seconds >= value


def describe_fault_at(fault_at: FaultAt) -> str:
    """``40%`` or ``12s``, as the reports show it."""
    kind, value = fault_at
    return f"{value * 100:g}%" if kind == "progress" else f"{value:g}s"
