"""Second-pass mutation audit of ``skelanim.io``: behaviour no earlier test pinned down.

Each test compares with a source independent of the code under test: hand values worked out in comments,
scipy's ``Rotation`` for Euler angles, Python's own ``float``/``%`` formatting, plain-text parsing of the written
files.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from scipy.spatial.transform import Rotation

from skelanim.core.rotations import axis_angle_to_quat, quat_multiply
from skelanim.errors import FormatError, ShapeError, SkeletonError
from skelanim.io import bvh
from skelanim.io.common import nominal_fps

# ------------------------------------------------------------------------------------------------ helpers


def _one_joint(rows: list[tuple[float, ...]], channels: str = "Zrotation Xrotation Yrotation",
               frame_time: str = "0.0333333") -> str:
    """A one-joint BVH file: a root with position channels and ``channels``, one frame line per row."""
    count = 3 + len(channels.split())
    return ("HIERARCHY\nROOT Hips\n{\n\tOFFSET 0 0 0\n"
            f"\tCHANNELS {count} Xposition Yposition Zposition {channels}\n"
            "\tEnd Site\n\t{\n\t\tOFFSET 0 1 0\n\t}\n}\n"
            f"MOTION\nFrames: {len(rows)}\nFrame Time: {frame_time}\n"
            + "".join("0 0 0 " + " ".join(repr(float(v)) for v in row) + "\n" for row in rows))


def _frame_rows(text: str) -> np.ndarray:
    """The MOTION values of BVH text, parsed with Python's ``float`` (not the library's parser)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Frame Time")) + 1
    return np.array([[float(v) for v in line.split()] for line in lines[start:] if line.strip()])


def _turn_root_about_z(motion, degrees: float, frames: slice):
    """``motion`` with ``Rz(degrees)`` put before the root rotation on ``frames``: for a ``ZXY`` root
    (``Rz(a) Rx(b) Ry(c)``) the angles become ``(a + degrees, b, c)`` in closed form."""
    dq = axis_angle_to_quat(torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64), math.radians(degrees))
    rotations = motion.rotations.clone()
    part = rotations[frames, 0]
    rotations[frames, 0] = quat_multiply(dq.expand_as(part), part)
    return motion.copy(rotations=rotations)


def _same_rotation(euler_a: np.ndarray, euler_b: np.ndarray, order: str) -> bool:
    """Whether two rows of intrinsic Euler angles (degrees) give the same rotations, by scipy."""
    a = Rotation.from_euler(order, euler_a, degrees=True)
    b = Rotation.from_euler(order, euler_b, degrees=True)
    return bool(np.all((a.inv() * b).magnitude() < 1e-7))


# -------------------------------------------------------------- BVH writing: edited frames after read ones


@pytest.mark.parametrize(
    ("rows", "expected_edited"),
    [
        # the file wraps at +-180: frames 3-5 are (-178, -174, -170) + 2 degrees about z, which continue
        # the last frame read unchanged (179) as 184, 188, 192, not -176 (a jump) nor -176 - 360
        ([(170, 10, 20), (175, 10, 20), (179, 10, 20), (-178, 10, 20), (-174, 10, 20), (-170, 10, 20)],
         [(184, 10, 20), (188, 10, 20), (192, 10, 20)]),
        # the file's angles are beyond 360 (z) and beyond 90 (x, the other Euler solution): frames 3-5 are
        # (409, 123, 20), (412, 124, 20), (415, 125, 20) + 1 degree about z
        ([(400 + 3 * k, 120 + k, 20) for k in range(6)], [(410, 123, 20), (413, 124, 20), (416, 125, 20)]),
    ],
)
def test_frames_edited_after_read_ones_continue_the_files_solution_and_turns(rows, expected_edited) -> None:
    motion = bvh.loads(_one_joint(rows))
    turn = 2.0 if rows[0][0] == 170 else 1.0
    written = _frame_rows(bvh.dumps(_turn_root_about_z(motion, turn, slice(3, None))))
    np.testing.assert_allclose(written[:3, 3:], np.array(rows[:3], dtype=float), atol=1e-6)  # unchanged: as read
    np.testing.assert_allclose(written[3:, 3:], np.array(expected_edited, dtype=float), atol=1e-6)
    edited_file = np.array(rows, dtype=float)
    edited_file[3:, 0] += turn
    assert _same_rotation(written[:, 3:], edited_file, "ZXY")  # scipy: the rotations written are the edited ones


# ------------------------------------------------------------------------------ BVH writing: tiny figures


@pytest.mark.parametrize(
    ("height", "decimals"),
    # decimals = max(6, ceil(6 - log10(height))), at most 17: 1e-6 of the rest height kept
    [(2.0, 6), (0.5, 7), (0.01, 8), (2e-9, 15), (1e-14, 17)],
)
def test_a_figure_under_one_unit_tall_gets_the_decimals_that_keep_a_millionth_of_it(height, decimals) -> None:
    text = _one_joint([(0.0, 0.0, 0.0)]).replace("\t\tOFFSET 0 1 0", f"\t\tOFFSET {height!r} {height!r} {height!r}")
    motion = bvh.loads(text)  # rest height: the End Site's offset along any axis
    root = torch.tensor([[height / 3.0, -height / 7.0, 0.0]], dtype=torch.float64)
    line = bvh.dumps(motion.copy(root_positions=root)).splitlines()[-1].split()
    assert all(len(v.partition(".")[2]) == decimals for v in line)
    # Python's own "%.{d}f" of the values written (the angles are 0)
    assert line[:2] == [f"{height / 3.0:.{decimals}f}", f"{-height / 7.0:.{decimals}f}"]


# --------------------------------------------------------------------------------- BVH writing: End Sites


@pytest.mark.parametrize(
    ("label", "line"),
    [
        ("End Site Head_End", "End Site Head_End"),  # as read from a file: kept
        ("END SITE Head_End", "End Site Head_End"),  # keywords in any case: kept, canonical keywords
        ("End Foo Bar", "End Site"),  # no "End Site" before the name: not a label the reader gives back
        ("Tip of the head", "End Site"),  # a label from elsewhere: a plain End Site
        ("End Site", "End Site"),
    ],
)
def test_an_end_site_label_is_written_only_where_it_reads_back_as_one(label, line) -> None:
    motion = bvh.loads(_one_joint([(0.0, 0.0, 0.0)]))
    labelled = motion.copy(metadata={**motion.metadata, "bvh_end_site_labels": {"Hips": label}})
    lines = [row.strip() for row in bvh.dumps(labelled).splitlines()]
    assert lines[lines.index("OFFSET 0 1 0") - 2] == line  # the End Site line, then "{", then its OFFSET


def test_only_named_end_sites_are_recorded_as_labels() -> None:
    plain = bvh.loads(_one_joint([(0.0, 0.0, 0.0)]))
    assert "bvh_end_site_labels" not in plain.metadata  # "End Site": nothing to keep
    named = bvh.loads(_one_joint([(0.0, 0.0, 0.0)]).replace("End Site", "End Site Head_End"))
    assert named.metadata["bvh_end_site_labels"] == {"Hips": "End Site Head_End"}


def test_a_negative_zero_offset_is_written_as_zero() -> None:
    motion = bvh.loads(_one_joint([(0.0, 0.0, 0.0)]).replace("\t\tOFFSET 0 1 0", "\t\tOFFSET -0 1 -0.0"))
    assert str(motion.skeleton.end_sites[0][0].item()) == "-0.0"  # read as IEEE -0.0, as float("-0") is
    text = bvh.dumps(motion)
    assert "\t\tOFFSET 0 1 0\n" in text and "-0" not in text


# ------------------------------------------------------------------- BVH writing: what channels cannot hold

_TWO_JOINTS = (
    "HIERARCHY\nROOT Hips\n{\n\tOFFSET 0 0 0\n\tCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation\n"
    "\tJOINT Arm\n\t{\n\t\tOFFSET 1 2 3\n\t\tCHANNELS {count} {arm}\n"
    "\t\tEnd Site\n\t\t{{\n\t\t\tOFFSET 0 1 0\n\t\t}}\n\t}}\n}}\nMOTION\nFrames: 3\nFrame Time: 0.04\n"
)


def _two_joints(arm: str, values: str) -> str:
    head = _TWO_JOINTS.replace("{count}", str(len(arm.split()))).replace("{arm}", arm)
    return head.replace("{{", "{").replace("}}", "}") + "".join(values + "\n" for _ in range(3))


@pytest.mark.parametrize(("degrees", "warned"), [(1.0, True), (0.01, True), (1e-7, False)])
def test_a_turn_about_an_axis_a_two_channel_joint_lacks_is_warned_about_from_half_a_printed_unit(degrees, warned):
    motion = bvh.loads(_two_joints("Xrotation Yrotation", "0 0 0 0 0 0 10 20"))
    rotations = motion.rotations.clone()
    # Rx(10) Ry(20) Rz(degrees): the Z part is what the Xrotation Yrotation channels cannot hold
    rotations[:, 1] = torch.from_numpy(Rotation.from_euler("XYZ", [10, 20, degrees], degrees=True).as_quat(
        scalar_first=True)).expand(3, 4)
    edited = motion.copy(rotations=rotations)
    if warned:
        with pytest.warns(UserWarning, match=rf"joint 'Arm' turns about an axis .* by up to {degrees:.3g} degrees"):
            bvh.dumps(edited)
    else:  # below half a printed unit (5e-7 degrees): nothing lost that the file could show
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            bvh.dumps(edited)


@pytest.mark.parametrize("shift", [0.5, 1e-3])
def test_an_animated_translation_a_joint_has_no_channel_for_is_warned_about(shift) -> None:
    motion = bvh.loads(_two_joints("Yposition Zrotation Xrotation Yrotation", "0 0 0 0 0 0 5 0 0 0"))
    assert motion.joint_translations is not None
    np.testing.assert_array_equal(motion.joint_translations[:, 1].numpy(), [[1.0, 5.0, 3.0]] * 3)  # y replaced
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bvh.dumps(motion)  # x and z are still the OFFSET's: nothing is lost
    moved = motion.joint_translations.clone()
    moved[:, 1, 0] += shift  # x, which no Xposition channel holds (1e-3: printed as 0.001000, not lost silently)
    with pytest.warns(UserWarning, match="joint 'Arm' lacks position channels for its animated translation"):
        text = bvh.dumps(motion.copy(joint_translations=moved))
    assert _frame_rows(text)[:, 6].tolist() == [5.0, 5.0, 5.0]  # the Yposition channel still written


def test_a_joint_name_with_a_delete_character_is_refused() -> None:
    motion = bvh.loads(_one_joint([(0.0, 0.0, 0.0)]))
    sk = motion.skeleton
    named = motion.copy(skeleton=type(sk)(["Hi\x7fps"], sk.parents, sk.offsets, sk.channels, sk.end_sites))
    with pytest.raises(SkeletonError, match="control characters"):
        bvh.dumps(named)
    # the reader refuses the character too (so such a file could not be read back)
    with pytest.raises(FormatError, match="control character"):
        bvh.loads(_one_joint([(0.0, 0.0, 0.0)]).replace("ROOT Hips", "ROOT Hi\x7fps"))


@pytest.mark.parametrize("y", [100.0, -150.0, 60.0])
def test_a_two_channel_joint_is_written_with_the_solution_its_two_angles_hold(y) -> None:
    """Of the two XYZ solutions of Rx(0) Ry(y), (0, y, 0) and (180, 180 - y, 180), only the first has the third
    (unwritten) angle 0; the principal one has the middle angle in [-90, 90], so it is the second for |y| > 90."""
    motion = bvh.loads(_two_joints("Xrotation Yrotation", f"0 0 0 0 0 0 0 {y!r}"))
    fresh = motion.copy(metadata={k: v for k, v in motion.metadata.items() if k != "bvh_values"})  # no file angles
    written = _frame_rows(bvh.dumps(fresh))[:, 6:8]
    np.testing.assert_allclose(written, [[0.0, y]] * 3, atol=1e-6)


# ------------------------------------------------------------------------------------- frame time and fps


def test_a_frame_time_two_whole_rates_round_to_is_taken_as_written() -> None:
    """0.000707 s stands for 1414 and 1415 fps alike (1 / 1414 = 0.00070721, 1 / 1415 = 0.00070671, both within
    half a unit of its 6th decimal; the NTSC rates 1415 and 1416 * 1000 / 1001 too): no one rate, so 1 / 0.000707."""
    assert nominal_fps(0.000707) == 1.0 / 0.000707
    assert bvh.loads(_one_joint([(0.0, 0.0, 0.0)], frame_time="0.000707")).fps == 1.0 / 0.000707


@pytest.mark.parametrize("written", ["0.0000416667", "4.16667e-05", "4.16667E-5"])
def test_a_frame_time_in_exponent_form_counts_the_digits_of_its_value(written) -> None:
    """4.16667e-05 has its last digit in the 10th decimal place (repr shows "4.16667e-05"): 1 / 24000 =
    4.1666667e-05 rounds to it, and no other whole rate does (1 / 23999 and 1 / 24001 are 1.7e-9 away), so 24 000 fps,
    not 1 / 4.16667e-05 = 23999.98."""
    assert nominal_fps(float(written)) == 24000.0
    assert bvh.loads(_one_joint([(0.0, 0.0, 0.0)], frame_time=written)).fps == 24000.0


@pytest.mark.parametrize(("fps", "refused"), [(1.0 / 7200.0, True), (1.0 / 3600.0, False), (2e6, True), (1e6, False)])
def test_a_rate_whose_frame_time_the_reader_refuses_is_not_written(fps, refused) -> None:
    """The reader takes a Frame Time from 1e-6 s to 3600 s (an hour): 1 / 7200 fps (two hours a frame) and 2e6 fps
    (0.5 microseconds) are refused before anything is written; the limits themselves are written and read back."""
    motion = bvh.loads(_one_joint([(0.0, 0.0, 0.0)])).copy(fps=fps)
    if refused:
        with pytest.raises(ShapeError, match="fps cannot be written"):
            bvh.dumps(motion)
    else:
        assert bvh.loads(bvh.dumps(motion)).fps == pytest.approx(fps, rel=1e-12)


# ------------------------------------------------------------------------- BVH reading: names and figures


def test_a_name_used_three_times_gets_the_first_free_suffixes() -> None:
    chain = ("HIERARCHY\nROOT Bone\n{\n OFFSET 0 0 0\n CHANNELS 3 Zrotation Xrotation Yrotation\n"
             " JOINT Bone.001\n {\n  OFFSET 0 1 0\n  CHANNELS 0\n"
             "  JOINT Bone\n  {\n   OFFSET 0 1 0\n   CHANNELS 0\n"
             "   JOINT Bone\n   {\n    OFFSET 0 1 0\n    CHANNELS 0\n    End Site\n    {\n     OFFSET 0 1 0\n    }\n"
             "   }\n  }\n }\n}\nMOTION\nFrames: 1\nFrame Time: 0.1\n0 0 0\n")
    with pytest.warns(UserWarning, match="2 joint name"):
        motion = bvh.loads(chain)
    # "Bone" again at line 10: ".001" is taken (line 6), so ".002"; at line 14: ".003"
    assert motion.skeleton.names == ["Bone", "Bone.001", "Bone.002", "Bone.003"]
    assert motion.metadata["bvh_renamed_joints"] == {"Bone.002": 2, "Bone.003": 2}  # the line of the first "Bone"


_FIGURES = (
    "HIERARCHY\nROOT Actor\n{\n\tOFFSET 1 0 0\n\tCHANNELS 3 Xposition Yposition Zposition\n"
    "\tEnd Site Actor_Top\n\t{\n\t\tOFFSET 0 2 0\n\t}\n}\n"
    "ROOT Prop\n{\n\tOFFSET -1 0 0\n\tCHANNELS 3 Xposition Yposition Zposition\n"
    "\tJOINT Lid\n\t{\n\t\tOFFSET 0 0.5 0\n\t\tCHANNELS 0\n\t\tEnd Site Lid_Top\n\t\t{\n\t\t\tOFFSET 0 0.25 0\n\t\t}\n\t}\n}\n"
    "MOTION\nFrames: 1\nFrame Time: 0.1\n1 0 0 -1 0 0\n"
)


def test_end_sites_of_several_figures_stay_on_their_joints() -> None:
    motion = bvh.loads(_FIGURES)
    sk = motion.skeleton
    assert sk.names == ["Scene", "Actor", "Prop", "Lid"]  # the scene joint first, one index before the file's
    ends = {sk.names[j]: v.tolist() for j, v in sk.end_sites.items()}
    assert ends == {"Actor": [0.0, 2.0, 0.0], "Lid": [0.0, 0.25, 0.0]}
    assert motion.metadata["bvh_end_site_labels"] == {"Actor": "End Site Actor_Top", "Lid": "End Site Lid_Top"}
    # world positions of the End Sites: Actor at x = 1, its top 2 up; Lid 0.5 above Prop (x = -1), its top 0.25 more
    tips = motion.positions(end_sites=True)[0, len(sk.names):].tolist()
    assert sorted(tips) == [[-1.0, 0.75, 0.0], [1.0, 2.0, 0.0]]
    text = bvh.dumps(motion)
    assert "\tEnd Site Lid_Top\n" in text and "End Site Actor_Top\n" in text


def test_the_angles_read_cannot_be_edited_in_place() -> None:
    """``metadata["bvh_values"]`` is the array the rotations are still made from: an edit in place would turn the
    motion unseen (and pick the writer's Euler solutions from numbers the file never had), so it is read-only."""
    motion = bvh.loads(_one_joint([(10.0, 20.0, 30.0)]))
    values = motion.metadata["bvh_values"]
    np.testing.assert_array_equal(values, [[0.0, 0.0, 0.0, 10.0, 20.0, 30.0]])
    with pytest.raises(ValueError, match="read-only"):
        values[0, 3] = 99.0
    expected = Rotation.from_euler("ZXY", [10.0, 20.0, 30.0], degrees=True).as_quat(scalar_first=True)
    q = motion.rotations[0, 0].numpy()
    np.testing.assert_allclose(q * np.sign(q @ expected), expected, atol=1e-12)


# ------------------------------------------------------------------------------- BVH numbers: signed zeros


def test_a_negative_zero_with_a_far_exponent_reads_as_float_reads_it() -> None:
    """Zeros whose decimal exponent is beyond +-22 ("-0e-30", 30 zero decimals) are read apart from the fast path:
    their sign must stay, as ``float`` keeps it (bit for bit, the reader's promise)."""
    from skelanim.io.bvh_numbers import parse_motion_values

    tokens = ["-0e-30", "-0.0e99", "-0." + "0" * 30, "0e-30", "-0E+40", "-0.0"]
    values, extra = parse_motion_values(" ".join(tokens).encode() + b"\n", first_line=1, channels=len(tokens),
                                        frames=1, path="zeros")
    assert extra == 0
    assert np.signbit(values[0]).tolist() == [math.copysign(1.0, float(t)) < 0 for t in tokens]
    assert np.signbit(values[0]).tolist() == [True, True, True, False, True, True]  # by hand: the minus signs
    motion = bvh.loads(_one_joint([(0.0, 0.0, 0.0)]).replace("0 0 0 0.0 0.0 0.0\n", "0 0 0 -0e-30 -0.0e99 0.0\n"))
    assert np.signbit(motion.metadata["bvh_values"][0, 3:]).tolist() == [True, True, False]
