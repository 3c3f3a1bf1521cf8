"""The lab's brokers as faults reach them: through the lab's own state (pids, ports,
restart commands), never a signal sent anywhere else."""

from __future__ import annotations

from pathlib import Path

from kaudit.probe.faults.registry import FaultSpec


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


def lab_for(faults: tuple[FaultSpec, ...], state_dir: Path | None) -> LabControl | None:
    """The lab the faults signal (``--lab-state-dir``, else the default lab), or None when
    none of them needs one. Checked before the run: no lab is exit 2 at once."""
    if not any(f.needs_lab for f in faults):
        return None
    return lab_at(state_dir)


def lab_at(state_dir: Path | None) -> LabControl:
    """The lab in ``state_dir`` (``--lab-state-dir``), else the default lab; no lab there is
    exit 2 at once."""
    from kaudit.lab.state import default_state_dir

    return LabControl((state_dir or default_state_dir()).expanduser())
