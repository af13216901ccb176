"""The learning commands agree with their siblings (a CLI review's findings): a model folder written by ``learn
predict calibrate`` or ``learn generate fit-prior`` is refused where it holds another model (as ``learn ship`` and the
training commands refuse); ``--json`` carries the counts the text prints; the output and model folders take the
spelling of the other commands (``-o/--out``, ``-m/--model``) besides their positional one; ``generate``, ``predict``
and ``fit-prior`` take ``--threads`` and ``--progress/--no-progress``; a mistyped ``--split`` is refused before any
file is read; ``predict --help`` names its argument as its usage line does."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import torch

import skelanim
from skelanim.cli import main
from skelanim.learn.common import pretrained_dir
from skelanim.nn.checkpoint import load_model_files

NAMES = ["bandai_namco_1/dataset-1_walk_angry_001.bvh", "bandai_namco_1/dataset-1_run_angry_001.bvh"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One clip cache for the module's commands (never the user's)."""
    mp = pytest.MonkeyPatch()
    folder = tmp_path_factory.mktemp("consistency-cache")
    mp.setenv("SKELANIM_CACHE", str(folder))
    yield folder
    mp.undo()


@pytest.fixture
def data(mocap_files, cache) -> list[str]:
    """``--data`` arguments for two real Bandai-Namco files (a walk and a run)."""
    return [arg for path in mocap_files(NAMES) for arg in ("--data", str(path))]


def _copy_model(name: str, dest: Path) -> Path:
    shutil.copytree(pretrained_dir(name), dest)
    for path in [dest, *dest.iterdir()]:
        path.chmod(path.stat().st_mode | 0o200)  # the installed copy may be read-only
    return dest


def _bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _run(capsys, argv: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _one_error(code: int, out: str, err: str, *needles: str) -> str:
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _calibrate(model: Path, data: list[str], out: Path, *extra: str) -> list[str]:
    return ["learn", "predict", "calibrate", str(model), *data, "--split", "none", "--stride", "25", "-o", str(out),
            *extra]  # fmt: skip


def _fit_prior(model: Path, data: list[str], out: Path, *extra: str) -> list[str]:
    return ["learn", "generate", "fit-prior", str(model), *data, "--split", "none", "-o", str(out), "--no-progress",
            *extra]  # fmt: skip


# ------------------------------------------------------------------------------------- 1. a model folder is kept
@pytest.mark.parametrize("command", ["calibrate", "fit-prior"])
def test_a_folder_holding_another_model_is_refused_without_overwrite(command, data, tmp_path, capsys):
    """The review's ``-o`` onto a recogniser's folder: the recogniser had been replaced (exit 0) and
    ``--overwrite`` was an unknown option. Now one line, the folder byte for byte as it was; ``--overwrite`` replaces
    it with a model of the command's kind."""
    from skelanim.learn.generate import Generator
    from skelanim.learn.predict import Predictor

    model = pretrained_dir("predict_rnn" if command == "calibrate" else "generate")
    args = _calibrate if command == "calibrate" else _fit_prior
    other = _copy_model("recognize", tmp_path / "other")
    before = _bytes(other)
    line = _one_error(*_run(capsys, args(model, data, other)), "--overwrite")
    assert line.startswith(f"error: {other}: the folder holds a model")
    assert _bytes(other) == before
    code, _, err = _run(capsys, args(model, data, other, "--overwrite"))
    assert code == 0, err
    assert _bytes(other) != before
    (Predictor if command == "calibrate" else Generator).load(other)  # a model of the command's kind now


@pytest.mark.parametrize("command", ["calibrate", "fit-prior"])
def test_the_model_folder_itself_may_be_the_output(command, data, tmp_path, capsys):
    """Their help says OUT may be MODEL: that needs no ``--overwrite``, however the path is spelled."""
    model = _copy_model("predict_rnn" if command == "calibrate" else "generate", tmp_path / "m")
    args = _calibrate if command == "calibrate" else _fit_prior
    for out in (model, tmp_path / "m" / ".." / "m"):
        code, _, err = _run(capsys, args(model, data, out))
        assert code == 0, err
    assert (model / "config.json").is_file() and not (tmp_path / "m" / "m").exists()


# ------------------------------------------------------------------------------------- 2. --json has the counts
def test_recognize_eval_json_has_the_counts_the_text_prints(data, capsys):
    base = ["learn", "recognize", "eval", *data, "--split", "none"]
    code, text, err = _run(capsys, base)
    assert code == 0, err
    files, windows = map(int, re.fullmatch(r"(\d+) files, (\d+) windows", text.splitlines()[0]).groups())
    assert files == len(NAMES)
    code, out, err = _run(capsys, [*base, "--json"])
    assert code == 0, err
    obj = json.loads(out)
    assert {"top1_files", "top1_windows", "per_class", "baseline_cnn"} <= set(obj)  # issue #5's keys stay
    assert (obj["files"], obj["windows"]) == (files, windows)
    assert isinstance(obj["files"], int) and isinstance(obj["windows"], int)


def test_predict_eval_json_has_the_windows_and_its_help_the_units(data, capsys):
    base = ["learn", "predict", "eval", *data, "--split", "none", "--stride", "25"]
    code, text, err = _run(capsys, base)
    assert code == 0, err
    lines = text.splitlines()
    windows = int(re.match(r"(\d+) windows; % of skeleton height", lines[0]).group(1))
    code, out, err = _run(capsys, [*base, "--json"])
    assert code == 0, err
    obj = json.loads(out)
    assert {"horizons_ms", "methods"} <= set(obj) and obj["windows"] == windows
    # the JSON holds fractions of the height: the text's table prints them times 100
    for key in ("mpjpe", "mpjpe_global"):
        row = next(line for line in lines if line.split()[:2] == ["rnn", key])
        assert [float(x) for x in row.split()[2:]] == pytest.approx([100 * x for x in obj["methods"]["rnn"][key]],
                                                                     abs=0.006)  # fmt: skip
    code, out, _ = _run(capsys, ["learn", "predict", "eval", "--help"])
    said = " ".join(out.replace("│", " ").split())
    assert code == 0 and "fraction of" in said and "root-relative" in said and "mpjpe_global" in said
    assert "windows" in said.split("--json", 1)[1]


# ------------------------------------------------------------------------------------- 3. -o / -m spellings
def test_ship_takes_out_as_well_as_dest(tmp_path, capsys):
    model = pretrained_dir("predict_gcn")
    assert _run(capsys, ["learn", "ship", model, tmp_path / "a"])[0] == 0
    code, _, err = _run(capsys, ["learn", "ship", model, "-o", tmp_path / "b"])
    assert code == 0, err
    assert _bytes(tmp_path / "b") == _bytes(tmp_path / "a")
    code, _, err = _run(capsys, ["learn", "ship", model, "--out", tmp_path / "c"])
    assert code == 0 and _bytes(tmp_path / "c") == _bytes(tmp_path / "a")
    _one_error(*_run(capsys, ["learn", "ship", model, tmp_path / "d", "-o", tmp_path / "e"]), "--out", "DEST")
    _one_error(*_run(capsys, ["learn", "ship", model]), "--out", "DEST")
    assert not (tmp_path / "d").exists() and not (tmp_path / "e").exists()
    # the refusal of a folder holding a model names the spelling given
    _one_error(*_run(capsys, ["learn", "ship", model, "-o", tmp_path / "a"]), "holds a model")


@pytest.mark.parametrize("command", ["calibrate", "fit-prior"])
def test_the_model_may_be_named_with_m(command, data, tmp_path, capsys):
    model = pretrained_dir("predict_rnn" if command == "calibrate" else "generate")
    args = _calibrate if command == "calibrate" else _fit_prior
    assert _run(capsys, args(model, data, tmp_path / "a"))[0] == 0
    for flag, out in (("-m", tmp_path / "b"), ("--model", tmp_path / "c")):
        argv = args(model, data, out)
        argv.remove(str(model))
        code, _, err = _run(capsys, [*argv, flag, str(model)])
        assert code == 0, err
        (ta, ca), (tb, cb) = load_model_files(tmp_path / "a"), load_model_files(out)
        assert set(ta) == set(tb) and all(torch.equal(ta[k], tb[k]) for k in ta)
        for config in (ca, cb):  # the command line is recorded; the rest is the same
            config.get("training", {}).get("amplitude_calibration", {}).pop("command", None)
        assert ca == cb
    argv = args(model, data, tmp_path / "d")
    _one_error(*_run(capsys, [*argv, "-m", str(model)]), "MODEL", "--model")
    argv.remove(str(model))
    _one_error(*_run(capsys, argv), "MODEL", "--model")
    assert not (tmp_path / "d").exists()


# ------------------------------------------------------------------------------------- 4. --threads, --progress
@pytest.fixture
def threads():
    """torch's thread count set to 3 for the test (a command's ``--threads 1`` must change it), then restored."""
    was = torch.get_num_threads()
    torch.set_num_threads(3)
    yield
    torch.set_num_threads(was)


def test_generate_takes_threads_and_no_progress(threads, tmp_path, capsys):
    base = ["generate", "--content", "walk", "-n", "1", "--seconds", "3"]  # two windows: the bar has steps
    code, _, err = _run(capsys, [*base, "-o", tmp_path / "a"])
    assert code == 0 and "windows" in err  # the bar is on by default
    code, out, err = _run(capsys, [*base, "-o", tmp_path / "b", "--threads", "1", "--no-progress"])
    assert code == 0 and err == "" and out.startswith("wrote 1 BVH files"), err
    assert torch.get_num_threads() == 1
    # the same motion, to the rounding of sums taken in another order: another thread count may split a product's
    # sums otherwise (oneDNN on AVX-512 machines did: BVH angles 3e-6 degrees apart), so not the same bytes
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == sorted(p.name for p in (tmp_path / "a").iterdir())
    for one in sorted((tmp_path / "a").iterdir()):
        first, second = skelanim.load(one), skelanim.load(tmp_path / "b" / one.name)
        torch.testing.assert_close(second.positions(), first.positions(), rtol=0, atol=1e-6 * first.height)


def test_predict_takes_threads(threads, mocap_files, tmp_path, capsys):
    (walk,) = mocap_files(NAMES[:1])
    code, _, err = _run(capsys, ["predict", walk, "-o", tmp_path / "p.bvh", "--method", "zero_velocity", "--threads",
                                 "1", "--no-progress"])  # fmt: skip
    assert code == 0 and err == "", err
    assert torch.get_num_threads() == 1


def test_fit_prior_takes_no_progress(threads, data, tmp_path, capsys):
    model = pretrained_dir("generate")
    argv = _fit_prior(model, data, tmp_path / "a")
    argv.remove("--no-progress")
    code, _, err = _run(capsys, argv)
    assert code == 0 and "loading clips" in err  # the bar is on by default
    code, _, err = _run(capsys, _fit_prior(model, data, tmp_path / "b", "--threads", "1"))
    assert code == 0 and err == "", err
    assert torch.get_num_threads() == 1


# ------------------------------------------------------------------------------------- 5. --split checked first
SPLIT_COMMANDS = {
    "recognize eval": ["learn", "recognize", "eval"],
    "recognize train": ["learn", "recognize", "train", "-o", "{tmp}/r"],
    "predict eval": ["learn", "predict", "eval"],
    "predict train": ["learn", "predict", "train", "-o", "{tmp}/p"],
    "predict calibrate": ["learn", "predict", "calibrate", str(pretrained_dir("predict_rnn")), "-o", "{tmp}/c"],
    "generate eval": ["learn", "generate", "eval"],
    "generate train": ["learn", "generate", "train", "-o", "{tmp}/g"],
    "generate fit-prior": ["learn", "generate", "fit-prior", str(pretrained_dir("generate")), "-o", "{tmp}/f"],
}


@pytest.mark.parametrize("name", SPLIT_COMMANDS)
def test_a_mistyped_split_is_refused_before_any_file_is_read(name, data, tmp_path, capsys, monkeypatch):
    """``--split styel`` had been refused only after every ``--data`` file was read (20 s for a Bandai folder)."""
    from skelanim.data import MotionDataset

    def no_reading(*args, **kwargs):
        raise AssertionError("a file was read before --split was checked")

    monkeypatch.setattr(MotionDataset, "__init__", no_reading)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in SPLIT_COMMANDS[name]]
    for split in ("styel", "styles:angry"):
        _one_error(*_run(capsys, [*argv, *data, "--split", split]), "--split", f"unknown split {split!r}")
    assert list(tmp_path.iterdir()) == []


def test_the_split_check_lets_every_valid_spelling_through():
    from skelanim.cli.learn_common import check_split

    for split in ("style", "style:angry,happy", "style:angry/proud", "style:angry/", "file", "none"):
        assert check_split(split) == split


# ------------------------------------------------------------------------------------- 6. predict --help
def test_predict_help_names_its_argument_as_the_usage_line_does(capsys):
    code, out, _ = _run(capsys, ["predict", "--help"])
    usage = next(line for line in out.splitlines() if "Usage:" in line)
    argument = usage.split()[-1].strip("{}").upper()
    assert code == 0 and argument == "SRC"
    said = " ".join(out.replace("│", " ").split())
    assert not re.search(r"\bIN\b", said), said
    assert "SRC's floor" in said and "Continue SRC" in said


def test_generate_defaults_are_the_seed_and_temperature_its_help_names(tmp_path, capsys):
    """``--seed`` "(default 0)" and ``--temperature`` "(default 1: ...)", as ``generate --help`` says: the files
    written without them are those written with them (same process, same threads: the same bytes), and another
    seed or temperature writes others."""
    base = ["generate", "--content", "walk", "-n", "1", "--seconds", "1", "--no-progress"]
    written = {}
    for name, extra in {"default": [], "named": ["--seed", "0", "--temperature", "1"], "seed": ["--seed", "1"],
                        "temperature": ["--temperature", "0.5"]}.items():  # fmt: skip
        code, _, err = _run(capsys, [*base, "-o", tmp_path / name, *extra])
        assert code == 0, err
        written[name] = _bytes(tmp_path / name)
    assert written["default"] == written["named"]
    assert written["seed"] != written["default"] and written["temperature"] != written["default"]


def test_retarget_h_shows_the_group_not_run(capsys):
    """``-h``, like ``--help``, lists the retarget group's commands; any other first argument is ``run``'s source."""
    for flag in ("-h", "--help"):
        code, out, _ = _run(capsys, ["retarget", flag])
        assert code == 0
        assert all(name in out for name in ("run", "export", "train", "eval")) and "Commands" in out
        assert "skelanim retarget [OPTIONS] COMMAND" in out  # the group's usage, not run's
