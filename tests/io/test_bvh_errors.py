"""BVH reader errors: every bad input raises :class:`FormatError` naming the file and the line."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from bvh_text import STD  # tests/helpers
from bvh_text import make_bvh as _make_bvh
from bvh_text import random_values as _values

from skelanim.errors import FormatError
from skelanim.io import bvh
from skelanim.io.bvh_parse import parse_bvh_bytes

# --------------------------------------------------------------------------------------------- errors

_GOOD = _make_bvh(STD, _values(STD, frames=3))


def _line_of(text: str, fragment: str) -> int:
    return text[: text.index(fragment)].count("\n") + 1


def _error(data: str | bytes, name: str = "walk.bvh") -> FormatError:
    with pytest.raises(FormatError) as info:
        bvh.loads(data, name)
    assert type(info.value) is FormatError
    return info.value


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match=r"nope\.bvh.*no such file"):
        bvh.load(tmp_path / "nope.bvh")
    with pytest.raises(FormatError, match="directory"):
        bvh.load(tmp_path)


def test_wrong_value_count_message_names_file_line_frame() -> None:
    lines = _GOOD.split("\n")
    third = len(lines) - 2  # 0-based index of the third frame's line (frame 2)
    lines[third] = " ".join(lines[third].split()[:-1])
    err = _error("\n".join(lines))
    assert str(err) == f"walk.bvh:{third + 1}: expected 15 channel values on frame 2, found 14"
    assert (err.path, err.line) == ("walk.bvh", third + 1)


ERRORS = [  # (name, mutate(text) -> text|bytes, message regex, line of the problem or None for "any")
    ("binary junk", lambda t: bytes(range(256)) * 8, r"expected text, found control character", 1),
    ("random bytes", lambda t: bytes(range(128, 256)) * 8, r"undecodable byte 0x80", 1),
    ("undecodable byte", lambda t: t.replace("Spine", "Sp\udcffine").encode("utf-8", "surrogateescape"),
     r"undecodable byte 0xff", "JOINT Sp"),
    ("NUL in header", lambda t: t.replace("Spine", "Sp\0ine"), r"control character", "JOINT Sp"),
    ("empty file", lambda t: "", r"empty file", 1),
    ("truncated hierarchy", lambda t: t[: t.index("JOINT Head")], r"missing '}'", None),
    ("missing closing brace", lambda t: t.replace("\t\t}\n\t}\n", "\t\t}\n", 1), r"missing '}'", None),
    ("missing opening brace", lambda t: t.replace("JOINT Spine\n\t{", "JOINT Spine"),
     r"expected '\{' after JOINT Spine, found 'OFFSET'", "OFFSET 0.0 10.0"),
    ("unmatched brace", lambda t: t.replace("MOTION", "}\nMOTION"), r"expected MOTION after the hierarchy", None),
    ("unknown channel", lambda t: t.replace("CHANNELS 3 Zrotation Xrotation Yrotation", "CHANNELS 3 Zrotation Wrotation Yrotation", 1),
     r"unknown channel 'Wrotation'", "Wrotation"),
    ("channel count too high", lambda t: t.replace("CHANNELS 3", "CHANNELS 4", 1),
     r"expected 4 channel names .* found 3 then 'JOINT'", "CHANNELS 4"),
    ("channel count too low", lambda t: t.replace("CHANNELS 3", "CHANNELS 2", 1),
     r"found 'Yrotation' \(a channel name: does the CHANNELS count above match the names it lists\?\)", "CHANNELS 2"),
    ("channel count not a number", lambda t: t.replace("CHANNELS 3", "CHANNELS three", 1),
     r"number of channels", "CHANNELS three"),
    ("too many channels", lambda t: t.replace("CHANNELS 3", "CHANNELS 9", 1), r"at most 6 channels", "CHANNELS 9"),
    ("repeated rotation axis", lambda t: t.replace("Zrotation Xrotation Yrotation", "Zrotation Zrotation Yrotation", 1),
     r"no axis twice in a row", "Zrotation Zrotation"),
    ("repeated position", lambda t: t.replace("Xposition Yposition", "Xposition Xposition", 1),
     r"Xposition is listed twice", "Xposition Xposition"),
    ("offset not a number", lambda t: t.replace("OFFSET 0.0 10.0 0.0", "OFFSET 0.0 ten 0.0", 1),
     r"expected the OFFSET y of joint 'Spine' \(a number\), found 'ten'", "OFFSET 0.0 ten"),
    ("offset nan", lambda t: t.replace("OFFSET 0.0 10.0 0.0", "OFFSET 0.0 nan 0.0", 1), r"found 'nan'", "nan"),
    ("offset too short", lambda t: t.replace("OFFSET 0.0 10.0 0.0", "OFFSET 0.0 10.0", 1),
     r"OFFSET z of joint 'Spine'", None),
    ("root inside a joint", lambda t: t.replace("JOINT Spine", "ROOT Spine", 1), r"ROOT inside another joint", "ROOT Spine"),
    ("no MOTION", lambda t: t[: t.index("MOTION")], r"expected MOTION", None),
    ("no Frames line", lambda t: re.sub(r"Frames: \d+\n", "", t), r"'Frames:'", "Frame Time"),
    ("Frames not a number", lambda t: t.replace("Frames: 3", "Frames: 3.5"), r"whole number of frames", "Frames:"),
    ("Frames negative", lambda t: t.replace("Frames: 3", "Frames: -3"), r"whole number of frames", "Frames:"),
    ("empty motion", lambda t: t.replace("Frames: 3", "Frames: 0"), r"empty motion", "Frames:"),
    ("too few frame lines", lambda t: t.replace("Frames: 3", "Frames: 5"),
     r"expected 5 frames as declared by 'Frames:' \(line \d+\), found 3 frame lines", None),
    ("zero frame time", lambda t: t.replace("Frame Time: 0.0333333", "Frame Time: 0"), r"positive 'Frame Time'", "Frame Time"),
    ("negative frame time", lambda t: t.replace("Frame Time: 0.0333333", "Frame Time: -0.1"), r"positive", "Frame Time"),
    ("frame time text", lambda t: t.replace("Frame Time: 0.0333333", "Frame Time: fast"), r"seconds per frame", "Frame Time"),
    ("no frame time", lambda t: t.replace("Frame Time: 0.0333333", "Frame Time:"), r"'Frame Time:' followed by a number", "Frame Time"),
    ("value not a number", lambda t: t[: t.rindex("\n", 0, len(t) - 1)] + "\n" + " ".join(["1"] * 14 + ["x1"]) + "\n",
     r"expected a number, found 'x1'", -1),
    ("value nan", lambda t: t[: t.rindex("\n", 0, len(t) - 1)] + "\n" + " ".join(["nan"] + ["1"] * 14) + "\n",
     r"found 'nan'", -1),
    ("value inf", lambda t: t[: t.rindex("\n", 0, len(t) - 1)] + "\n" + " ".join(["1"] * 7 + ["-inf"] + ["1"] * 7) + "\n",
     r"found '-inf'", -1),
    ("value overflow", lambda t: t[: t.rindex("\n", 0, len(t) - 1)] + "\n" + " ".join(["1"] * 14 + ["1e999"]) + "\n",
     r"out of range: '1e999'", -1),
    ("value with underscore", lambda t: t[: t.rindex("\n", 0, len(t) - 1)] + "\n" + " ".join(["1_0"] * 15) + "\n",
     r"found '1_0'", -1),
    ("two dots", lambda t: t[: t.rindex("\n", 0, len(t) - 1)] + "\n" + " ".join(["1.2.3"] * 15) + "\n",
     r"found '1.2.3'", -1),
    ("junk among the frames", lambda t: t[: t.rindex("\n", 0, len(t) - 1)] + "\nEND\n", r"found 'END'", -1),
    ("control byte in data", lambda t: t[:-3] + "\x01\n", r"expected a number", -1),
]


@pytest.mark.parametrize("mutate, pattern, where", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_bad_input_raises_format_error_with_line(mutate, pattern: str, where) -> None:
    data = mutate(_GOOD)
    err = _error(data)
    assert re.search(pattern, err.message), err.message
    assert str(err).startswith("walk.bvh:")
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    if isinstance(where, str):
        assert err.line == _line_of(text.replace("\udcff", "\ufffd"), where), str(err)
    elif where == -1:  # the last line
        assert err.line == text.rstrip("\n").count("\n") + 1, str(err)
    elif where is not None:
        assert err.line == where, str(err)
    assert err.line is not None


def test_loads_without_path_says_string() -> None:
    with pytest.raises(FormatError, match=r"^<string>:\d+: "):
        bvh.loads(_GOOD.replace("Frames: 3", "Frames: 0"))


def test_error_in_a_later_chunk_of_a_long_file_has_the_right_line() -> None:
    values = np.round(np.random.default_rng(0).uniform(-9, 9, size=(8_000, 15)), 4)
    text = _make_bvh(STD, values)  # ~0.9 MB: several chunks of the vectorised parser
    lines = text.split("\n")
    bad = len(lines) - 1000
    lines[bad] = lines[bad].replace(" ", " 1x ", 1)
    err = _error("\n".join(lines))
    assert err.line == bad + 1 and "'1x'" in err.message
    lines[bad] = " ".join(["2"] * 16)
    err = _error("\n".join(lines))
    frame = bad - _line_of(text, "Frame Time")  # counted from 0
    assert err.line == bad + 1 and f"on frame {frame}, found 16" in err.message


def test_a_position_or_offset_too_large_to_be_one_is_refused_at_its_line() -> None:
    """A finite but absurd length (1e308 would overflow forward kinematics) is a corrupt number; angles are not
    bounded (any is a rotation: the test below reads 2.5e30 degrees)."""
    lines = _GOOD.split("\n")
    frame_line = _line_of(_GOOD, "Frame Time") + 2  # frame 1: the second line after "Frame Time"
    values = lines[frame_line - 1].split()
    lines[frame_line - 1] = " ".join(["1e308", *values[1:]])  # the root's Xposition
    err = _error("\n".join(lines))
    assert err.line == frame_line and "Xposition of Hips on frame 1 is 1e+308" in err.message
    text = _GOOD.replace("OFFSET 0.0 10.0 0.0", "OFFSET 0.0 1e300 0.0", 1)  # Spine's
    err = _error(text)
    assert err.line == _line_of(text, "OFFSET 0.0 1e300") and "OFFSET of Spine" in err.message
    bvh.loads(_GOOD.replace("OFFSET 0.0 10.0 0.0", "OFFSET 0.0 999999999 0.0", 1))  # below the bound: read


def test_an_end_site_offset_too_large_to_be_one_is_refused_at_its_line() -> None:
    """An audit: an End Site ``OFFSET 1.7e308 1.7e308 0`` escaped the check joints' OFFSETs get; it was read, and the
    overflow surfaced later, blamed on an output file. Now refused at the End Site's OFFSET line."""
    lines = _GOOD.split("\n")
    end = next(i for i, line in enumerate(lines) if line.strip() == "End Site") + 2  # 0-based: its OFFSET line
    lines[end] = lines[end].split("OFFSET")[0] + "OFFSET 1.7e308 1.7e308 0"
    err = _error("\n".join(lines))  # the first End Site is Head's (joint 2)
    assert err.line == end + 1
    assert err.message == "OFFSET of the End Site of Head beyond +-1e+09: not a length (a corrupt number?)"
    lines[end] = lines[end].split("OFFSET")[0] + "OFFSET 0 -999999999 0"  # within the bound: read
    assert float(bvh.loads("\n".join(lines)).skeleton.end_sites[2][1]) == -999999999.0


@pytest.mark.parametrize("token", ["12345678901234567", "0.000000000000000001", "1" * 30, "-123456.78901234",
                                   "1e-30", "2.5E+30", "-1234567", "12345678"])
def test_long_and_extreme_numbers_parse_exactly(token: str) -> None:
    values = _values(STD, frames=2).astype(object)
    values[1, 7] = token
    lines = _make_bvh(STD, _values(STD, frames=2)).split("\n")
    lines[-2] = " ".join(str(v) for v in values[1])
    motion = bvh.loads("\n".join(lines))
    parsed = parse_bvh_bytes("\n".join(lines).encode(), "x")
    assert parsed.values[1, 7] == float(token)
    assert math.isfinite(float(motion.rotations.sum()))


def test_json_named_bvh_is_said_to_be_json() -> None:
    """A DeepMimic clip (JSON) named ``.bvh`` had got ``expected ROOT, found '{'``; the reverse case already said
    to rename the file."""
    err = _error('  {"Loop": "wrap", "Frames": [[0.03, 0, 0.9, 0]]}', "clip.bvh")
    assert err.line == 1 and "reads as JSON" in err.message and "name it .txt or .json" in err.message


def test_a_joint_name_used_twice_is_read_with_a_suffix() -> None:
    """A name an earlier joint had was refused ("duplicate joint name"), though pybvh, bvhio and three.js read such
    files (an audit of exporters' files); it is read under the name with the first free suffix, as Blender
    renames, with a warning naming the line, and the joints stand where their offsets put them."""
    text = _GOOD.replace("JOINT Head", "JOINT Spine")
    with pytest.warns(UserWarning, match=r"walk\.bvh:\d+: 1 joint name\(s\) used before .* 'Spine\.001'"):
        motion = bvh.loads(text, "walk.bvh")
    good = bvh.loads(_GOOD, "walk.bvh")
    assert motion.skeleton.names == [("Spine.001" if n == "Head" else n) for n in good.skeleton.names]
    assert motion.metadata["bvh_renamed_joints"] == {"Spine.001": _line_of(text, "JOINT Spine")}
    np.testing.assert_array_equal(motion.positions().numpy(), good.positions().numpy())


def test_a_utf16_file_is_told_so() -> None:
    """A UTF-16 file (Windows tools write them) had been refused as an undecodable byte 0xff; the message says what
    the file is and what to do."""
    error = _error(_GOOD.encode("utf-16"))
    assert error.line == 1 and "UTF-16" in str(error) and "save it as UTF-8" in str(error)
