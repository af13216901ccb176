"""Atomic writes (skelanim.io.atomic): all or nothing, no temporary files left, ordinary permissions."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np
import pytest

from skelanim.io.atomic import atomic_open, atomic_path


def test_text_and_binary_writes_replace_the_target(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "out.txt"
    with atomic_open(target) as handle:
        handle.write("é\nline\n")
    assert target.read_bytes() == "é\nline\n".encode()  # UTF-8, \n newlines
    with atomic_open(target, "wb") as handle:
        handle.write(b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    assert os.listdir(target.parent) == ["out.txt"]


def test_a_failed_write_keeps_the_old_file_and_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="boom"), atomic_open(target) as handle:
        handle.write("half")
        raise RuntimeError("boom")
    with pytest.raises(RuntimeError, match="boom"), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_atomic_path_keeps_the_suffix_for_writers_that_want_a_name(tmp_path: Path) -> None:
    target = tmp_path / "arrays.npz"
    with atomic_path(target) as tmp:
        assert tmp.suffix == ".npz" and tmp.parent == tmp_path
        np.savez(tmp, a=np.arange(3))  # np.savez would add .npz to a name without it
    assert np.load(target)["a"].tolist() == [0, 1, 2]
    assert os.listdir(tmp_path) == ["arrays.npz"]


def test_permissions_follow_the_umask_not_mkstemp(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        with atomic_open(tmp_path / "a.txt") as handle:
            handle.write("x")
        (tmp_path / "b.txt").write_text("x")  # what an ordinary open() gives
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == stat.S_IMODE((tmp_path / "b.txt").stat().st_mode)
