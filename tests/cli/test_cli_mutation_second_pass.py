"""The CLI's exit codes, option checks and report lines against independent sources, second pass: the rules the
docstrings and ``--help`` texts of ``src/skelanim/cli`` state, hand-computed values, and the library called directly.

Each test here was seen to fail with a small change to ``src/skelanim/cli`` that every other test let pass (a second
mutation audit, after the one of ``test_cli_*_hand_checked.py``): a bound made strict, a check dropped, an exit code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import skelanim
from skelanim.cli import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``skelanim ARGV`` through :func:`skelanim.cli.main`: its exit code, stdout and stderr."""
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_error_line(code: int, out: str, err: str) -> str:
    """The one ``error: ...`` line of a refused command: exit code 2, nothing on stdout, no traceback."""
    lines = err.strip().splitlines()
    assert code == 2 and out == "", (code, out, err)
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


# --- skelanim.cli.main: exit codes and one-line errors ---------------------------------------------------------------


def test_python_running_out_of_memory_is_the_one_line_memory_error_exit_2(monkeypatch, tmp_path: Path, capsys):
    """``main``'s docstring: exit code 2 for bad input (a ``MemoryError`` is the one-line memory advice, as torch's
    allocation failures are), not 1."""

    def fails(*args: object, **kwargs: object) -> None:
        raise MemoryError

    monkeypatch.setattr(skelanim, "load", fails)
    (tmp_path / "a.bvh").write_text("HIERARCHY\n")
    code, out, err = run(["info", str(tmp_path / "a.bvh")], capsys)
    line = one_error_line(code, out, err)
    assert line == "error: not enough memory for this (a smaller --fps, --dpi, --seconds, -n or input?)"


def test_minus_nan_for_a_bounded_option_is_said_to_be_no_number(capsys):
    """``_usage_line``: a bound said of a value that is not a number at all is said as that; Python reads ``-nan``
    as NaN too (``float("-nan")``), so ``--seconds -nan`` is "-nan is not a number", not a bound it would meet."""
    import math

    assert math.isnan(float("-nan"))
    code, out, err = run(["predict", "x.bvh", "-o", "y.bvh", "--seconds", "-nan"], capsys)
    line = one_error_line(code, out, err)
    assert "-nan is not a number" in line and "Input should be" not in line


# --- learn_common: the shared option checks, against their own documented rules ---------------------------------------


@pytest.mark.parametrize("fps, taken", [(1.0, True), (240.0, True), (0.999, False), (240.5, False)])
def test_check_fps_takes_the_closed_range_its_message_names(fps: float, taken: bool):
    """``check_fps`` refuses with "a finite frame rate from 1 to 240": both ends are frame rates it takes."""
    import typer

    from skelanim.cli.learn_common import check_fps

    if taken:
        assert check_fps(fps) == fps
    else:
        with pytest.raises(typer.BadParameter, match="from 1 to 240"):
            check_fps(fps)


def test_check_speeds_refuses_a_speed_of_zero():
    """``--test-speed``: "speeds must be positive"; 0 is not positive (a window played at speed 0 never moves)."""
    import typer

    from skelanim.cli.learn_common import check_speeds

    assert check_speeds([0.8, 1.0, 1.25]) == [0.8, 1.0, 1.25]
    with pytest.raises(typer.BadParameter, match="speeds must be positive"):
        check_speeds([1.0, 0.0])


def test_generation_plan_takes_one_frame_and_ten_minutes_exactly():
    """``--seconds``: "at least one frame" (0.25 s at 4 fps is exactly 1 frame, taken) and "at most 600 s (10
    minutes)" (600 s itself is taken: 600 * 25 = 15000 frames)."""
    from skelanim.cli.learn_common import MAX_GENERATED_SECONDS, generation_plan

    assert MAX_GENERATED_SECONDS == 600.0
    assert generation_plan("walk", 0.25, 4.0, 64) == [("walk", 1)]
    assert generation_plan("walk", 600.0, 25.0, 64) == [("walk", 15000)]


def test_generator_options_defaults_are_the_documented_ones():
    """``learn generate train --help``: ``--z-every/--z-first`` "feed z to every layer (default)", ``--padding``
    "'zeros' (default)"; and ``--window`` need only be a multiple of 8 (24 is, though not of 16)."""
    from skelanim.cli.learn_common import generator_options

    options = generator_options(24, "conv", None, None)
    assert options == {"z_every": True, "decoder": "conv", "padding": "zeros"}


def test_a_skeleton_in_other_units_is_told_the_scale_that_undoes_it():
    """``require_size``: more than ``OTHER_UNIT`` (2) times larger or smaller is another unit, and the advice is
    ``--scale`` by the inverse ratio (a clip 100 times smaller than the model, metres among centimetres: --scale 100);
    exactly 2 times (a child beside a tall adult) is taken."""
    from types import SimpleNamespace

    from skelanim.data.rig import OTHER_UNIT, require_size
    from skelanim.errors import SkeletonError

    def body(height: float) -> SimpleNamespace:
        return SimpleNamespace(height=lambda: height)

    def clips(*heights: float) -> list[SimpleNamespace]:
        return [SimpleNamespace(skeleton=body(h), path=f"c{h}.bvh") for h in heights]

    assert OTHER_UNIT == 2.0
    require_size(clips(50.0, 200.0), body(100.0), "the model")  # both ends of [1/2, 2]: no error
    with pytest.raises(SkeletonError, match=r"0\.01 times the model's size.*--scale 100\b"):
        require_size(clips(100.0, 1.0), body(100.0), "the model")
    with pytest.raises(SkeletonError, match=r"2\.54 times"):
        require_size(clips(254.0), body(100.0), "the model")


# --- files: the shared option checks ----------------------------------------------------------------------------------


@pytest.mark.parametrize("given, value", [("x", "x"), ("-y", "-y"), ("+z", "z"), (" Y ", "y"), ("-Z", "-z")])
def test_check_up_takes_a_signed_axis_in_any_case(given: str, value: str):
    """``check_up``: a ``--up`` value as ``"x"`` ... ``"-z"``, lower case (``UP_HELP``: x y z -x -y or -z); a
    leading ``+`` is the positive axis."""
    from skelanim.cli.files import check_up

    assert check_up(given) == value


@pytest.mark.parametrize("given", ["+-y", "-+x", "--z", "w", "xy", ""])
def test_check_up_refuses_what_is_not_one_signed_axis(given: str):
    """``check_up``: anything but one axis with at most one sign is a usage error naming ``--up``."""
    import typer

    from skelanim.cli.files import check_up

    with pytest.raises(typer.BadParameter, match="expected x, y, z, -x, -y or -z"):
        check_up(given)


@pytest.mark.parametrize("value, low, high", [(10000.0, 0.01, 10000.0), (1200.0, 10.0, 1200.0), (0.01, 0.01, 10000.0)])
def test_require_between_takes_both_ends(value: float, low: float, high: float):
    """``require_between``: refuses a value "outside ``[low, high]``" -- a closed range, both ends taken."""
    from skelanim.cli.files import require_between

    require_between(value, "--opt", low, high, "units")


def test_convert_takes_the_highest_rate_the_help_allows(tmp_path: Path, capsys):
    """``--fps 10000`` (the top of "between 0.01 and 10000 frames per second") is taken: a BVH whose Frame Time is
    1/10000 s, read from its text; 10001 is refused with that range."""
    import re

    from skelanim.data.samples import sample_path

    out = tmp_path / "fast.bvh"
    code, _, err = run(["convert", str(sample_path("jump")), str(out), "--fps", "10000"], capsys)
    assert code == 0, err
    found = re.search(r"^Frame Time:\s*(\S+)", out.read_text(), flags=re.MULTILINE)
    assert found is not None and float(found.group(1)) == pytest.approx(1e-4)
    code, stdout, err = run(["convert", str(sample_path("jump")), str(tmp_path / "no.bvh"), "--fps", "10001"], capsys)
    assert "between 0.01 and 10000 frames per second" in one_error_line(code, stdout, err)


def test_a_joint_error_is_given_the_file_only_when_one_file_was_given():
    """``with_option_hint``: the file a library error about joints concerns is named "when one file was given"; of
    several, which one lacked the joint is the library's to say (none is guessed); the library's ``; pass joints``
    advice becomes the command's own."""
    from skelanim.cli.files import with_option_hint
    from skelanim.errors import SkeletonError

    one = SkeletonError("no joint named Foot; pass joints=[...]")
    with_option_hint(one, [Path("a.bvh")], "; name them with --joints")
    assert one.path == "a.bvh" and str(one) == "a.bvh: no joint named Foot; name them with --joints"
    several = SkeletonError("no joint named Foot; pass joints=[...]")
    with_option_hint(several, [Path("a.bvh"), Path("b.bvh")], "; name them with --joints")
    assert several.path is None and str(several) == "no joint named Foot; name them with --joints"


# --- view, gait, plot: the bounds and file names their help gives ------------------------------------------------------


@pytest.mark.parametrize("port, taken", [(0, True), (65535, True), (65536, False)])
def test_view_takes_every_port_from_0_to_65535(port: int, taken: bool, tmp_path: Path, capsys):
    """``view --port``: "0 picks a free one" and the refusal says "between 0 and 65535": both ends are ports (TCP's
    are 16-bit); the check comes before --serve is looked at, so a page is written or nothing is."""
    from skelanim.data.samples import sample_path

    out = tmp_path / "page.html"
    code, stdout, err = run(["view", str(sample_path("jump")), "-o", str(out), "--port", str(port)], capsys)
    if taken:
        assert code == 0 and out.is_file(), err
    else:
        assert "--port must be between 0 and 65535, got 65536" in one_error_line(code, stdout, err)
        assert not out.exists()


def test_plot_joints_repeated_or_comma_separated_name_the_same_joints():
    """``_split_joints``: "``-j A -j B`` and ``-j A,B`` both give ``[A, B]``" (spaces around a name and an empty item
    from a trailing comma name no joint); no ``-j`` is the default joints (``None``)."""
    from skelanim.cli.viz import _split_joints

    assert _split_joints(["left_knee", "right_knee"]) == _split_joints(["left_knee, right_knee,"])
    assert _split_joints(["left_knee, right_knee,"]) == ["left_knee", "right_knee"]
    assert _split_joints(None) is None and _split_joints([]) is None


# --- ik solve: --fps is for files that carry no rate -------------------------------------------------------------------


def test_ik_solve_refuses_an_fps_near_but_not_the_rate_the_file_says(tmp_path: Path, capsys):
    """``ik solve --fps``: "Frame rate of positions whose file has none"; a file that says its rate keeps it, so
    ``--fps`` 1 % away from it (60.6 against the jump's 60.0024 fps) is refused in one line, as 60 against 30 is:
    only rounding (1e-6 relative) is forgiven."""
    from skelanim.data.samples import sample_path
    from skelanim.io.positions import JointPositions

    motion = skelanim.load(sample_path("jump"))
    src = tmp_path / "pos.npz"
    skelanim.save(JointPositions.from_motion(motion), src)
    out = tmp_path / "x.bvh"
    code, stdout, err = run(["ik", "solve", str(src), "-o", str(out), "--fps", f"{motion.fps * 1.01:.4f}"], capsys)
    assert f"pos.npz says its rate itself ({motion.fps:g} fps)" in one_error_line(code, stdout, err)
    assert not out.exists()


# --- convert-all: --from is a comma-separated list ---------------------------------------------------------------------


def test_convert_all_reads_every_suffix_a_comma_separated_from_names(tmp_path: Path, capsys):
    """``convert-all --from``: "Suffixes read from a folder, comma-separated" -- ``.bvh,txt`` reads a folder's BVH file
    and its DeepMimic clip (one suffix without its dot, as ``--to`` takes it), and nothing else."""
    import shutil

    from skelanim.data.samples import sample_path

    folder = tmp_path / "in"
    folder.mkdir()
    skelanim.save(skelanim.load(sample_path("jump")), folder / "jump.bvh")
    shutil.copy(sample_path("walk"), folder / "walk.txt")
    (folder / "notes.csv").write_text("not a motion\n")
    out = tmp_path / "out"
    code, stdout, err = run(["convert-all", str(folder), "-o", str(out), "--to", ".npz", "--from", ".bvh,txt",
                             "--no-progress"], capsys)  # fmt: skip
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["jump.npz", "walk.npz"]
    assert stdout.strip() == f"wrote 2 file(s) to {out}"


# --- positions and convert: what the help says the outputs hold --------------------------------------------------------


#: A BVH of three joints (Hips, Head, Leg) and two End Sites, still for 3 frames (counted by hand).
THREE_JOINTS = """HIERARCHY
ROOT Hips
{
  OFFSET 0 0 0
  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
  JOINT Head
  {
    OFFSET 0 10 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    End Site
    {
      OFFSET 0 5 0
    }
  }
  JOINT Leg
  {
    OFFSET 5 -10 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    End Site
    {
      OFFSET 0 -10 0
    }
  }
}
MOTION
Frames: 3
Frame Time: 0.0333333
""" + "0 0 0 0 0 0 0 0 0 0 0 0\n" * 3


def test_positions_appends_end_sites_only_when_asked(tmp_path: Path, capsys):
    """``positions --end-sites``: "Append End Site positions (named <joint>_end)" -- an option, so without it the file
    holds the skeleton's joints alone (3 in :data:`THREE_JOINTS`, and 3 + 2 with its End Sites)."""
    import numpy as np

    src = tmp_path / "three.bvh"
    src.write_text(THREE_JOINTS)
    for flags, names in (([], ["Head", "Hips", "Leg"]), (["--end-sites"], ["Head", "Head_end", "Hips", "Leg", "Leg_end"])):
        out = tmp_path / f"pos{len(flags)}.npz"
        code, _, err = run(["positions", str(src), str(out), *flags], capsys)
        assert code == 0, err
        with np.load(out) as data:
            assert sorted(map(str, data["joints"])) == names and data["positions"].shape == (3, len(names), 3)


def test_convert_writes_the_loop_field_of_a_deepmimic_json(tmp_path: Path, capsys):
    """``convert --loop``: "for outputs that say so (DeepMimic's Loop ...)"; a DeepMimic .json clip is one
    (``convert --help``: "DeepMimic .txt/.json output"), so ``--loop`` is written into its ``Loop`` (read back as
    JSON, not through skelanim): ``--loop none`` on the looping jump writes ``none``."""
    import json

    from skelanim.data.samples import sample_path

    src = sample_path("jump")
    assert json.loads(src.read_text())["Loop"] == "wrap"
    out = tmp_path / "jump.json"
    code, _, err = run(["convert", str(src), str(out), "--loop", "none"], capsys)
    assert code == 0, err
    assert json.loads(out.read_text())["Loop"] == "none"


@pytest.mark.parametrize("name", ["page.htm", "PAGE.HTML"])
def test_view_writes_a_page_named_htm_or_in_capitals(name: str, tmp_path: Path, capsys):
    """``require_suffix(out, (".html", ".htm"), "the viewer page")``: .htm is an HTML page's other suffix, and a
    suffix in capitals is the same suffix (Python's ``mimetypes`` calls all of them text/html)."""
    import mimetypes

    from skelanim.data.samples import sample_path

    assert mimetypes.guess_type(name)[0] == "text/html"
    out = tmp_path / name
    code, _, err = run(["view", str(sample_path("jump")), "-o", str(out)], capsys)
    assert code == 0 and out.read_text().lstrip().lower().startswith("<!doctype html"), err


# --- learn predict train: the MLP's observed frames ------------------------------------------------------------------


def test_an_mlp_may_observe_exactly_the_frames_it_predicts(tmp_path: Path, capsys):
    """``learn predict train --arch mlp --gcn-observed``: "the MLP predicts at most the frames it observes" -- 25
    observed frames for the 25 future ones of a second at 25 fps pass the check (the command goes on to the data,
    here missing); 24 are refused."""
    base = ["learn", "predict", "train", "--arch", "mlp", "--data", str(tmp_path / "none"), "-o", str(tmp_path / "m")]
    code, stdout, err = run([*base, "--gcn-observed", "25"], capsys)
    line = one_error_line(code, stdout, err)
    assert "--gcn-observed" not in line and str(tmp_path / "none") in line
    code, stdout, err = run([*base, "--gcn-observed", "24"], capsys)
    assert "25 future frames need at least 25, got 24" in one_error_line(code, stdout, err)


# --- recognize: the text line lists the --top contents once each ----------------------------------------------------


def test_recognize_text_gives_the_best_content_then_the_other_top_ones(mocap_dir: Path, capsys):
    """``recognize --top 3``: "Contents listed per file, most probable first": the text line is the best content and
    its probability, then the two others in brackets -- the JSON ``top`` list of the same run, best first, with the
    best one not repeated among the others."""
    import json

    path = mocap_dir / "bandai_namco_1" / "dataset-1_walk_normal_001.bvh"
    if not path.is_file():
        pytest.skip(f"mocap file missing: {path}")
    code, out, err = run(["recognize", str(path), "--top", "3", "--json"], capsys)
    assert code == 0, err
    top = json.loads(out)["files"][0]["top"]
    assert len(top) == 3 and top[0][1] >= top[1][1] >= top[2][1]
    code, out, err = run(["recognize", str(path), "--top", "3"], capsys)
    assert code == 0, err
    (first, p), others = top[0], top[1:]
    assert out == f"{path}: {first} {p:.2f} ({', '.join(f'{n} {q:.2f}' for n, q in others)})\n"


# --- gait: the text report's cycle and flexion lines -------------------------------------------------------------------


def test_gait_text_gives_the_cycles_and_the_flexion_range_of_the_analysis(mocap_dir: Path, capsys):
    """``gait FILE`` against :func:`gait_analysis` run directly: "gait cycles: N (H heel strikes)" -- the loop's
    plays said only for a loop played more than once -- and "knee flexion: MIN to MAX deg over the cycle (mean)",
    the range of the mean curve."""
    from skelanim.metrics.gait import gait_analysis

    path = mocap_dir / "bandai_namco_1" / "dataset-1_walk_normal_001.bvh"
    if not path.is_file():
        pytest.skip(f"mocap file missing: {path}")
    report = gait_analysis(skelanim.load(path))
    assert report.loop_plays == 1  # a take, not a loop
    code, out, err = run(["gait", str(path)], capsys)
    assert code == 0, err
    lines = {k.strip(): v.strip() for k, v in (line.split(": ", 1) for line in out.splitlines())}
    heel_strikes = report.to_dict()["num_heel_strikes"]
    assert lines["gait cycles"] == f"{report.num_cycles} ({heel_strikes} heel strikes)"
    mean, _ = report.curve("knee_flexion")
    assert lines["knee flexion"] == f"{float(mean.min()):.1f} to {float(mean.max()):.1f} deg over the cycle (mean)"
