"""Report files: atomic for regular files, never replacing devices or pipes."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from kaudit.connection.redact import register_secret
from kaudit.errors import InputError
from kaudit.report.output import emit, write_file


def test_regular_file_is_written_whole_and_redacted(tmp_path: Path) -> None:
    register_secret("s3cret-value")
    target = tmp_path / "report.json"
    target.write_text("old")
    emit("new s3cret-value\n", str(target))
    assert target.read_text() == "new *****\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]  # no temp file left


def test_dev_null_stays_a_device() -> None:
    emit("discarded\n", "/dev/null")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_named_pipe_is_written_into_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    emit("through the pipe\n", str(fifo))
    reader.join(timeout=10)
    assert received == ["through the pipe\n"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_missing_directory_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        emit("x", str(tmp_path / "no" / "such" / "file"))


def test_secret_with_json_special_characters_is_masked_in_json(tmp_path: Path) -> None:
    from kaudit.report.output import to_json

    register_secret('pa"ss\\word')
    target = tmp_path / "r.json"
    emit(to_json({"message": 'auth with pa"ss\\word failed'}), str(target))
    text = target.read_text()
    assert "ss\\\\word" not in text and 'pa\\"ss' not in text and "*****" in text


def test_a_new_report_is_0644_and_a_replaced_one_keeps_its_mode(tmp_path: Path) -> None:
    new = tmp_path / "new.json"
    emit("{}\n", str(new))
    assert stat.S_IMODE(new.stat().st_mode) == 0o644  # not mkstemp's 0600
    kept = tmp_path / "kept.json"
    kept.write_text("old")
    kept.chmod(0o640)
    emit("{}\n", str(kept))
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640 and kept.read_text() == "{}\n"


def test_a_write_the_checks_could_not_foresee_is_one_input_error(tmp_path: Path) -> None:
    # /proc takes no new file, as a full disk or a read-only mount would refuse the write
    # itself after every check before it passed.
    with pytest.raises(InputError, match=r"^-o /proc/kaudit-report: cannot write: "):
        write_file(Path("/proc/kaudit-report"), b"{}\n", "-o /proc/kaudit-report")
