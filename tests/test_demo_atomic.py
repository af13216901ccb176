"""``skelanim demo`` on a full disk: one line naming the file that could not be written, exit 2, and no empty
``info.json`` left behind (it was written with a plain ``Path.write_text``)."""

from __future__ import annotations

import builtins
import errno
import io
import os
from pathlib import Path
from typing import Any

import pytest

from skelanim.cli import main
from skelanim.io.atomic import TEMP_MARK


class _FullDisk:
    """A file opened for writing on a full disk: it exists (empty) and every write fails with ENOSPC."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    def write(self, data: Any) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)


def _is_info(file: Any) -> bool:
    """Whether ``file`` (a path to open) is ``info.json`` or a temporary file for it."""
    if isinstance(file, int):
        return False
    name = os.path.basename(os.fsdecode(file))
    return name == "info.json" or (name.startswith(".info" + TEMP_MARK) and name.endswith(".json"))


def test_a_full_disk_at_info_json_is_one_line_naming_it_and_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real_open = builtins.open

    def full_disk_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real_open(file, mode, *args, **kwargs)
        return _FullDisk(handle) if _is_info(file) and any(m in mode for m in "wax+") else handle

    monkeypatch.setattr(builtins, "open", full_disk_open)
    monkeypatch.setattr(io, "open", full_disk_open)  # pathlib's Path.open/write_text call io.open
    out = tmp_path / "demo"
    capsys.readouterr()
    code = main(["demo", "-o", str(out)])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, (code, err)
    assert lines[0].startswith(f"error: {out / 'info.json'}: No space left on device"), lines[0]
    assert "Traceback" not in err and TEMP_MARK not in err
    assert not (out / "info.json").exists()
    assert not out.exists() or list(out.iterdir()) == []  # nor its temporary file
