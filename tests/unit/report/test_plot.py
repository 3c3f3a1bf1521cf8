"""``kaudit probe --plot``: the timeline PNG drawn from the probe's JSON record."""

from __future__ import annotations

import copy
import json
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kaudit.errors import ExitCode, InputError
from kaudit.report.plot import MISSING_MATPLOTLIB, check_plot_target, plot_timeline

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "probe-sample.json"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _sample() -> dict[str, Any]:
    record: dict[str, Any] = json.loads(SAMPLE.read_text(encoding="utf-8"))
    return record


def _png_size(data: bytes) -> tuple[int, int]:
    """Width and height from the IHDR chunk, which must come first."""
    assert data[:8] == PNG_SIGNATURE
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# -- needs no matplotlib -----------------------------------------------------------------------


def test_module_does_not_import_matplotlib() -> None:
    code = ("import sys, kaudit.report.plot; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_missing_matplotlib_is_an_input_error(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    # None in sys.modules makes ``import matplotlib`` raise ImportError.
    for name in [m for m in sys.modules if m.split(".")[0] == "matplotlib"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    target = tmp_path / "run.png"
    with pytest.raises(InputError) as err:
        plot_timeline(_sample(), target)
    assert str(err.value) == MISSING_MATPLOTLIB
    assert "\n" not in str(err.value)
    assert err.value.exit_code == ExitCode.USAGE
    assert "pip install matplotlib" in str(err.value)
    assert _leftovers(tmp_path) == []


def test_check_before_the_run_without_matplotlib(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    for name in [m for m in sys.modules if m.split(".")[0] == "matplotlib"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(InputError) as err:
        check_plot_target(tmp_path / "run.png")
    assert str(err.value) == MISSING_MATPLOTLIB


def test_check_before_the_run_with_matplotlib(mpl: Any, tmp_path: Path) -> None:
    check_plot_target(tmp_path / "run.png")
    assert _leftovers(tmp_path) == []
    with pytest.raises(InputError, match="does not exist"):
        check_plot_target(tmp_path / "nope" / "run.png")


def test_missing_directory_is_an_input_error(tmp_path: Path) -> None:
    target = tmp_path / "no-such-dir" / "run.png"
    with pytest.raises(InputError, match="does not exist"):
        plot_timeline(_sample(), target)
    assert not target.parent.exists()


def test_directory_target_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        plot_timeline(_sample(), tmp_path)


# -- needs matplotlib --------------------------------------------------------------------------


@pytest.fixture
def mpl() -> Any:
    return pytest.importorskip("matplotlib")


def test_sample_renders_a_png(mpl: Any, tmp_path: Path) -> None:
    target = tmp_path / "run.png"
    plot_timeline(_sample(), target)
    data = target.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    width, height = _png_size(data)
    assert 800 <= width <= 2500 and 500 <= height <= 1600
    assert width > height
    assert _leftovers(tmp_path) == ["run.png"]  # no temporary file left behind
    assert target.stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600


def test_string_path_and_overwrite(mpl: Any, tmp_path: Path) -> None:
    target = tmp_path / "run.png"
    target.write_bytes(b"old")
    target.chmod(0o640)
    plot_timeline(_sample(), str(target))
    assert target.stat().st_mode & 0o777 == 0o640
    assert target.read_bytes()[:8] == PNG_SIGNATURE
    assert _leftovers(tmp_path) == ["run.png"]


def test_rendering_is_deterministic(mpl: Any, tmp_path: Path) -> None:
    plot_timeline(_sample(), tmp_path / "a.png")
    plot_timeline(_sample(), tmp_path / "b.png")
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()


def test_empty_timeline_renders(mpl: Any, tmp_path: Path) -> None:
    record = _sample()
    record.update(timeline=[], events=[], sent=0, acked=0,
                  availability={"seconds": 0, "unavailable_windows": []},
                  latency_ms={"p50": None, "p99": None, "p999": None, "max": None})
    target = tmp_path / "empty.png"
    plot_timeline(record, target)
    width, height = _png_size(target.read_bytes())
    assert width > 0 and height > 0


def test_minimal_record_renders(mpl: Any, tmp_path: Path) -> None:
    """Only what the plot needs: windows come from the timeline states."""
    record = {"topic": "t", "sent": 3, "acked": 1, "lost": 2, "duplicated": 0,
              "reordered": 0,
              "timeline": [{"second": 0, "sent": 3, "acked": 1, "failed": 1,
                            "indeterminate": 1, "ack_latency_max_ms": 4.0,
                            "state": "available"},
                           {"second": 1, "sent": 0, "acked": 0, "failed": 0,
                            "indeterminate": 0, "ack_latency_max_ms": None,
                            "state": "unavailable"}]}
    target = tmp_path / "min.png"
    plot_timeline(record, target)
    assert target.read_bytes()[:8] == PNG_SIGNATURE


def test_busy_run_renders(mpl: Any, tmp_path: Path) -> None:
    """A long run with failures, many leader changes and a wide latency range (log axis)."""
    record = _sample()
    record["timeline"] = [
        {"second": s, "sent": 1000, "acked": 0 if 50 <= s < 55 else 1000,
         "failed": 30 if s == 55 else 0, "indeterminate": 5 if s == 56 else 0,
         "ack_latency_max_ms": None if 50 <= s < 55 else (4000.0 if s == 56 else 3.0),
         "state": "unavailable" if 50 <= s < 55 else "available"}
        for s in range(240)]
    record["availability"] = {"unavailable_windows": [{"start": 50, "seconds": 5}]}
    record["events"] = [
        {"at_s": 10.0 + 2 * i, "kind": kind, "detail": f"leader {i} -> {i + 1}",
         "partition": i % 3}
        for i in range(40) for kind in ("fault", "leader-change", "isr-change", "note")]
    record.update(lost=12, duplicated=3, verdict="fail")
    target = tmp_path / "busy.png"
    plot_timeline(record, target)
    assert target.read_bytes()[:8] == PNG_SIGNATURE


@pytest.mark.parametrize("breakage", [
    lambda r: r.pop("timeline"),
    lambda r: r.pop("topic"),
    lambda r: r["timeline"][3].pop("sent"),
    lambda r: r["timeline"][3].update(acked="many"),
    lambda r: r.update(timeline="not a list"),
    lambda r: r["events"][0].pop("at_s"),
    lambda r: r["availability"]["unavailable_windows"][0].pop("seconds"),
])
def test_malformed_record_is_an_input_error_and_leaves_no_file(
        mpl: Any, tmp_path: Path, breakage: Any) -> None:
    record = copy.deepcopy(_sample())
    breakage(record)
    target = tmp_path / "run.png"
    with pytest.raises(InputError, match=r"^cannot plot: malformed probe record \("):
        plot_timeline(record, target)
    assert _leftovers(tmp_path) == []


def test_failed_draw_keeps_the_old_file_and_leaves_no_temp(
        mpl: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib.figure import Figure

    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("drawing failed")

    monkeypatch.setattr(Figure, "savefig", boom)
    target = tmp_path / "run.png"
    target.write_bytes(b"previous plot")
    with pytest.raises(RuntimeError, match="drawing failed"):
        plot_timeline(_sample(), target)
    assert target.read_bytes() == b"previous plot"
    assert _leftovers(tmp_path) == ["run.png"]


def test_failed_write_leaves_no_temp(mpl: Any, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(src: Any, dst: Any) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(InputError, match="cannot write: Permission denied"):
        plot_timeline(_sample(), tmp_path / "run.png")
    assert _leftovers(tmp_path) == []


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="needs /dev/null")
def test_non_regular_target_is_written_in_place(mpl: Any) -> None:
    plot_timeline(_sample(), "/dev/null")
    assert Path("/dev/null").exists() and not Path("/dev/null").is_file()
