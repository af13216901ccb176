"""Bad input at the command line loses nothing: an output that is an input is refused, an output that cannot be
written is refused before the work, a live take that cannot be written is kept, and odd inputs and options are
one line that names the file and says what is wrong."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import skelanim
from skelanim.cli import main
from skelanim.data.samples import sample_path


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line_error(code: int, err: str, *expected: str) -> None:
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error:"), err
    assert all(e in lines[0] for e in expected), lines[0]
    assert "Traceback" not in err


def test_an_output_that_is_the_input_is_refused_and_the_input_kept(tmp_path: Path, capsys):
    src = tmp_path / "walk.bvh"
    skelanim.save(skelanim.load(sample_path("walk")), src)
    before = src.read_bytes()
    (tmp_path / "alias.bvh").symlink_to(src)
    for argv in (["convert", str(src), str(src), "--fps", "10"],
                 ["ik", "solve", str(src), "-o", str(src)],
                 ["predict", str(src), "-o", str(tmp_path / "alias.bvh")]):  # the same file by another name
        code, _, err = run(argv, capsys)
        one_line_error(code, err, "is an input of this command")
        assert src.read_bytes() == before


def test_an_output_format_that_cannot_hold_the_result_is_refused_before_the_prediction(tmp_path: Path, capsys,
                                                                                       monkeypatch):
    from skelanim.learn import forecast

    def no_work(*args, **kwargs):
        raise AssertionError("the prediction ran before the output was checked")

    monkeypatch.setattr(forecast, "predict_motion", no_work)
    monkeypatch.setattr(forecast, "predict_retargeted", no_work)
    src = tmp_path / "other.bvh"
    skelanim.save(skelanim.load(sample_path("walk")), src)
    text = src.read_text()
    assert "ROOT root" in text
    src.write_text(text.replace("ROOT root", "ROOT pelvis"))  # no longer the DeepMimic humanoid
    code, _, err = run(["predict", str(src), "-o", str(tmp_path / "out.json"), "--retarget"], capsys)
    one_line_error(code, err, "out.json", "DeepMimic humanoid")
    code, _, err = run(["predict", str(src), "-o", str(tmp_path / "out.xyz"), "--retarget"], capsys)
    one_line_error(code, err, "out.xyz", "unknown suffix '.xyz'")
    code, _, err = run(["ik", "solve", str(src), "-o", str(tmp_path / "out.xyz")], capsys)
    one_line_error(code, err, "out.xyz", "unknown suffix '.xyz'")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.bvh"]


def test_an_output_that_cannot_be_written_is_refused_before_the_work(tmp_path: Path, capsys, monkeypatch):
    import tempfile

    src = sample_path("walk")
    (tmp_path / "plain").write_text("a file")
    code, _, err = run(["predict", str(src), "-o", str(tmp_path / "plain" / "x.bvh")], capsys)
    one_line_error(code, err, "plain is a file, not a folder")

    def no_room(*args, **kwargs):  # a read-only mount, /proc, a quota: only making a file tells
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(tempfile, "mkstemp", no_room)
    from skelanim.io.atomic import check_can_write

    with pytest.raises(OSError, match="Read-only file system") as info:
        check_can_write(tmp_path / "out.bvh")
    assert info.value.filename == str(tmp_path / "out.bvh")


def test_a_take_that_cannot_be_written_is_kept(tmp_path: Path, capsys, monkeypatch):
    """The writing fails after the performance (a disk filled meanwhile): the take goes to the temporary folder."""
    from skelanim.serve import record

    take = skelanim.load(sample_path("walk"))
    monkeypatch.setattr(record.VMCRecorder, "__enter__", lambda self: self)
    monkeypatch.setattr(record.VMCRecorder, "__exit__", lambda self, *exc: None)
    monkeypatch.setattr(record.VMCRecorder, "__init__",
                        lambda self, host, port: self.__dict__.update(port=port, target=f"{host}:{port}"))
    monkeypatch.setattr(record.VMCRecorder, "receive", lambda self, **kw: ["frames"])
    monkeypatch.setattr(record, "frames_to_motion", lambda received, fps: take)
    real_save = skelanim.save
    out = tmp_path / "take.bvh"

    def full_disk(motion, path, **kw):
        if Path(path) == out:
            raise OSError(28, "No space left on device", str(out))
        real_save(motion, path, **kw)

    monkeypatch.setattr(skelanim, "save", full_disk)
    code, _, err = run(["record", str(out), "--port", "0", "--frames", "1", "--no-progress"], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and lines[-1].startswith(f"error: {out}") and "No space left" in lines[-1]
    assert lines[0].startswith(f"note: {out} could not be written; the take is kept in ")
    kept = Path(lines[0].rsplit(" ", 1)[1])
    try:
        assert skelanim.load(kept).num_frames == take.num_frames
    finally:
        kept.unlink()


def test_demo_refuses_an_unknown_clip_and_a_file_for_its_folder(tmp_path: Path, capsys):
    for clip in ("foo", "humanoid.urdf"):  # the urdf is a bundled sample, not a clip
        code, _, err = run(["demo", "-o", str(tmp_path / "d"), "--clip", clip], capsys)
        one_line_error(code, err, "walk, run, jump")
    assert not (tmp_path / "d").exists()
    (tmp_path / "plain").write_text("a file")
    code, _, err = run(["demo", "-o", str(tmp_path / "plain")], capsys)
    one_line_error(code, err, "plain", "Not a directory")


def test_empty_data_folders_are_named(tmp_path: Path, capsys):
    (tmp_path / "empty").mkdir()
    code, _, err = run(["ik", "eval", "--data", str(tmp_path / "empty")], capsys)
    one_line_error(code, err, "empty", "nothing to evaluate on: no .bvh files")
    model = tmp_path / "ik"
    shutil.copytree(Path(skelanim.__file__).parent / "ik" / "pretrained", model)
    code, _, err = run(["ik", "fit-corrector", str(model), "--data", str(tmp_path / "empty")], capsys)
    one_line_error(code, err, "empty", "nothing to fit on")
    # a folder of clips in another format is no empty folder: it says what a folder is read for (an audit: a
    # folder of DeepMimic clips was called "an empty folder?")
    (tmp_path / "clips").mkdir()
    shutil.copy(Path(skelanim.__file__).parent / "data" / "samples" / "deepmimic" / "walk.txt", tmp_path / "clips")
    code, _, err = run(["ik", "eval", "--data", str(tmp_path / "clips")], capsys)
    one_line_error(code, err, "clips", "a folder is read for BVH clips")


def test_generate_bounds_its_length_and_temperature(tmp_path: Path, capsys):
    for extra, said in ((["--seconds", "1e9"], "at most 600 s"), (["--content", "walk:400,run:300"], "more than 600 s"),
                        (["--temperature", "inf"], "--temperature")):  # fmt: skip
        argv = ["generate", "-n", "1", "-o", str(tmp_path / "g"), *(["--content", "walk"] if "--content" not in extra else []), *extra]
        code, _, err = run(argv, capsys)
        one_line_error(code, err, said)
    assert not (tmp_path / "g").exists()


@pytest.mark.parametrize("option", ["--content", "--style"])
def test_generate_refuses_an_empty_content_or_style(option: str, tmp_path: Path, capsys):
    """``--style ""`` meant the default style (normal) without a word, and ``--content ""`` was an unknown content."""
    for given in ([option, ""], [f"{option}="], [option, " "]):
        others = ["--content", "walk"] if option == "--style" else []
        code, _, err = run(["generate", "-n", "1", "-o", str(tmp_path / "g"), *others, *given], capsys)
        one_line_error(code, err, f"Invalid value for '{option}': is empty")
    assert not (tmp_path / "g").exists()


@pytest.mark.parametrize("option", ["--content", "--style"])
def test_generate_interpolate_refuses_an_empty_content_or_style(option: str, mocap_files, tmp_path: Path, capsys):
    """With --interpolate, an empty ``--content``/``--style`` meant the files' labels without a word."""
    walk, run_ = mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh", "bandai_namco_1/dataset-1_run_normal_001.bvh"])
    argv = ["generate", "--interpolate", str(walk), "--interpolate", str(run_), "-n", "2", "-o", str(tmp_path / "g"), option, ""]
    code, _, err = run(argv, capsys)
    one_line_error(code, err, f"Invalid value for '{option}': is empty")
    assert not (tmp_path / "g").exists()


def test_unreadable_binary_inputs_say_what_they_are_not(tmp_path: Path, capsys):
    cases = {"empty.glb": b"", "noise.glb": bytes(range(200, 256)) * 4, "cut.glb": b"glTF\x02\x00\x00\x00\x10"}
    said = {"empty.glb": "the file is empty", "noise.glb": "neither a binary glTF", "cut.glb": "cut short"}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        code, _, err = run(["info", str(tmp_path / name)], capsys)
        one_line_error(code, err, name, said[name])
    (tmp_path / "noise.npz").write_bytes(bytes(range(256)))
    code, _, err = run(["ik", "solve", str(tmp_path / "noise.npz"), "-o", str(tmp_path / "x.bvh")], capsys)
    one_line_error(code, err, "noise.npz", "not an .npz archive")
    assert "allow_pickle" not in err and not (tmp_path / "x.bvh").exists()


def test_a_folder_given_as_a_file_is_said_to_be_one(tmp_path: Path, capsys):
    folder = tmp_path / "takes"
    folder.mkdir()
    code, _, err = run(["info", str(folder)], capsys)
    one_line_error(code, err, f"error: {folder}: is a folder; expected a motion file (.bvh")
    code, _, err = run(["convert", str(sample_path("walk")), str(folder)], capsys)
    one_line_error(code, err, f"error: {folder}: is a folder; expected a file to write (.bvh")
    assert not any(folder.iterdir())


def test_stream_names_the_file_whose_skeleton_cannot_be_mapped(tmp_path: Path, capsys):
    import re

    src = tmp_path / "odd.bvh"
    skelanim.save(skelanim.load(sample_path("walk")), src)
    count = iter(range(1000))
    renamed = re.sub(r"^(\s*(?:ROOT|JOINT)) \S+", lambda m: f"{m.group(1)} J{next(count)}", src.read_text(),
                     flags=re.MULTILINE)  # fmt: skip
    src.write_text(renamed)
    code, _, err = run(["stream", str(src), "--host", "127.0.0.1", "--frames", "1"], capsys)
    one_line_error(code, err, f"error: {src}:", "cannot map the skeleton")


@pytest.mark.parametrize("end_site", ["  End Site\n  {\n    OFFSET 0 10 0\n  }\n", ""], ids=["end-site", "no-end-site"])
def test_a_skeleton_of_one_hips_joint_is_said_to_have_too_few_joints(end_site: str, tmp_path: Path, capsys):
    """A BVH of a lone ``ROOT Hips`` was told "no joint found for required canonical joint(s) hips, ..."."""
    src = tmp_path / "hips.bvh"
    src.write_text("HIERARCHY\nROOT Hips\n{\n  OFFSET 0 0 0\n  CHANNELS 6 Xposition Yposition Zposition Zrotation "
                   f"Xrotation Yrotation\n{end_site}}}\nMOTION\nFrames: 2\nFrame Time: 0.033333\n0 90 0 0 0 0\n"
                   "0 91 0 0 0 5\n")  # fmt: skip
    assert skelanim.load(src).skeleton.names == ["Hips"]
    out = tmp_path / "out.bvh"
    for argv in (["retarget", str(src), "--to", str(sample_path("walk")), "-o", str(out)],
                 ["stream", str(src), "--host", "127.0.0.1", "--frames", "1"]):  # fmt: skip
        code, _, err = run(argv, capsys)
        one_line_error(code, err, f"error: {src}: cannot map the skeleton: it has only 1 joint (Hips), and a humanoid "
                                  "mapping needs at least 12")  # fmt: skip
        assert "no joint found" not in err
    assert not out.exists()


def test_stream_names_every_suffix_it_takes(tmp_path: Path, capsys):
    (tmp_path / "take.xyz").write_text("?")
    code, _, err = run(["stream", str(tmp_path / "take.xyz"), "--host", "127.0.0.1", "--frames", "1"], capsys)
    one_line_error(code, err, "take.xyz", ".bvh", ".npz", ".csv")


def test_a_deepmimic_target_clip_is_read(tmp_path: Path, capsys):
    src = tmp_path / "walk.bvh"
    skelanim.save(skelanim.load(sample_path("walk")), src)
    out = tmp_path / "out.bvh"
    code, _, err = run(["retarget", "run", str(src), "--to", str(tmp_path / "missing.txt"), "-o", str(out)], capsys)
    one_line_error(code, err, "missing.txt")
    (tmp_path / "broken.txt").write_text('{"Loop": "wrap"}')
    code, _, err = run(["retarget", "run", str(src), "--to", str(tmp_path / "broken.txt"), "-o", str(out)], capsys)
    one_line_error(code, err, "broken.txt", "Frames")
    assert not out.exists()
    code, _, err = run(["retarget", "run", str(src), "--to", str(sample_path("run")), "-o", str(out)], capsys)
    assert code == 0, err


def test_a_bvh_named_as_a_deepmimic_clip_is_told_so(tmp_path: Path, capsys):
    src = tmp_path / "walk.txt"
    skelanim.save(skelanim.load(sample_path("walk")), tmp_path / "walk.bvh")
    (tmp_path / "walk.bvh").rename(src)
    code, _, err = run(["info", str(src)], capsys)
    one_line_error(code, err, "walk.txt:1: invalid JSON", "reads as a BVH file: name it .bvh")


@pytest.mark.parametrize("argv", [["predict", "x.bvh", "-o", "y.bvh", "--seconds", "nan"],
                                  ["stream", "x.bvh", "--speed=NaN"],
                                  ["generate", "--content", "walk", "-o", "g", "--temperature", "nan"]])
def test_nan_for_a_bounded_option_is_said_to_be_no_number(argv: list[str], capsys):
    code, _, err = run(argv, capsys)
    one_line_error(code, err, "is not a number")
    assert "less than" not in err and "greater than" not in err  # not a bound it would have met


def test_a_device_named_as_a_motion_file_is_refused_not_read_forever(tmp_path: Path, capsys):
    if not Path("/dev/urandom").exists():
        pytest.skip("no /dev/urandom here")
    (tmp_path / "noise.bvh").symlink_to("/dev/urandom")
    code, _, err = run(["info", str(tmp_path / "noise.bvh")], capsys)
    one_line_error(code, err, "noise.bvh", "not a regular file")


def test_a_predictor_on_clips_shorter_than_a_window_is_one_line(tmp_path: Path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    for name in ("walk", "run"):  # 39 and 25 frames at 30 fps: shorter than the 2 s a training window spans
        skelanim.save(skelanim.load(sample_path(name)), data / f"dataset-1_{name}_normal_001.bvh")
    code, _, err = run(["learn", "predict", "train", "--data", str(data), "--split", "none", "-o", str(tmp_path / "m"),
                        "--arch", "mlp", "--no-progress"], capsys)  # fmt: skip
    one_line_error(code, err, "no training clip has the 50 frames a window needs", "the longest has 33")
    assert not (tmp_path / "m").exists()
