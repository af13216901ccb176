"""``skelanim.io``'s public surface: ``load_positions(end_sites=)``, ``from_motion``'s keyword, ``__all__``."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

import skelanim
import skelanim.io
from skelanim.data.samples import sample_path
from skelanim.errors import SkelanimError
from skelanim.io.positions import JointPositions


def test_load_positions_of_a_motion_file_with_end_sites() -> None:
    path = sample_path("walk")
    motion = skelanim.load(path)
    got = skelanim.load_positions(path, end_sites=True)
    expected = JointPositions.from_motion(motion, end_sites=True)
    assert got.names == expected.names
    np.testing.assert_array_equal(got.positions, expected.positions)
    np.testing.assert_array_equal(got.parents, expected.parents)
    plain = skelanim.load_positions(path)
    assert got.num_joints == plain.num_joints + len(motion.skeleton.end_sites) > plain.num_joints
    assert skelanim.load_positions(path, end_sites=False).names == plain.names


def test_load_positions_of_a_positions_file_refuses_end_sites(tmp_path) -> None:
    target = tmp_path / "walk.npz"
    skelanim.save(skelanim.load(sample_path("walk")), target, end_sites=True)
    assert skelanim.load_positions(target, end_sites=False).num_joints == skelanim.load_positions(target).num_joints
    with pytest.raises(SkelanimError, match="end_sites") as info:
        skelanim.load_positions(target, end_sites=True)
    assert "\n" not in str(info.value)


def test_from_motion_end_sites_is_keyword_only_positional_still_works_with_a_warning() -> None:
    motion = skelanim.load(sample_path("walk"))
    expected = JointPositions.from_motion(motion, end_sites=True)
    with pytest.warns(DeprecationWarning, match="end_sites="):
        got = JointPositions.from_motion(motion, True)  # type: ignore[misc]
    assert got.names == expected.names
    np.testing.assert_array_equal(got.positions, expected.positions)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert JointPositions.from_motion(motion).num_joints == motion.skeleton.num_joints
    import inspect

    param = inspect.signature(JointPositions.from_motion).parameters["end_sites"]
    assert param.kind is inspect.Parameter.KEYWORD_ONLY


def test_star_import_brings_only_the_public_names() -> None:
    """``from skelanim.io import *`` had brought in os, importlib, Path, Any, ... (no ``__all__``)."""
    script = "from skelanim.io import *\nprint(*sorted(k for k in dir() if not k.startswith('__')))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    names = set(done.stdout.split())
    assert names == set(skelanim.io.__all__)
    assert {"load", "save", "load_positions", "check_save", "MOTION_FORMATS", "POSITION_FORMATS"} <= names
    assert not names & {"os", "importlib", "Path", "Any", "ModuleType", "TYPE_CHECKING", "annotations", "Motion"}
    for name in skelanim.io.__all__:
        assert not name.startswith("_") and callable(getattr(skelanim.io, name)) or name.endswith("_FORMATS")


def test_submodules_are_still_reached_without_an_import() -> None:
    script = "import skelanim\nprint(skelanim.io.bvh.__name__, skelanim.io.positions.JointPositions.__name__)"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["skelanim.io.bvh", "JointPositions"]
