"""The file commands end to end: info, convert, positions, and one-line errors on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from time_limit import within  # tests/helpers

import skelanim
from skelanim.cli import main
from skelanim.data.samples import sample_path


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_info_json_on_bundled_sample(capsys):
    code, out, _ = run(["info", str(sample_path("walk")), "--json"], capsys)
    assert code == 0
    facts = json.loads(out)
    motion = skelanim.load(sample_path("walk"))
    assert facts["joints"] == motion.skeleton.num_joints == 13
    assert facts["frames"] == motion.num_frames
    assert facts["fps"] == pytest.approx(motion.fps)
    assert facts["up_axis"] == "Y"
    assert facts["duration_s"] == pytest.approx((motion.num_frames - 1) / motion.fps)


def test_info_takes_several_files_in_order(tmp_path: Path, capsys):
    """``skelanim info a.bvh b.bvh``: one block (text) or one object (a JSON list) per file, in the order given, each
    the one-file answer; a bad file among them gets one error line naming it (with --json an object of its file and
    error in its place), the others their answers, and the exit code is 2."""
    walk, run_clip = sample_path("walk"), sample_path("run")
    singles = []
    for path in (run_clip, walk):
        code, out, _ = run(["info", str(path), "--json"], capsys)
        assert code == 0
        singles.append(json.loads(out))
    code, out, _ = run(["info", str(run_clip), str(walk), "--json"], capsys)
    assert code == 0 and json.loads(out) == singles
    code, out, _ = run(["info", str(run_clip), str(walk)], capsys)
    blocks = out.split("\n\n")
    assert code == 0 and len(blocks) == 2
    for block, facts in zip(blocks, singles, strict=True):
        assert f"file: {facts['file']}" in block and f"frames: {facts['frames']}" in block
    bad = tmp_path / "broken.bvh"
    bad.write_text("HIERARCHY\nROOT Hips\n{\n")
    missing = tmp_path / "missing.bvh"
    code, out, err = run(["info", str(walk), str(bad), str(missing), str(run_clip)], capsys)
    blocks = out.split("\n\n")
    assert code == 2 and len(blocks) == 2
    for block, facts in zip(blocks, singles[::-1], strict=True):
        assert f"file: {facts['file']}" in block and f"frames: {facts['frames']}" in block
    lines = err.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"error: {bad}") and lines[1].startswith(f"error: {missing}")
    code, out, err = run(["info", str(walk), str(bad), str(run_clip), "--json"], capsys)
    listed = json.loads(out)
    assert code == 2 and listed[0] == singles[1] and listed[2] == singles[0]
    assert listed[1] == {"file": str(bad), "error": err.strip().removeprefix("error: ")}
    code, out, err = run(["info", str(bad)], capsys)  # one file: its error alone
    assert code == 2 and out == "" and str(bad) in err and len(err.strip().splitlines()) == 1


def test_info_text_on_real_bvh(mocap_dir: Path, capsys):
    code, out, _ = run(["info", str(mocap_dir / "pymo_demo" / "AV_8Walk_Meredith_HVHA_Rep1.bvh")], capsys)
    assert code == 0
    assert "XYZ" in out and "joints: 23" in out.replace("  ", " ").replace(" :", ":")


@pytest.mark.parametrize(
    "relative,up,units",
    [("bandai_namco_1/dataset-1_walk_normal_001.bvh", "Y", "cm"), ("cmu_iclone_ccrig/001_01.bvh", "Y", "cm"),
     ("pymo_demo/AV_8Walk_Meredith_HVHA_Rep1.bvh", "Y", "in"), ("cmu_cgspeed_mb/01_01.bvh", "Y", "cmu")],
)
def test_info_guesses(mocap_dir: Path, capsys, relative, up, units):
    code, out, _ = run(["info", str(mocap_dir / relative), "--json"], capsys)
    facts = json.loads(out)
    assert code == 0 and facts["up_axis"] == up and facts["units_guess"] == units


def test_info_signs_the_up_axis_as_convert_up_takes_it(tmp_path: Path, capsys):
    """An audit: ``info`` said ``up_axis: Y`` for a copy turned head down, although the library knows the sign and
    ``convert --help`` sends users to info's up_axis to choose ``--up``: it says ``-Y``, which ``--up`` takes and which
    writes the same glTF as the guess."""
    import torch

    from skelanim import ops

    walk = skelanim.load(sample_path("walk"))
    down = tmp_path / "down.bvh"
    skelanim.save(ops.rotate(walk, torch.tensor([0.0, 0.0, 0.0, 1.0], dtype=torch.float64)), down)  # Y down
    code, out, _ = run(["info", str(down), "--json"], capsys)
    assert code == 0 and json.loads(out)["up_axis"] == "-Y"
    code, out, _ = run(["info", str(down)], capsys)
    assert code == 0 and "up_axis: -Y" in out
    code, out, _ = run(["info", str(sample_path("walk")), "--json"], capsys)
    assert json.loads(out)["up_axis"] == "Y"  # an upright file: unchanged
    code, _, err = run(["convert", str(down), str(tmp_path / "told.glb"), "--up", "-Y"], capsys)
    assert code == 0, err
    assert main(["convert", str(down), str(tmp_path / "guessed.glb")]) == 0
    told, guessed = skelanim.load(tmp_path / "told.glb"), skelanim.load(tmp_path / "guessed.glb")
    np.testing.assert_allclose(told.positions().numpy(), guessed.positions().numpy(), atol=1e-6)


def test_convert_resample_and_scale(tmp_path: Path, mocap_dir: Path, capsys):
    src = mocap_dir / "cmu_cgspeed_mb" / "01_01.bvh"
    dst = tmp_path / "out.bvh"
    code, _, err = run(["convert", str(src), str(dst), "--fps", "30", "--scale", "2"], capsys)
    assert code == 0, err
    original, converted = skelanim.load(src), skelanim.load(dst)
    assert converted.fps == pytest.approx(30)
    assert converted.duration == pytest.approx(original.duration, abs=1 / 30)
    assert converted.skeleton.height() == pytest.approx(2 * original.skeleton.height(), rel=1e-6)
    # every 4th frame of the 120 fps original is a 30 fps frame
    assert np.allclose(converted.positions()[10].numpy(), 2 * original.positions()[40].numpy(), atol=1e-3)


def test_convert_between_formats(tmp_path: Path, capsys):
    src = sample_path("run")
    for suffix in (".bvh", ".txt", ".npz", ".csv"):
        code, _, err = run(["convert", str(src), str(tmp_path / f"run{suffix}")], capsys)
        assert code == 0, err
    original, written = skelanim.load(src), skelanim.load(tmp_path / "run.bvh")
    # BVH stores joints depth-first, so the order may change: compare joint by joint, by name.
    order = [written.skeleton.index(name) for name in original.skeleton.names]
    assert float((original.positions() - written.positions()[:, order]).abs().max()) < 1e-5


def test_convert_says_when_a_loop_is_lost_and_puts_it_back(tmp_path: Path, capsys):
    src = sample_path("run")
    assert json.loads(src.read_text())["Loop"] == "wrap"
    code, _, err = run(["convert", str(src), str(tmp_path / "run.bvh")], capsys)
    assert code == 0 and err.startswith("note: run.txt loops") and "--loop wrap" in err  # BVH has no such field
    code, _, err = run(["convert", str(tmp_path / "run.bvh"), str(tmp_path / "back.txt")], capsys)
    assert code == 0 and json.loads((tmp_path / "back.txt").read_text())["Loop"] == "none"
    code, _, err = run(["convert", str(tmp_path / "run.bvh"), str(tmp_path / "back.txt"), "--loop", "wrap"], capsys)
    assert code == 0 and not err and json.loads((tmp_path / "back.txt").read_text())["Loop"] == "wrap"
    code, _, err = run(["convert", str(src), str(tmp_path / "x.bvh"), "--loop", "wrap"], capsys)
    assert code == 2 and "a .bvh file has no loop field" in err and not (tmp_path / "x.bvh").exists()
    code, _, err = run(["convert", str(src), str(tmp_path / "x.txt"), "--loop", "yes"], capsys)
    assert code == 2 and "--loop: expected wrap or none" in err and not (tmp_path / "x.txt").exists()


def test_positions_npz_loads_without_pickle(tmp_path: Path, capsys):
    out = tmp_path / "walk.npz"
    code, _, err = run(["positions", str(sample_path("walk")), "-o", str(out), "--end-sites"], capsys)
    assert code == 0, err
    with np.load(out, allow_pickle=False) as data:
        positions, joints = data["positions"], data["joints"]
    motion = skelanim.load(sample_path("walk"))
    assert positions.shape == (motion.num_frames, motion.skeleton.num_joints + len(motion.skeleton.end_sites), 3)
    assert list(joints[: motion.skeleton.num_joints]) == motion.skeleton.names
    assert np.allclose(positions[:, : motion.skeleton.num_joints], motion.positions().numpy())


BAD_BVH = "HIERARCHY\nROOT Hips\n{\n\tOFFSET 0 0 0\n\tCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation\n}\nMOTION\nFrames: 2\nFrame Time: 0.033333\n0 0 0 0 0 0\n0 0 0 0 0\n"


@pytest.mark.parametrize(
    "name,content,expect",
    [
        ("short.bvh", BAD_BVH, "short.bvh:11:"),
        ("nan.bvh", BAD_BVH.replace("0 0 0 0 0\n0 0 0 0 0\n", "0 0 0 0 0\n0 0 nan 0 0 0\n"), "nan.bvh:11:"),
        ("junk.bvh", "\x00\xff\xfe binary junk", "junk.bvh"),
        ("motion.xyz", "whatever", "unknown suffix"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path: Path, capsys, name, content, expect):
    src = tmp_path / name
    src.write_bytes(content.encode("latin-1"))
    dst = tmp_path / "never.bvh"
    for argv in (["info", str(src)], ["convert", str(src), str(dst)], ["positions", str(src), "-o", str(dst)]):
        code, out, err = run(argv, capsys)
        assert code == 2 and out == ""
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and expect in lines[0], err
        assert "Traceback" not in err
    assert not dst.exists() and sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_missing_file(tmp_path: Path, capsys):
    code, _, err = run(["info", str(tmp_path / "absent.bvh")], capsys)
    assert code == 2 and err.startswith("error: ") and "absent.bvh" in err and len(err.strip().splitlines()) == 1


def test_help_documents_every_command(capsys):
    code, out, _ = run(["--help"], capsys)
    assert code == 0
    for command in ("info", "convert", "positions", "demo"):
        assert command in out


def test_a_commands_help_paragraphs_flow_instead_of_breaking_where_the_docstring_does(capsys, monkeypatch):
    """A newcomer's walk through the docs: typer kept each docstring line break and wrapped at the terminal's
    width too, so `convert --help` broke "retarget other skeletons. The other / formats keep ..." mid-sentence."""
    from skelanim.cli import _flowing

    monkeypatch.setenv("COLUMNS", "300")
    code, out, _ = run(["convert", "--help"], capsys)
    assert code == 0
    assert "retarget other skeletons. The other formats keep the source's axes; glTF, which is +Y up," in out
    doc = "First.\n\n    One\n    two.\n\n    - a\n    - b\n\n    Code:\n        indented\n    "  # as a docstring
    assert _flowing(doc) == "First.\n\nOne two.\n\n- a\n- b\n\nCode:\n    indented"
    assert _flowing("Stops and\n    --wait) writes.") == "Stops and --wait) writes."  # an option, not a list (record)


# ------------------------------------------------------------------- one-line errors on the output side too
def one_error_line(code: int, out: str, err: str, *needles: str) -> str:
    """Exit 2, nothing on stdout, exactly one ``error:`` line on stderr holding every needle."""
    assert code == 2 and out == "", (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("suffix", [".bvh", ".txt", ".json", ".glb", ".gltf"])
def test_positions_into_a_motion_format_is_refused(tmp_path: Path, capsys, suffix):
    out = tmp_path / f"out{suffix}"
    code, stdout, err = run(["positions", str(sample_path("walk")), "-o", str(out)], capsys)
    one_error_line(code, stdout, err, f"{out}: joint positions", "expected .npz, .npy or .csv")
    assert list(tmp_path.iterdir()) == []


SMALL_BVH = ("HIERARCHY\nROOT Hips\n{\n\tOFFSET 0 0 0\n\tCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation"
             " Yrotation\n\tJOINT Spine\n\t{\n\t\tOFFSET 0 10 0\n\t\tCHANNELS 3 Zrotation Xrotation Yrotation\n"
             "\t\tEnd Site\n\t\t{\n\t\t\tOFFSET 0 10 0\n\t\t}\n\t}\n}\nMOTION\nFrames: 2\nFrame Time: 0.0333333\n"
             "0 0 0 0 0 0 0 0 0\n0 0 0 0 0 0 0 0 0\n")


def test_output_that_is_a_directory(tmp_path: Path, capsys):
    dst = tmp_path / "dir.bvh"
    dst.mkdir()
    code, out, err = run(["convert", str(sample_path("walk")), str(dst)], capsys)
    line = one_error_line(code, out, err, f"error: {dst}: Is a directory")
    assert ".dir." not in line  # not the hidden temporary file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.bvh"] and list(dst.iterdir()) == []


def test_output_under_a_plain_file(tmp_path: Path, capsys):
    (tmp_path / "afile").write_text("")
    dst = tmp_path / "afile" / "x.bvh"
    code, out, err = run(["convert", str(sample_path("walk")), str(dst)], capsys)
    one_error_line(code, out, err, f"error: {dst}: Not a directory", f"{tmp_path / 'afile'} is a file")
    assert [p.name for p in tmp_path.iterdir()] == ["afile"]


def test_unwritable_folder_names_the_output(tmp_path: Path, capsys, monkeypatch):
    """A read-only folder, simulated (tests may run as root, who can write anywhere)."""
    import tempfile

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / ".out._ts60s2u.bvh"))

    monkeypatch.setattr(tempfile, "mkstemp", denied)
    dst = tmp_path / "out.bvh"
    code, out, err = run(["convert", str(sample_path("walk")), str(dst)], capsys)
    line = one_error_line(code, out, err, f"error: {dst}: Permission denied")
    assert "_ts60s2u" not in line and list(tmp_path.iterdir()) == []


def test_scaling_a_deepmimic_clip_is_refused(tmp_path: Path, capsys):
    dst = tmp_path / "s2.txt"
    code, out, err = run(["convert", str(sample_path("walk")), str(dst), "--scale", "2"], capsys)
    one_error_line(code, out, err, f"error: {dst}: the DeepMimic humanoid has fixed bone lengths",
                   "cannot be scaled", "2 times")
    assert list(tmp_path.iterdir()) == []
    code, _, err = run(["convert", str(sample_path("walk")), str(tmp_path / "s2.bvh"), "--scale", "2"], capsys)
    assert code == 0, err  # formats that store bone lengths scale fine


def test_other_skeleton_to_deepmimic_says_how_to_retarget(tmp_path: Path, capsys):
    src = tmp_path / "other.bvh"
    src.write_text(SMALL_BVH)
    dst = tmp_path / "out.txt"
    code, out, err = run(["convert", str(src), str(dst)], capsys)
    one_error_line(code, out, err, f"error: {dst}: a DeepMimic clip holds the DeepMimic humanoid's 13 joints",
                   "(2 joints: Hips, Spine)", f"skelanim retarget {src} --to ", f"humanoid.urdf -o {dst}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.bvh"]


def test_retarget_hint_is_a_working_command(tmp_path: Path, capsys, mocap_dir: Path):
    """The command the error suggests, for a real BVH of another skeleton, does write the clip."""
    import shlex

    src = tmp_path / "131_01_short.bvh"
    skelanim.save(skelanim.load(mocap_dir / "cmu_cgspeed_max" / "131_01.bvh")[:6], src)
    dst = tmp_path / "out.txt"
    code, out, err = run(["convert", str(src), str(dst)], capsys)
    hint = one_error_line(code, out, err).split("retarget it: ", 1)[1]
    argv = shlex.split(hint)
    assert argv[:3] == ["skelanim", "retarget", str(src)] and argv[-2:] == ["-o", str(dst)]
    code, _, err = run(argv[1:], capsys)
    assert code == 0, err
    clip = skelanim.load(dst)
    assert clip.skeleton.num_joints == 13 and clip.num_frames == 6


def test_extra_frame_lines_warn_in_one_line_without_library_source(tmp_path: Path, capsys):
    src = tmp_path / "more.bvh"
    src.write_text(SMALL_BVH + "0 0 0 0 0 0 0 0 0\n")
    code, out, err = run(["info", str(src)], capsys)
    assert code == 0 and "frames: 2" in out.replace("  ", " ").replace(" :", ":")
    expected = f"warning: {src}: 1 line(s) after the 2 frames declared by 'Frames:' were ignored"
    assert err.strip().splitlines() == [expected]
    code, _, err = run(["plot", str(src), "-o", str(tmp_path / "p.png")], capsys)  # any command, not only info
    assert code == 0 and err.strip().splitlines() == [expected]


def test_warning_from_the_library_points_at_the_caller(tmp_path: Path):
    import warnings

    from skelanim.io import bvh

    src = tmp_path / "more.bvh"
    src.write_text(SMALL_BVH + "0 0 0 0 0 0 0 0 0\n")
    for read in (skelanim.load, bvh.load, lambda p: bvh.loads(p.read_bytes(), p)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            read(src)
        assert [w.filename for w in caught] == [__file__], [w.filename for w in caught]


def test_deepmimic_error_prints_plain_numbers(tmp_path: Path, capsys):
    frames = json.loads(sample_path("walk").read_text())["Frames"][:3]
    frames[1][0] = -0.03
    src = tmp_path / "neg.txt"
    src.write_text(json.dumps({"Loop": "wrap", "Frames": frames}))
    code, out, err = run(["info", str(src)], capsys)
    line = one_error_line(code, out, err, f"{src}: frame 1: value 0 (frame duration): must not be negative")
    assert line.endswith("found -0.03") and "np." not in line


@pytest.mark.parametrize(("change", "expected"), [
    (lambda d: d["accessors"][d["animations"][0]["samplers"][0]["input"]].__setitem__("count", -1), ".count: expected"),
    (lambda d: d["animations"][0]["channels"][0].__setitem__("sampler", None), "animations[0].channels[0].sampler"),
    (lambda d: d["animations"][0]["channels"][0].__setitem__("target", None), "animations[0].channels[0].target"),
    (lambda d: d["nodes"][1].__setitem__("translation", [1, 2]), "nodes[1].translation"),
    (lambda d: d["nodes"][1].setdefault("children", []).append(0), "the nodes form a cycle"),
], ids=["negative count", "null sampler", "null target", "short translation", "cycle"])
def test_malformed_gltf_is_one_line_at_the_cli(tmp_path: Path, capsys, change, expected):
    good = tmp_path / "walk.gltf"
    skelanim.save(skelanim.load(sample_path("walk")), good)
    doc = json.loads(good.read_text())
    change(doc)
    src = tmp_path / "bad.gltf"
    src.write_text(json.dumps(doc))
    dst = tmp_path / "never.bvh"
    for argv in (["info", str(src)], ["convert", str(src), str(dst)]):
        code, out, err = within(20, lambda argv=argv: run(argv, capsys))
        one_error_line(code, out, err, f"error: {src}: ", expected)
    assert not dst.exists()




@pytest.mark.parametrize("argv, said", [
    (["info"], "skelanim info: Missing argument"),
    (["info", "x.bvh", "--bogus"], "skelanim info: No such option: --bogus"),
    (["convert", "a.bvh", "b.bvh", "--fps", "fast"], "skelanim convert: Invalid value for '--fps'"),
    (["--bogus"], "skelanim: No such option: --bogus"),
])  # fmt: skip
def test_usage_errors_are_one_line(argv, said, capsys):
    code, out, err = run(argv, capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {said}") and "--help)" in lines[0], err


def test_no_arguments_prints_the_help(capsys):
    code, out, err = run([], capsys)
    assert code == 2 and "Usage: skelanim" in out and "convert" in out and "error" not in err
    code, out, _ = run(["info", "--help"], capsys)
    assert code == 0 and "Usage: skelanim info" in out


@pytest.mark.parametrize("argv, said", [
    (["convert", "{walk}", "{out}", "--fps", "0"], "--fps must be between 0.01 and 10000 frames per second, got 0"),
    (["convert", "{walk}", "{out}", "--fps", "1e8"], "--fps must be between 0.01 and 10000"),
    (["predict", "{walk}", "-o", "{out}", "--seconds", "1e9"], "skelanim predict: Invalid value for '--seconds'"),
])  # fmt: skip
def test_rates_and_lengths_out_of_range_are_refused_first(argv, said, tmp_path, capsys):
    """Values that would need gigabytes (or hang) are one line before any work, naming the option."""
    out = tmp_path / "out.bvh"
    code, _, err = run([a.format(walk=sample_path("walk"), out=out) for a in argv], capsys)
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


@pytest.mark.parametrize("argv, said", [
    (["view", "{walk}", "-o", "{tmp}/page.png"], "the viewer page is written as .html or .htm, not '.png'"),
    (["ik", "export", "-o", "{tmp}/net.bvh"], "the network is written as .onnx, not '.bvh'"),
])  # fmt: skip
def test_an_output_of_the_wrong_kind_is_refused(argv, said, tmp_path, capsys):
    code, _, err = run([a.format(walk=sample_path("walk"), tmp=tmp_path) for a in argv], capsys)
    assert code == 2 and err.strip().endswith(said) and len(err.strip().splitlines()) == 1, err
    assert list(tmp_path.iterdir()) == []


def test_a_skeleton_without_feet_is_named_with_the_commands_own_advice(tmp_path, capsys):
    """The library's advice (``pass joints= to foot_contacts``) is for Python callers: the commands name the
    file and their own option (plot's ``--joints``), or say how the feet are found (gait, which has none)."""
    rows = "\n".join(f"{0.01 * i:g} 0 0 0 0 0" for i in range(60))
    stick = tmp_path / "stick.bvh"
    stick.write_text("HIERARCHY\nROOT a\n{\n OFFSET 0 0 0\n CHANNELS 6 Xposition Yposition Zposition Zrotation "
                     "Xrotation Yrotation\n End Site\n {\n  OFFSET 0 1 0\n }\n}\nMOTION\nFrames: 60\n"
                     f"Frame Time: 0.033333\n{rows}\n")  # fmt: skip
    for kind in ("contacts", "angles"):
        code, _, err = run(["plot", str(stick), "-o", str(tmp_path / "x.png"), "-k", kind], capsys)
        assert code == 2 and err.startswith(f"error: {stick}: ") and err.strip().endswith("name them with --joints")
    code, _, err = run(["gait", str(stick)], capsys)
    assert code == 2 and err.startswith(f"error: {stick}: ") and "pass joints" not in err and "by their names" in err
    assert not (tmp_path / "x.png").exists()


def test_the_demo_writes_its_outputs_and_reports_the_worst_joint_of_each_solve(tmp_path: Path, capsys):
    """``skelanim demo`` (``make demo``): every file it names is written, and each IK line's worst joint error is
    the one the written BVH has against the tracked positions (the mean alone had hidden toes 8 % of the height
    off). The first solve's onnxruntime session is built before the solves are timed (it had made 39 poses look like
    1 s of work)."""
    import re

    import torch

    code, out, _ = run(["demo", "-o", str(tmp_path / "demo")], capsys)
    assert code == 0
    for name in ("walk.bvh", "walk_ik.bvh", "walk_ik_refined.bvh", "walk_poses.png", "viewer.html", "walk.glb"):
        assert (tmp_path / "demo" / name).is_file(), name
    tracked = np.load(tmp_path / "demo" / "walk_tracked_positions.npz")
    names = list(tracked["joints"])
    lines = [line for line in out.splitlines() if line.startswith("neural IK") and " poses in " in line]
    assert len(lines) == 2
    # the onnxruntime session is built (and timed) before the solves, so their times are the solves' own
    assert re.search(r"^neural IK: onnxruntime session built in [0-9.]+ s", out, re.MULTILINE)
    for line, file in zip(lines, ("walk_ik.bvh", "walk_ik_refined.bvh"), strict=True):
        worst, joint = re.search(r"worst ([0-9.]+)% \((\w+)\)", line).groups()
        solved = skelanim.load(tmp_path / "demo" / file)
        errors = (solved.positions()[:, [solved.skeleton.names.index(n) for n in names]]
                  - torch.as_tensor(tracked["positions"])).norm(dim=-1) / solved.height  # fmt: skip
        # (the demo divides by the tracked motion's height, not the solved one's: 1 % apart here)
        assert float(worst) == pytest.approx(100 * float(errors.max()), rel=0.02, abs=0.02)
        assert names[int(errors.max(dim=0).values.argmax())] == joint


def test_convert_simple_channels_writes_root_positions_only(mocap_files, tmp_path: Path, capsys):
    """``convert --simple-channels``: Bandai's six channels on every joint under a static root become a root with
    position channels and rotation channels below, the same world positions; a format without channels is refused
    before anything is written."""
    (src,) = mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh"])
    out = tmp_path / "simple.bvh"
    assert main(["convert", str(src), str(out), "--simple-channels"]) == 0
    motion, simple = skelanim.load(src), skelanim.load(out)
    assert simple.skeleton.names == motion.skeleton.names[1:]
    assert [len(c) for c in simple.skeleton.channels] == [6] + [3] * 20 and simple.joint_translations is None
    np.testing.assert_allclose(simple.positions().numpy(), motion.positions()[:, 1:].numpy(), rtol=0, atol=1e-4)
    capsys.readouterr()
    assert main(["convert", str(src), str(tmp_path / "simple.glb"), "--simple-channels"]) == 2
    assert "channels are a BVH file's" in capsys.readouterr().err and not (tmp_path / "simple.glb").exists()


def test_convert_simple_channels_names_the_file_whose_joint_moves(mocap_files, tmp_path: Path, capsys):
    """An audit: ``--simple-channels`` on a file whose spine's translation is animated said "joint Spine's translation
    is animated ..." without the file, as every other convert error names it; nothing is written."""
    import torch

    (src,) = mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh"])
    motion = skelanim.load(src)[:30]
    moved = motion.joint_translations.clone()
    moved[:, 2, 1] += torch.linspace(0, 5, 30, dtype=moved.dtype)
    spine = tmp_path / "spine.bvh"
    skelanim.save(motion.copy(joint_translations=moved), spine)
    out = tmp_path / "simple.bvh"
    code, stdout, err = run(["convert", str(spine), str(out), "--simple-channels"], capsys)
    one_error_line(code, stdout, err, f"error: {spine}: joint Spine's translation is animated")
    assert not out.exists()


@pytest.mark.parametrize("scale", ["0", "-2", "nan", "inf"])
def test_convert_names_the_scale_option_it_refuses(tmp_path: Path, capsys, scale):
    """``--scale 0`` said "scale factor must be a positive finite number" without naming the option."""
    dst = tmp_path / "out.bvh"
    code, out, err = run(["convert", str(sample_path("walk")), str(dst), "--scale", scale], capsys)
    one_error_line(code, out, err, "--scale", "a positive finite factor")
    assert list(tmp_path.iterdir()) == []


def test_the_output_is_taken_as_the_positional_or_as_dash_o(tmp_path: Path, capsys):
    """A CLI review: ``convert IN -o OUT`` and ``record -o OUT`` were 'No such option' (every other writing command
    takes -o) and ``positions IN OUT`` an unexpected extra argument. Either form writes the same file; both or
    neither is one usage line naming the two."""
    src = str(sample_path("walk"))
    assert run(["convert", src, str(tmp_path / "a.bvh")], capsys)[0] == 0
    assert run(["convert", src, "-o", str(tmp_path / "b.bvh")], capsys)[0] == 0
    assert (tmp_path / "a.bvh").read_bytes() == (tmp_path / "b.bvh").read_bytes()
    assert run(["positions", src, str(tmp_path / "a.npz")], capsys)[0] == 0
    assert run(["positions", src, "--out", str(tmp_path / "b.npz")], capsys)[0] == 0
    np.testing.assert_array_equal(np.load(tmp_path / "a.npz")["positions"], np.load(tmp_path / "b.npz")["positions"])
    for argv in (["convert", src, str(tmp_path / "c.bvh"), "-o", str(tmp_path / "d.bvh")], ["convert", src],
                 ["positions", src], ["record", "--give-up", "0.1"]):  # fmt: skip
        code, out, err = run(argv, capsys)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (argv, err)
        assert "-o/--out" in err and ("DST" in err or "OUT" in err), err
    assert not (tmp_path / "c.bvh").exists() and not (tmp_path / "d.bvh").exists()
    code, _, err = run(["record", "-o", str(tmp_path / "r.bvh"), "--port", "0", "--give-up", "0.1"], capsys)
    assert code == 2 and "nothing arrived" in err  # -o taken: it listened, and nothing came
