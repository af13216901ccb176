"""An output that is another input of the command (a joint mapping, a model folder, a clip to interpolate from) is
refused before the work, as one line, and the input is kept byte for byte; an audit found each of these replaced
without a word (exit 0)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

import skelanim
from skelanim.cli import main

MODEL = Path(skelanim.__file__).parent / "learn" / "pretrained" / "predict_gcn"


def _refused(capsys, args: list[str], kept: list[Path]) -> None:
    before = {p: p.read_bytes() for p in kept}
    assert main([str(a) for a in args]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "is an input of this command" in lines[0], lines
    assert all(p.read_bytes() == data for p, data in before.items())


def test_a_joint_mapping_is_not_replaced_by_the_output(mocap_files, tmp_path, capsys):
    (cmu,) = mocap_files(["cmu_cgspeed_mb/01_01.bvh"])
    mapping = tmp_path / "map.json"
    mapping.write_text('{"hips": "Hips"}')
    bandai = mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh"])[0]
    _refused(capsys, ["retarget", cmu, "--to", bandai, "--map", mapping, "-o", mapping], [mapping])
    _refused(capsys, ["retarget", cmu, "--to", bandai, "--target-map", mapping, "-o", mapping], [mapping])
    _refused(capsys, ["predict", cmu, "--retarget", "--map", mapping, "-o", mapping], [mapping])


def test_a_model_folder_is_not_replaced_by_its_shipped_copy_or_an_ensemble(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(MODEL, a)
    shutil.copytree(MODEL, b)
    files = [a / "model.safetensors", a / "config.json"]
    _refused(capsys, ["learn", "ship", a, a], files)
    _refused(capsys, ["learn", "ship", a, tmp_path / "b" / ".." / "a"], files)
    _refused(capsys, ["learn", "predict", "combine", a, b, "-o", a], files)


@pytest.mark.parametrize("second", ["interp_02.bvh", "other.bvh"])
def test_clips_to_interpolate_from_are_not_overwritten_by_the_steps(mocap_files, tmp_path, capsys, second):
    walk, run = mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh", "bandai_namco_1/dataset-1_run_normal_001.bvh"])
    first, other = tmp_path / "interp_00.bvh", tmp_path / second
    shutil.copy(walk, first)
    shutil.copy(run, other)
    args = ["generate", "--interpolate", first, "--interpolate", other, "--content", "walk", "--style", "normal",
            "-n", "3", "-o", tmp_path]
    _refused(capsys, args, [first, other])


def test_torchs_out_of_memory_is_one_line_and_other_runtime_errors_are_not_hidden(monkeypatch, capsys):
    """torch reports an allocation it cannot make as a RuntimeError, not a MemoryError (an audit's ``generate -n
    100000`` and ``convert --fps 10000`` of a long clip printed a traceback); any other RuntimeError is a bug to see."""
    from skelanim import cli

    def out_of_memory(**_):
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:121] DefaultCPUAllocator: can't allocate memory: you "
                           "tried to allocate 81920000000 bytes. Error code 12 (Cannot allocate memory)")  # fmt: skip

    monkeypatch.setattr(cli, "app", out_of_memory)
    assert main(["generate"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: not enough memory"), lines

    def bug(**_):
        raise RuntimeError("shape '[2, 3]' is invalid for input of size 5")

    monkeypatch.setattr(cli, "app", bug)
    with pytest.raises(RuntimeError, match="is invalid"):
        main(["generate"])


def test_evaluate_names_a_motion_without_height(tmp_path, capsys):
    """A clip whose joints all lie at one level has no height, and every length metric is a fraction of it: one
    line naming the file (it was a ZeroDivisionError traceback)."""
    flat = tmp_path / "flat.bvh"
    flat.write_text("HIERARCHY\nROOT Hips\n{\nOFFSET 0 0 0\nCHANNELS 0\nEnd Site\n{\nOFFSET 0 0 0\n}\n}\n"
                    "MOTION\nFrames: 3\nFrame Time: 0.1\n\n\n\n")  # fmt: skip
    assert main(["evaluate", str(flat), str(flat)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {flat}: the motion has no height"), lines


@pytest.mark.parametrize("args", [
    ["learn", "predict", "train", "--lr", "nan"], ["learn", "recognize", "train", "--lr", "-1"],
    ["learn", "generate", "train", "--lr", "inf"], ["learn", "generate", "train", "--gan-lr", "-1"], ["ik", "train", "--lr", "0"], ["retarget", "train", "--lr", "nan"],
    ["generate", "--content", "walk", "--seed", "99999999999999999999"], ["learn", "predict", "train", "--seed", "-1"],
    ["learn", "predict", "train", "--arch", "gcn", "--gcn-pad", "bogus"],
    # options of another architecture, dropped without a word before (an audit)
    ["learn", "predict", "train", "--arch", "gcn", "--attention", "64"], ["learn", "predict", "train", "--arch", "mlp", "--anchor"],
    ["learn", "predict", "train", "--arch", "rnn", "--gcn-observed", "25"], ["learn", "recognize", "train", "--arch", "cnn", "--adaptive"],
])  # fmt: skip
def test_a_learning_rate_seed_or_pad_out_of_range_is_a_usage_error(tmp_path, capsys, args):
    """Each was a traceback (or, ``--lr inf``, a NaN model marked best) before any check; now one usage line."""
    needs_data = args[0] in ("learn", "ik") and args[-2] != "--content"
    extra = ["--data", str(tmp_path), "-o", str(tmp_path / "out")] if needs_data else ["-o", str(tmp_path / "out")]
    assert main([*args, *extra]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and args[-2] in lines[0], lines
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("args", "said"), [
    (["ik", "train", "--hidden", "5"], "cannot be split over 4 attention heads"),
    (["retarget", "train", "--families", "bogus"], "unknown family 'bogus'"),
    (["retarget", "train", "--window", "100000", "--max-steps", "1"], "no training clip of 100000 frames"),
])  # fmt: skip
def test_training_options_that_cannot_work_are_one_line(mocap_dir, tmp_path, capsys, args, said):
    """An audit's tracebacks (a ValueError, a KeyError and a RuntimeError from deep in the training code)."""
    extra = ["--data", str(mocap_dir / "bandai_namco_1")] if args[0] == "ik" else ["--data", str(mocap_dir)]
    assert main([*args, *extra, "-o", str(tmp_path / "out"), "--no-progress"]) == 2
    lines = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("warning:")]
    assert len(lines) == 1 and lines[0].startswith("error:") and said in lines[0], lines  # (warnings: files left out)


def test_retarget_train_on_another_folder_says_the_layout_it_needs(tmp_path, capsys):
    """A folder of one's own motion named a file of the shared mocap folder as missing, as if the user had given it."""
    (tmp_path / "own").mkdir()
    assert main(["retarget", "train", "--data", str(tmp_path / "own"), "-o", str(tmp_path / "out"), "--no-progress"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {tmp_path / 'own'}: not the shared mocap folder's layout")
    assert "bandai_namco_1, cmu_cgspeed_max, cmu_cgspeed_mb, cmu_iclone_ccrig, deepmimic, xia_style" in lines[0]
    assert not (tmp_path / "out").exists()


def test_errors_about_one_of_several_files_name_it(mocap_files, tmp_path, capsys):
    """``recognize`` of a walk and a clip whose left and right joints stand on the up axis (no facing), and a
    skeleton the mapping cannot read retargeted onto the DeepMimic humanoid: the error names the file (an audit
    found both anonymous)."""
    walk, urdf = mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh", "deepmimic/humanoid.urdf"])
    still = skelanim.load(walk)[:40]
    rot = torch.zeros_like(still.rotations)
    rot[..., 0] = 1.0  # Bandai's zero pose (every bone along +X) at the origin: no facing
    lying = tmp_path / "lying.bvh"
    zero = torch.zeros_like(still.joint_translations)  # every channel 0, position channels included
    skelanim.save(still.copy(rotations=rot, root_positions=zero[:, 0], joint_translations=zero), lying)
    assert main(["recognize", str(walk), str(lying)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {lying}: frame 0: facing direction undefined"), lines
    snake = tmp_path / "snake.bvh"
    snake.write_text("HIERARCHY\nROOT s0\n{\nOFFSET 0 0 0\nCHANNELS 3 Xrotation Yrotation Zrotation\nJOINT s1\n{\n"
                     "OFFSET 0 1 0\nCHANNELS 3 Xrotation Yrotation Zrotation\nEnd Site\n{\nOFFSET 0 1 0\n}\n}\n}\n"
                     "MOTION\nFrames: 2\nFrame Time: 0.1\n0 0 0 0 0 0\n0 0 0 0 0 0\n")  # fmt: skip
    assert main(["retarget", str(snake), "--to", str(urdf), "-o", str(tmp_path / "out.txt")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {snake}: cannot map the skeleton"), lines


def test_a_model_of_another_method_and_no_methods_at_all_are_refused(mocap_files, tmp_path, capsys):
    """``predict --method rnn -m <a DCT-GCN>`` ran the DCT-GCN and said "method rnn"; ``retarget eval --methods ,``
    evaluated nothing and exited 0 (an audit's findings)."""
    (walk,) = mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh"])
    out = tmp_path / "p.bvh"
    assert main(["predict", str(walk), "--method", "rnn", "-m", str(MODEL), "-o", str(out)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "is a gcn predictor, not rnn" in lines[0] and not out.exists()
    assert main(["retarget", "eval", "--methods", ","]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "--methods: name one or more" in lines[0]


def test_ship_refuses_a_prefix_that_drops_nothing_and_a_file_for_a_folder(tmp_path, capsys):
    """``--drop`` with a mistyped prefix shipped everything without a word; a file as DEST said only "File exists"."""
    assert main(["learn", "ship", str(MODEL), str(tmp_path / "ship"), "--drop", "disc."]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "no tensor's name starts with 'disc.'" in lines[0] and not (tmp_path / "ship").exists()
    (tmp_path / "afile").write_text("x")
    assert main(["learn", "ship", str(MODEL), str(tmp_path / "afile")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "is a file; a model is written as a folder" in lines[0]
    assert main(["learn", "ship", str(MODEL), str(tmp_path / "ship"), "--drop", "net."]) == 0  # a real prefix


def test_an_absurd_thread_count_is_a_usage_error(tmp_path, capsys):
    """``--threads 100000`` reached OpenMP, which failed with "libgomp: Out of memory" and exit 1 (an audit's)."""
    assert main(["ik", "solve", str(tmp_path / "x.npz"), "-o", str(tmp_path / "y.bvh"), "--threads", "100000"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "'--threads'" in lines[0] and "1024" in lines[0]


def test_an_error_inside_a_progress_bar_gets_a_line_of_its_own(monkeypatch, capsys):
    """A failure while a progress bar is drawn (``learn * eval``) printed ``error:`` after the bar's last state on the
    same line; the bar is now closed first."""
    import sys

    from tqdm import tqdm

    from skelanim import cli
    from skelanim.errors import FormatError

    def fails_mid_bar(**_):
        bar = tqdm(total=10, file=sys.stderr, desc="windows")
        bar.update(3)
        raise FormatError("broken frame", path="x.bvh")

    monkeypatch.setattr(cli, "app", fails_mid_bar)
    assert main(["learn"]) == 2
    err = capsys.readouterr().err
    assert err.endswith("\n") and err.splitlines()[-1] == "error: x.bvh: broken frame", repr(err[-200:])


def test_a_scale_that_overflows_is_blamed_on_the_option(mocap_files, tmp_path, capsys):
    """``convert --scale 1e308`` said the output could not hold a non-finite value (an audit's); the option is named."""
    (walk,) = mocap_files(["cmu_cgspeed_mb/01_01.bvh"])
    assert main(["convert", str(walk), str(tmp_path / "s.bvh"), "--scale", "1e308"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "--scale" in lines[0] and "overflows" in lines[0] and not (tmp_path / "s.bvh").exists()


def test_evaluate_refuses_a_label_pattern_without_content(tmp_path, capsys):
    """``--labels '(?P<other>x)'`` was taken, and 'recognised' silently left out; evaluate reads only the content."""
    assert main(["evaluate", str(tmp_path), str(tmp_path), "--labels", "(?P<other>x)"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "no group named content" in lines[0]


@pytest.mark.parametrize(
    ("command", "folders"),
    [
        (["ik", "train"], [""]),
        (["retarget", "train"], [""]),
        (["learn", "recognize", "train"], [""]),
        (["learn", "predict", "train"], [""]),
        (["learn", "generate", "train"], ["", "vae"]),
    ],
)
def test_a_training_run_does_not_replace_a_trained_model_or_an_interrupted_run(tmp_path, capsys, command, folders):
    """Every training command refuses, before it reads any data, a new run into a folder holding a model or a run's
    state (a stage folder of a two-stage run too), naming ``--overwrite``, and ``--resume`` where a state is there to
    resume from (a model alone: a run stopped before its first state, which ``--resume`` refuses); the folder is kept."""
    for held in ("config.json", "train_state.safetensors"):
        for folder in folders:
            out = tmp_path / held / folder
            out.mkdir(parents=True)
            (out / held).write_bytes(b"kept")
            args = [*command, "--data", str(tmp_path / "no such data"), "-o", str(tmp_path / held)]
            assert main(args) == 2
            lines = capsys.readouterr().err.strip().splitlines()
            assert len(lines) == 1 and "--overwrite replaces" in lines[0], lines
            assert ("--resume continues" in lines[0]) == (held == "train_state.safetensors"), lines
            assert (out / held).read_bytes() == b"kept"
            shutil.rmtree(tmp_path / held)
