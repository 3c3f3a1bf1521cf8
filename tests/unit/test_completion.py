"""Shell completion (typer's) completes kaudit's commands, subcommands and choices.

The bash test sources the very script `kaudit --show-completion` prints and calls its
completion function the way bash does on TAB; zsh and fish (not installed here) are
driven through the protocol their scripts use (`_KAUDIT_COMPLETE=complete_zsh|fish`).
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest
import typer

from kaudit.cli.app import app
from kaudit.probe.faults.registry import CONSUMER, PRODUCER, faults_of
from kaudit.report.output import CheckFormat
from tests.conftest import kaudit_on_path

COMMANDS = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
LAB_COMMANDS = ["down", "env", "kill", "start", "status", "up"]
CHECK_FORMATS = [f.value for f in CheckFormat]
PRODUCER_FAULTS = [f.name for f in faults_of(PRODUCER)]
CONSUMER_FAULTS = [f.name for f in faults_of(CONSUMER)]


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    """PATH finds this checkout's `kaudit`; HOME is empty."""
    home = tmp_path / "home"
    home.mkdir()
    return kaudit_on_path(tmp_path) | {"HOME": str(home)}


def bash(script: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "--norc", "--noprofile", "-c", script], env=env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def test_the_app_has_the_commands_completion_is_tested_on() -> None:
    assert {"check", "demo", "lab", "probe", "reconcile", "snapshot"} <= set(COMMANDS)


@pytest.mark.parametrize(("words", "expected"), [
    (["kaudit", ""], COMMANDS),
    (["kaudit", "re"], ["reconcile"]),
    (["kaudit", "lab", ""], LAB_COMMANDS),
    (["kaudit", "probe", ""], ["consume", "matrix", "prove", "share"]),
    (["kaudit", "check", "--format", ""], CHECK_FORMATS),
    (["kaudit", "check", "--fail"], ["--fail-on"]),
    (["kaudit", "lab", "kill", "--signal", ""], ["TERM", "KILL", "STOP"]),
    (["kaudit", "probe", "--fault", ""], PRODUCER_FAULTS),
    (["kaudit", "probe", "--fault", "kill-"], ["kill-leader", "kill-broker"]),
    (["kaudit", "probe", "consume", "--fault", ""], ["kill-leader", "kill-coordinator"]),
    (["kaudit", "probe", "matrix", "--fault", ""], [*PRODUCER_FAULTS, "none"]),
    # A comma list: the item after the last comma, with the items before it (bash
    # replaces the whole word), not one listed already.
    (["kaudit", "probe", "matrix", "--fault", "kill-leader,pa"],
     ["kill-leader,pause-leader", "kill-leader,pause-follower"]),
    (["kaudit", "probe", "matrix", "--fault", "kill-leader,"],
     [f"kill-leader,{name}" for name in [*PRODUCER_FAULTS, "none"] if name != "kill-leader"]),
])
def test_bash_script_from_show_completion_completes(words: list[str], expected: list[str],
                                                    env: dict[str, str]) -> None:
    # Run from bash so that `--show-completion` detects bash as the current shell.
    shown = bash("kaudit --show-completion", env)
    assert shown.returncode == 0, shown.stderr
    script = shown.stdout
    assert "complete -o default -F _kaudit_completion kaudit" in script
    words_text = " ".join(shlex.quote(w) for w in words)
    result = bash(f"{script}\nCOMP_WORDS=({words_text}); COMP_CWORD={len(words) - 1}\n"
                  '_kaudit_completion kaudit\nprintf "%s\\n" "${COMPREPLY[@]}"\n', env)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split()) == sorted(expected)


def test_install_completion_for_bash_writes_the_script_and_sources_it(
        env: dict[str, str]) -> None:
    result = bash("kaudit --install-completion", env)
    assert result.returncode == 0, result.stderr
    home = Path(env["HOME"])
    installed = home / ".bash_completions" / "kaudit.sh"
    assert "_KAUDIT_COMPLETE=complete_bash" in installed.read_text()
    assert f"source '{installed}'" in (home / ".bashrc").read_text()


def complete(shell: str, line: str, env: dict[str, str], **extra: str) -> str:
    result = subprocess.run(["kaudit"], env={**env, "_KAUDIT_COMPLETE": f"complete_{shell}",
                                             "_TYPER_COMPLETE_ARGS": line, **extra},
                            capture_output=True, text=True, timeout=60,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    return result.stdout


def source(shell: str, env: dict[str, str]) -> str:
    result = subprocess.run(["kaudit"], env={**env, "_KAUDIT_COMPLETE": f"source_{shell}"},
                            capture_output=True, text=True, timeout=60,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_zsh_completes_commands_and_choices(env: dict[str, str]) -> None:
    assert "#compdef kaudit" in source("zsh", env)
    commands = complete("zsh", "kaudit ", env)
    for name in COMMANDS:
        assert f'"{name}":' in commands
    formats = complete("zsh", "kaudit check --format ", env)
    for name in CHECK_FORMATS:
        assert f'"{name}"' in formats


def test_fish_completes_commands_and_choices(env: dict[str, str]) -> None:
    assert "complete --command kaudit" in source("fish", env)
    commands = complete("fish", "kaudit ", env, _TYPER_COMPLETE_FISH_ACTION="get-args")
    assert sorted(line.split("\t")[0] for line in commands.splitlines()) == COMMANDS
    lab = complete("fish", "kaudit lab ", env, _TYPER_COMPLETE_FISH_ACTION="get-args")
    assert sorted(line.split("\t")[0] for line in lab.splitlines()) == LAB_COMMANDS


def test_fish_completes_faults_each_with_what_it_does_on_one_line(env: dict[str, str]) -> None:
    for line, names in (("kaudit probe --fault ", PRODUCER_FAULTS),
                        ("kaudit probe consume --fault ", CONSUMER_FAULTS)):
        shown = complete("fish", line, env, _TYPER_COMPLETE_FISH_ACTION="get-args")
        # A help wrapped onto a second line would be one more (wrong) choice.
        choices = [choice.split("\t") for choice in shown.splitlines()]
        assert [choice[0] for choice in choices] == names
        assert all(len(choice) == 2 and choice[1] for choice in choices), shown
    assert "kill-broker:ID - SIGKILL broker ID" in complete(
        "fish", "kaudit probe --fault kill-b", env, _TYPER_COMPLETE_FISH_ACTION="get-args")


def test_zsh_completes_the_last_fault_of_a_matrix_list(env: dict[str, str]) -> None:
    shown = complete("zsh", "kaudit probe matrix --fault kill-leader,pause-", env)
    assert '"kill-leader,pause-leader":' in shown
    assert '"kill-leader,pause-follower":' in shown
    assert "stop-leader" not in shown
