"""A BVH root whose channels cannot hold what an op did to it gets the channels it needs when written
(``io.bvh_channels.with_root_channels``; found by a read-only review: ``convert --to-origin`` on a file whose root had
only rotation channels wrote the pelvis where it was, and ``--face`` on a channel-less ``Reference`` root wrote it
unturned, both reporting success).

The reference for each written file is the motion in memory: its world positions (forward kinematics of the op's
result) must come back from the file. The text checks read the written lines by hand."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import skelanim
from skelanim import Motion, ops

LEGS_AND_HEAD = """
  JOINT Spine
  {{
    OFFSET 0 10 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    JOINT Head
    {{
      OFFSET 0 10 0
      CHANNELS 3 Zrotation Xrotation Yrotation
      End Site
      {{
        OFFSET 0 5 0
      }}
    }}
  }}
  JOINT LeftUpLeg
  {{
    OFFSET 5 0 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    JOINT LeftFoot
    {{
      OFFSET 0 -40 0
      CHANNELS 3 Zrotation Xrotation Yrotation
      End Site
      {{
        OFFSET 0 0 5
      }}
    }}
  }}
  JOINT RightUpLeg
  {{
    OFFSET -5 0 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    JOINT RightFoot
    {{
      OFFSET 0 -40 0
      CHANNELS 3 Zrotation Xrotation Yrotation
      End Site
      {{
        OFFSET 0 0 5
      }}
    }}
  }}
}}
MOTION
Frames: 3
Frame Time: 0.0333333
{frames}
"""

#: Spine, head, two legs, two feet: 18 channels a frame below the root (a walk-like swing of the legs).
BODY_VALUES = ["0 2 0 0 -3 0 20 0 0 -10 0 0 -20 0 0 10 0 0", "0 2 0 0 -3 0 10 0 0 -5 0 0 -10 0 0 5 0 0",
               "0 2 0 0 -3 0 0 0 0 0 0 0 0 0 0 0 0 0"]  # fmt: skip


def bvh_file(folder: Path, root: str, root_values: list[str]) -> Path:
    """A small biped whose ROOT block header is ``root`` (name, OFFSET and CHANNELS lines), and its file."""
    frames = "\n".join(f"{r} {b}".strip() for r, b in zip(root_values, BODY_VALUES, strict=True))
    path = folder / "body.bvh"
    path.write_text("HIERARCHY\n" + root + LEGS_AND_HEAD.format(frames=frames))
    return path


ROTATION_ONLY_ROOT = "ROOT Hips\n{\n  OFFSET 3 50 7\n  CHANNELS 3 Zrotation Xrotation Yrotation"
POSITION_ONLY_ROOT = "ROOT Hips\n{\n  OFFSET 0 0 0\n  CHANNELS 3 Xposition Yposition Zposition"


def saved_and_read(motion: Motion, path: Path) -> Motion:
    """``motion`` written to ``path`` with no warning at all, and read back."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        skelanim.save(motion, path)
    return skelanim.load(path)


def same_positions(written: Motion, expected: Motion) -> None:
    """World positions (joints matched by name) equal to the BVH's 6 decimals."""
    order = [written.skeleton.names.index(n) for n in expected.skeleton.names]
    np.testing.assert_allclose(written.positions()[:, order].numpy(), expected.positions().numpy(), atol=2e-5)


def root_lines(path: Path) -> tuple[str, list[str]]:
    """The written root's CHANNELS line and its frames' lines."""
    lines = path.read_text().splitlines()
    channels = next(line.strip() for line in lines if line.strip().startswith("CHANNELS"))
    return channels, lines[lines.index("MOTION") + 3:]


def test_a_rotation_only_root_moved_to_the_origin_gets_position_channels(tmp_path: Path) -> None:
    """``to_origin`` moves a root that has only rotation channels: written with X/Y/Z position channels first, its
    rotation channels kept in their order, and each frame's rotation numbers as the file had them (270 degrees
    stays 270, not -90: the values read move with their columns); the other joints' numbers unchanged too."""
    source = bvh_file(tmp_path, ROTATION_ONLY_ROOT, ["270 0 0", "270 0 5", "270 0 10"])
    moved = ops.to_origin(skelanim.load(source))
    assert float(moved.root_positions.abs().max()) > 1.0  # the op did move the root off its OFFSET (3 50 7)
    out = tmp_path / "moved.bvh"
    same_positions(saved_and_read(moved, out), moved)
    channels, frames = root_lines(out)
    assert channels == "CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation"
    for i, (line, rotation, body) in enumerate(zip(frames, ["270 0 0", "270 0 5", "270 0 10"], BODY_VALUES,
                                                   strict=True)):
        numbers = [float(v) for v in line.split()]
        np.testing.assert_allclose(numbers[:3], moved.root_positions[i].numpy(), atol=1e-6)
        assert numbers[3:6] == [float(v) for v in rotation.split()]
        assert numbers[6:] == [float(v) for v in body.split()]


def test_a_channel_less_reference_root_turned_and_moved_gets_six_channels(tmp_path: Path) -> None:
    """A ``Reference`` root without channels above a six-channel ``Hips`` (a common exporter layout), turned to
    face +X and put at the origin: the Reference is written with three position and three rotation channels and
    the file holds the turned, moved body."""
    hips = ("ROOT Reference\n{\n  OFFSET 10 0 20\n  CHANNELS 0\n  JOINT Hips\n  {\n    OFFSET 0 0 0\n"
            "    CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation\n")
    # the body re-indented one level, under Hips (its last brace closes Hips), then the Reference's brace
    body = LEGS_AND_HEAD.split("MOTION")[0].replace("{{", "{").replace("}}", "}").replace("\n  ", "\n    ")
    frames = "\n".join(f"5 90 5 0 {10 * i} 0 {b}" for i, b in enumerate(BODY_VALUES))
    path = tmp_path / "ref.bvh"
    path.write_text(f"HIERARCHY\n{hips}{body}}}\nMOTION\nFrames: 3\nFrame Time: 0.0333333\n{frames}\n")
    read = skelanim.load(path)
    assert read.skeleton.names[0] == "Reference" and read.skeleton.channels[0] == ()
    edited = ops.to_origin(ops.face_forward(read, forward="+x"))
    out = tmp_path / "edited.bvh"
    back = saved_and_read(edited, out)
    same_positions(back, edited)
    assert back.skeleton.channels[0] == ("Xposition", "Yposition", "Zposition", "Zrotation", "Xrotation", "Yrotation")
    # the check has teeth: the body as read faces elsewhere and stands off the origin
    assert float((edited.positions() - read.positions()).abs().max()) > 5.0


def test_a_position_only_root_turned_gets_rotation_channels_after_its_own(tmp_path: Path) -> None:
    """A root with position channels only, turned by ``face_forward``: rotation channels Z X Y follow its position
    channels."""
    source = bvh_file(tmp_path, POSITION_ONLY_ROOT, ["0 90 0", "0 90 2", "0 90 4"])
    turned = ops.face_forward(skelanim.load(source), forward="+x")
    out = tmp_path / "turned.bvh"
    same_positions(saved_and_read(turned, out), turned)
    assert root_lines(out)[0] == "CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation"


@pytest.mark.parametrize(("shift", "added"), [(4e-7, False), (6e-7, True)])
def test_channels_are_added_only_for_a_move_the_file_can_show(tmp_path: Path, shift: float, added: bool) -> None:
    """The threshold is half a printed unit (6 decimals: 5e-7): a root 4e-7 off its OFFSET would be written as the
    OFFSET anyway, so the layout stays; 6e-7 is a move the numbers show, so the channels come."""
    motion = skelanim.load(bvh_file(tmp_path, ROTATION_ONLY_ROOT, ["0 0 0", "0 0 5", "0 0 10"]))
    nudged = motion.copy(root_positions=motion.root_positions + torch.tensor([0.0, 0.0, shift], dtype=torch.float64))
    out = tmp_path / "nudged.bvh"
    saved_and_read(nudged, out)
    assert (root_lines(out)[0].startswith("CHANNELS 6")) == added


def test_a_root_that_was_not_moved_keeps_its_layout_and_its_text(tmp_path: Path) -> None:
    """Read and written with nothing done: the root keeps its three rotation channels and the file its numbers."""
    source = bvh_file(tmp_path, ROTATION_ONLY_ROOT, ["270 0 0", "270 0 5", "270 0 10"])
    out = tmp_path / "same.bvh"
    saved_and_read(skelanim.load(source), out)
    channels, frames = root_lines(out)
    assert channels == "CHANNELS 3 Zrotation Xrotation Yrotation"
    original = source.read_text().splitlines()
    expected = original[original.index("MOTION") + 3:]
    assert [[float(v) for v in line.split()] for line in frames] == [[float(v) for v in line.split()]
                                                                      for line in expected]
