"""What a CLI audit found inconsistent between the tool commands (retarget, ik, recognize, evaluate) and their
siblings: ``retarget eval/train`` had kept only the last ``--data``/``--methods`` and reported a file given as
``--data`` as a path inside it; ``recognize`` sorted and merged its inputs and named them ``path`` alone; ``ik eval
--json`` left out the height and noise its text prints; ``ik export``/``fit-corrector`` took no ``-m/--model``;
``--threads`` was refused by the inference commands; ``retarget export``'s help and report did not name its method
(nkn by default, where ``retarget run``'s is copy)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch

import skelanim
from skelanim.cli import main

WALK = "bandai_namco_1/dataset-1_walk_normal_001.bvh"
RUN = "bandai_namco_1/dataset-1_run_normal_001.bvh"
CMU = "cmu_cgspeed_mb/01_01.bvh"


def _run(argv: list[Any], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _one_line_error(argv: list[Any], capsys) -> str:
    code, _, err = _run(argv, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


@pytest.fixture(scope="module")
def short(mocap_files, tmp_path_factory) -> dict[str, Path]:
    """A Bandai walk and run (60 frames each) and CMU 01_01 (20 frames), written short."""
    folder = tmp_path_factory.mktemp("short")
    out = {}
    for name, path, frames in (("walk", WALK, 60), ("run", RUN, 60), ("cmu", CMU, 20)):
        out[name] = folder / f"{name}.bvh"
        skelanim.save(skelanim.load(mocap_files([path])[0])[:frames], out[name])
    return out


def test_recognize_shows_progress_over_a_long_inputs_windows(mocap_files, tmp_path, capsys):
    """More windows than one batch of 256 (a long take, here a walk read every frame): a bar on stderr, none with
    --no-progress, the same answer either way (a 28-minute take had run for minutes without a word)."""
    walk = tmp_path / "walk.bvh"
    one = skelanim.load(mocap_files([WALK])[0])
    skelanim.save(type(one).concatenate([one, one, one]), walk)  # 585 frames: about 400 windows at 25 fps
    code, out, err = _run(["recognize", walk, "--stride", "1", "--json"], capsys)
    assert code == 0 and "recognise" in err, err
    code, quiet_out, quiet = _run(["recognize", walk, "--stride", "1", "--json", "--no-progress"], capsys)
    assert code == 0 and "recognise" not in quiet and quiet_out == out


# ------------------------------------------------------------------ 1. retarget eval/train: --data, --methods
@pytest.fixture
def fake_eval(monkeypatch) -> list[dict[str, Any]]:
    """``retarget eval``'s library call replaced by one that records its arguments (no data is read)."""
    import skelanim.retarget.evaluate as module

    calls: list[dict[str, Any]] = []

    def fake(mocap, **kwargs):
        calls.append({"mocap": Path(mocap), **kwargs})
        return {"methods": kwargs["methods"]}

    monkeypatch.setattr(module, "evaluate", fake)
    return calls


@pytest.fixture
def fake_train(monkeypatch) -> list[dict[str, Any]]:
    import skelanim.retarget.train as module

    calls: list[dict[str, Any]] = []

    def fake(mocap, out, **kwargs):
        calls.append({"mocap": Path(mocap), "out": Path(out)})
        return {"best": None, "parameters": 0, "steps": 0, "seconds": 0.0}

    monkeypatch.setattr(module, "train", fake)
    return calls


def test_retarget_eval_methods_repeated_or_comma_separated_are_the_same_list(fake_eval, tmp_path, capsys):
    for methods in (
        ["--methods", "copy,ik"],
        ["--methods", "copy", "--methods", "ik"],
        ["--methods", "copy,", "--methods", ",ik"],
    ):
        code, out, err = _run(["retarget", "eval", "--data", tmp_path, *methods, "--json"], capsys)
        assert code == 0, err
        assert json.loads(out)["methods"] == ["copy", "ik"]
    assert [c["methods"] for c in fake_eval] == [["copy", "ik"]] * 3
    assert all(c["mocap"] == tmp_path for c in fake_eval)
    # the first of two is checked too (it had been dropped without a word)
    line = _one_line_error(["retarget", "eval", "--data", tmp_path, "--methods", "nope", "--methods", "copy"], capsys)
    assert "'nope'" in line and "--methods" in line
    assert len(fake_eval) == 3


@pytest.mark.parametrize("command", ["eval", "train"])
def test_retarget_a_first_data_folder_is_not_dropped(command, fake_eval, fake_train, tmp_path, capsys):
    missing = tmp_path / "no-mocap-here"
    out = ["-o", tmp_path / "model"] if command == "train" else ["--json"]
    line = _one_line_error(["retarget", command, "--data", missing, "--data", tmp_path, *out], capsys)
    assert str(missing) in line and "--data" in line
    assert not fake_eval and not fake_train and not (tmp_path / "model").exists()
    code, _, err = _run(["retarget", command, "--data", tmp_path, *out], capsys)  # one folder: as before
    assert code == 0, err
    assert [c["mocap"] for c in fake_eval + fake_train] == [tmp_path]


@pytest.mark.parametrize("command", ["eval", "train"])
def test_retarget_a_file_as_data_is_refused_naming_it(command, fake_eval, fake_train, tmp_path, capsys):
    """``retarget train --data FILE.bvh`` had said "FILE.bvh/bandai_namco_1/...: Not a directory"."""
    file = tmp_path / "clip.bvh"
    file.write_text("HIERARCHY\n")
    out = ["-o", tmp_path / "model"] if command == "train" else []
    line = _one_line_error(["retarget", command, "--data", file, *out], capsys)
    assert line.startswith(f"error: {file}: ") and "folder" in line and "bandai_namco_1" not in line
    assert not fake_eval and not fake_train and not (tmp_path / "model").exists()


# ------------------------------------------------------------------ 2. recognize: order, repeats, "file"
def test_recognize_reports_its_inputs_in_order_with_repeats(short, tmp_path, capsys):
    folder = tmp_path / "clips"
    folder.mkdir()
    shutil.copy(short["walk"], folder / "z_walk.bvh")
    shutil.copy(short["run"], folder / "a_run.bvh")
    given = [short["walk"], short["run"], short["walk"], folder]
    expected = [str(short["walk"]), str(short["run"]), str(short["walk"]), str(folder / "a_run.bvh"),
                str(folder / "z_walk.bvh")]  # fmt: skip
    code, out, err = _run(["recognize", *given, "--json"], capsys)
    assert code == 0, err
    files = json.loads(out)["files"]
    assert [f["path"] for f in files] == expected
    assert all(f["file"] == f["path"] for f in files)
    assert files[0]["top"] == files[2]["top"]  # the same file twice: the same answer
    code, out, err = _run(["recognize", *given], capsys)
    assert code == 0, err
    assert [line.split(": ")[0] for line in out.strip().splitlines()] == expected


# ------------------------------------------------------------------ 3. ik eval --json: height, noise
def test_ik_eval_json_has_the_height_and_noise_its_text_prints(mocap_files, capsys):
    from skelanim.ik.solve import IKModel

    (walk,) = mocap_files([WALK])
    argv = ["ik", "eval", "--data", walk, "--max-frames", 8, "--methods", "swing_rest", "--noise", 0.01]
    code, text, err = _run(argv, capsys)
    assert code == 0, err
    head = re.match(r"(\d+) frames, height ([\d.]+), input noise ([\d.]+)% of height", text)
    assert head, text
    code, out, err = _run([*argv, "--json"], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert {"frames", "methods", "height", "noise"} <= set(report)
    assert report["frames"] == int(head[1])
    assert f"{report['height']:.4g}" == head[2]
    assert report["height"] == pytest.approx(IKModel.load(None).rig.height)  # the shipped model's, in its units
    assert report["noise"] == pytest.approx(0.01) and 100 * report["noise"] == pytest.approx(float(head[3]))


def test_ik_eval_help_gives_the_units(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    code, out, _ = _run(["ik", "eval", "--help"], capsys)
    text = " ".join(out.replace("│", " ").split())
    assert code == 0 and "skeleton's units" in text and "mpjpe_pct_height" in text and "percent" in text, text


# ------------------------------------------------------------------ 4. ik export / fit-corrector: -m/--model
@pytest.fixture(scope="module")
def other_ik_model(tmp_path_factory) -> Path:
    """The shipped IK model with its weights changed a little (so that the shipped one is not read in its place)."""
    from safetensors.torch import load_file, save_file

    from skelanim.ik.solve import DEFAULT_MODEL

    folder = tmp_path_factory.mktemp("ik") / "model"
    shutil.copytree(DEFAULT_MODEL, folder)
    weights = load_file(folder / "model.safetensors")
    generator = torch.Generator().manual_seed(0)
    for key, value in weights.items():
        if value.is_floating_point() and value.dim() == 2:
            weights[key] = value + 0.05 * torch.randn(value.shape, generator=generator, dtype=value.dtype)
    save_file(weights, folder / "model.safetensors")
    return folder


def test_ik_export_takes_the_model_as_m_or_positional(other_ik_model, tmp_path, capsys):
    from skelanim.ik.onnx import OrtRunner
    from skelanim.ik.solve import IKModel

    outs = {}
    for name, form in (("positional", [other_ik_model]), ("m", ["-m", other_ik_model]),
                       ("model", ["--model", other_ik_model]), ("shipped", [])):  # fmt: skip
        outs[name] = tmp_path / f"{name}.onnx"
        code, _, err = _run(["ik", "export", *form, "-o", outs[name]], capsys)
        assert code == 0, err
    probe = IKModel.load(other_ik_model).probe_positions(8).float().numpy()
    answers = {name: OrtRunner(path)(probe) for name, path in outs.items()}
    assert (answers["m"] == answers["positional"]).all() and (answers["model"] == answers["positional"]).all()
    assert abs(answers["m"] - answers["shipped"]).max() > 1e-3  # the folder named, not the shipped model
    line = _one_line_error(["ik", "export", other_ik_model, "-m", other_ik_model, "-o", tmp_path / "both.onnx"], capsys)
    assert "MODEL" in line and "-m/--model" in line
    assert not (tmp_path / "both.onnx").exists()


def test_ik_fit_corrector_takes_the_model_as_m_or_positional(other_ik_model, short, tmp_path, capsys):
    from safetensors.torch import load_file

    folders = {name: tmp_path / name for name in ("positional", "m")}
    reports = {}
    for name, folder in folders.items():
        shutil.copytree(other_ik_model, folder)
        (folder / "refine.safetensors").unlink()
        form = [folder] if name == "positional" else ["-m", folder]
        code, out, err = _run(["ik", "fit-corrector", *form, "--data", short["walk"]], capsys)
        assert code == 0, err
        reports[name] = {k: v for k, v in json.loads(out).items() if k != "seconds"}
    assert reports["m"] == reports["positional"]
    fitted = {name: load_file(folder / "refine.safetensors") for name, folder in folders.items()}
    assert fitted["m"].keys() == fitted["positional"].keys()
    assert all(torch.equal(fitted["m"][k], fitted["positional"][k]) for k in fitted["m"])
    for form in ([folders["m"], "-m", folders["m"]], []):  # both forms, or neither: one line
        line = _one_line_error(["ik", "fit-corrector", *form, "--data", short["walk"]], capsys)
        assert "-m/--model" in line


def test_ik_fit_corrector_no_progress_draws_no_bar(other_ik_model, short, tmp_path, capsys):
    """A CLI review: ``ik fit-corrector`` drew its bars on stderr with no way to switch them off; ``--no-progress``
    leaves stderr empty and fits the same corrector."""
    from safetensors.torch import load_file

    fitted = {}
    for flag in ("--progress", "--no-progress"):
        folder = tmp_path / flag.strip("-")
        shutil.copytree(other_ik_model, folder)
        (folder / "refine.safetensors").unlink()
        code, _, err = _run(["ik", "fit-corrector", str(folder), "--data", short["walk"], flag], capsys)
        assert code == 0, err
        assert (err.strip() == "") == (flag == "--no-progress"), err[-300:]
        fitted[flag] = load_file(folder / "refine.safetensors")
    assert all(torch.equal(fitted["--progress"][k], fitted["--no-progress"][k]) for k in fitted["--progress"])


# ------------------------------------------------------------------ 5. --threads on the inference commands
@pytest.fixture
def thread_calls(monkeypatch) -> list[int]:
    calls: list[int] = []
    monkeypatch.setattr(torch, "set_num_threads", lambda n: calls.append(int(n)))
    return calls


def test_threads_is_taken_by_the_inference_commands(short, thread_calls, tmp_path, capsys):
    commands = {
        "recognize": ["recognize", short["walk"], "--json"],
        "evaluate": ["evaluate", short["walk"], short["run"], "--json"],
        "retarget run": ["retarget", "run", short["walk"], "--to", short["cmu"], "-o", tmp_path / "r.bvh"],
        "retarget export": ["retarget", "export", short["walk"], "--to", short["cmu"], "-o", tmp_path / "r.onnx",
                            "--method", "copy"],
    }  # fmt: skip
    for name, argv in commands.items():
        code, plain, err = _run(argv, capsys)
        assert code == 0, f"{name}: {err}"
        assert thread_calls == [], name  # the default leaves torch's threads alone
        code, threaded, err = _run([*argv, "--threads", "1"], capsys)
        assert code == 0, f"{name}: {err}"
        assert thread_calls == [1], name
        thread_calls.clear()
        if name in ("recognize", "retarget run"):
            assert threaded == plain, name
    line = _one_line_error(["recognize", short["walk"], "--threads", "0"], capsys)
    assert "--threads" in line


# ------------------------------------------------------------------ 6. retarget run/export help, export's method
def test_retarget_help_names_the_to_option_and_exports_default_method(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    code, out, _ = _run(["retarget", "run", "--help"], capsys)
    assert code == 0 and not re.search(r"\bTARGET\b", out), out  # no such name: the option is --to
    code, out, _ = _run(["retarget", "export", "--help"], capsys)
    text = " ".join(out.replace("│", " ").split())
    assert code == 0 and not re.search(r"\bTARGET\b", out), out
    assert "default nkn" in text and "retarget run" in text and "copy" in text, text


def test_retarget_export_says_which_method_it_wrote(short, tmp_path, capsys):
    for extra, method in (([], "nkn"), (["--method", "copy"], "copy")):
        out = tmp_path / f"{method}.onnx"
        code, stdout, err = _run(["retarget", "export", short["walk"], "--to", short["cmu"], "-o", out, *extra], capsys)
        assert code == 0, err
        assert stdout.startswith(f"wrote {out} (method {method}, "), stdout


# ------------------------------------------------------------------ 7. the command listings of --help
#: Most characters of a command's summary (its help's first paragraph), which ``--help`` lists beside its name:
#: three lines of the listing's width at most (before, some ran to eight).
SUMMARY_CHARACTERS = 150


def _commands(command, path: tuple[str, ...] = ()):
    """Every leaf command under a click command, with its path of names."""
    subcommands = getattr(command, "commands", None)
    if not subcommands:
        yield path, command
        return
    for name, sub in subcommands.items():
        yield from _commands(sub, (*path, name))


def test_every_command_summary_is_short_enough_to_list():
    """The first paragraph of each command's help is the line ``--help`` lists for it; details go after a blank
    line, where only the command's own ``--help`` shows them."""
    import typer

    from skelanim.cli import app

    commands = list(_commands(typer.main.get_command(app)))
    assert len(commands) > 30  # every group was walked (35 commands when this was written)
    long = {" ".join(path): len(" ".join((command.help or "").strip().split("\n\n")[0].split()))
            for path, command in commands}
    assert all(long.values()), [name for name, size in long.items() if not size]  # every command has a summary
    assert {name: size for name, size in long.items() if size > SUMMARY_CHARACTERS} == {}
