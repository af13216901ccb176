"""``--device`` of the training and inference commands: a device name torch does not know, or a GPU this machine
lacks, is one line before any work; the device a run trained on is recorded with the model; an inference command
run with its network on a device (the stand-in accelerator of ``tests/helpers/virtual_device``) writes what the
CPU run writes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from virtual_device import DEVICE, VirtualDevice  # tests/helpers

import skelanim
from skelanim.cli import main

TRAINERS = [["ik", "train", "--data", "x"], ["retarget", "train"], ["learn", "recognize", "train", "--data", "x"],
            ["learn", "predict", "train", "--data", "x"], ["learn", "generate", "train", "--data", "x"]]  # fmt: skip
#: The inference commands, their output option last (the files need not exist: the device is checked first).
RUNNERS = [["ik", "solve", "x.npy"], ["retarget", "x.bvh", "--to", "y.bvh"], ["predict", "x.bvh"],
           ["generate", "--content", "walk"], ["recognize", "x.bvh", "--json"]]  # fmt: skip


def _error(argv: list[str], capsys) -> str:
    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("command", TRAINERS, ids=lambda c: " ".join(c[:3]))
def test_unknown_or_absent_devices_are_one_line(command, tmp_path, capsys):
    out = tmp_path / "model"
    assert "unknown device 'gpu0'" in _error([*command, "-o", str(out), "--device", "gpu0"], capsys)
    assert "holds shapes, not values" in _error([*command, "-o", str(out), "--device", "meta"], capsys)
    if not torch.cuda.is_available():
        assert "sees no CUDA GPU" in _error([*command, "-o", str(out), "--device", "cuda:0"], capsys)
    assert not out.exists()


@pytest.mark.parametrize("command", RUNNERS, ids=lambda c: c[0])
def test_inference_commands_refuse_unknown_or_absent_devices_in_one_line(command, tmp_path, capsys):
    out = [] if command[0] == "recognize" else ["-o", str(tmp_path / "out")]
    assert "unknown device 'gpu0'" in _error([*command, *out, "--device", "gpu0"], capsys)
    if not torch.cuda.is_available():
        assert "sees no CUDA GPU" in _error([*command, *out, "--device", "cuda:0"], capsys)
    assert not (tmp_path / "out").exists()


def _inference_commands(mocap_files, tmp: Path) -> dict[str, list[str]]:
    """Each inference command on a few dozen frames (the output path appended by the caller)."""
    walk_file, cmu_file = mocap_files(["bandai_namco_1/dataset-1_walk_happy_001.bvh", "cmu_cgspeed_mb/01_01.bvh"])
    walk = skelanim.load(walk_file)[:45]
    skelanim.save(walk, tmp / "walk.bvh")
    skelanim.save(skelanim.load(cmu_file)[::4][:24], tmp / "cmu.bvh")
    np.save(tmp / "walk.npy", walk.positions()[::3].numpy())
    return {"ik solve": ["ik", "solve", str(tmp / "walk.npy"), "--refine"],
            "retarget": ["retarget", str(tmp / "cmu.bvh"), "--to", str(tmp / "walk.bvh"), "--method", "nkn"],
            "predict": ["predict", str(tmp / "walk.bvh"), "--seconds", "0.5"],
            "generate": ["generate", "--content", "walk", "-n", "1"],
            "recognize": ["recognize", str(tmp / "walk.bvh"), "--json"]}  # fmt: skip


def _written(command: list[str], out: Path, capsys) -> list[torch.Tensor] | dict:
    capsys.readouterr()
    code = main([*command, *([] if command[0] == "recognize" else ["-o", str(out)])])
    stdout, err = capsys.readouterr()
    assert code == 0, err
    if command[0] == "recognize":
        return json.loads(stdout)
    motion = skelanim.load(next(out.glob("*.bvh")) if out.is_dir() else out)
    return [motion.rotations, motion.positions()]


@pytest.mark.parametrize("name", ["ik solve", "retarget", "predict", "generate", "recognize"])
def test_inference_commands_on_a_device_write_what_the_cpu_writes(name, mocap_files, tmp_path, capsys, monkeypatch):
    command = _inference_commands(mocap_files, tmp_path)[name]
    suffix = "" if name == "generate" else ".bvh"
    on_cpu = _written([*command, "--device", "cpu"], tmp_path / f"cpu{suffix}", capsys)
    real = __import__("skelanim.nn.device", fromlist=["resolve_device"]).resolve_device
    monkeypatch.setattr("skelanim.nn.device.resolve_device", lambda n: DEVICE if n == "meta" else real(n))
    with VirtualDevice() as stand_in:  # "meta" names the stand-in here; the network runs there, files are read and
        # written on the CPU
        on_device = _written([*command, "--device", "meta"], tmp_path / f"device{suffix}", capsys)
    assert stand_in.operations > 100  # the network did run on the device
    if isinstance(on_cpu, dict):
        assert isinstance(on_device, dict)
        for cpu_file, device_file in zip(on_cpu["files"], on_device["files"], strict=True):
            assert device_file["content"] == cpu_file["content"]
            assert device_file["probability"] == pytest.approx(cpu_file["probability"], abs=2e-4)  # printed rounded
        return
    for cpu_values, device_values in zip(on_cpu, on_device, strict=True):
        torch.testing.assert_close(device_values, cpu_values, rtol=1e-4, atol=1e-3)  # as the files print them


def test_the_device_is_recorded_with_the_model(mocap_files, tmp_path: Path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    for path in mocap_files(["bandai_namco_1/dataset-1_walk_happy_001.bvh", "bandai_namco_1/dataset-1_run_happy_001.bvh"]):
        (data / path.name).symlink_to(path)
    out = tmp_path / "model"
    code = main(["learn", "predict", "train", "--data", str(data), "--split", "none", "-o", str(out), "--arch", "mlp",
                 "--epochs", "1", "--batch-size", "2", "--stride", "25", "--max-steps", "1", "--no-progress",
                 "--device", "auto"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    loop = json.loads((out / "config.json").read_text())["training"]["loop"]
    assert loop["device"] == ("cuda" if torch.cuda.is_available() else "cpu")


def _eval_commands(mocap_files, tmp: Path) -> dict[str, list[str]]:
    """Each evaluation command on three short Bandai clips (two of the held-out style happy, one to train on)."""
    data = tmp / "data"
    data.mkdir()
    names = ["dataset-1_walk_happy_001.bvh", "dataset-1_run_happy_001.bvh", "dataset-1_walk_angry_001.bvh"]
    for path in mocap_files([f"bandai_namco_1/{n}" for n in names]):
        skelanim.save(skelanim.load(path)[:150], data / path.name)
    learn = ["--data", str(data), "--json"]
    return {"recognize eval": ["learn", "recognize", "eval", *learn, "--split", "style:happy/"],
            "predict eval": ["learn", "predict", "eval", *learn, "--split", "style:happy/", "--stride", "40"],
            "ik eval": ["ik", "eval", "--data", str(data / names[0]), "--methods", "gat", "--max-frames", "40", "--json"],
            "generate eval": ["learn", "generate", "eval", *learn, "--split", "style:happy/"],
            "evaluate": ["evaluate", str(data / names[0]), str(data / names[1]), "--json"]}  # fmt: skip


def _scores(value: object, path: str = "") -> dict[str, float]:
    """The numbers of a JSON report by path, timings left out (they measure the machine, not the device's answer)."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() if not any(t in key for t in ("second", "time", "fps", "speed", "per_s"))
                for k, v in _scores(item, f"{path}/{key}").items()}  # fmt: skip
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in _scores(item, f"{path}/{i}").items()}
    return {path: float(value)} if isinstance(value, (int, float)) and not isinstance(value, bool) else {}


@pytest.mark.parametrize("name", ["recognize eval", "predict eval", "generate eval", "ik eval", "evaluate"])
def test_evaluation_commands_on_a_device_report_what_the_cpu_reports(name, mocap_files, tmp_path, capsys, monkeypatch):
    command = _eval_commands(mocap_files, tmp_path)[name]
    reports = []
    real = __import__("skelanim.nn.device", fromlist=["resolve_device"]).resolve_device
    monkeypatch.setattr("skelanim.nn.device.resolve_device", lambda n: DEVICE if n == "meta" else real(n))
    stand_in = VirtualDevice()
    for device in ("cpu", "meta"):
        capsys.readouterr()
        with stand_in if device == "meta" else torch.no_grad():
            code = main([*command, "--device", device])
        stdout, err = capsys.readouterr()
        assert code == 0, err
        reports.append(_scores(json.loads(stdout)))
    assert stand_in.operations > 100  # the networks did run on the device
    cpu, on_device = reports
    assert cpu.keys() == on_device.keys() and len(cpu) > 3
    for key, value in cpu.items():
        assert on_device[key] == pytest.approx(value, rel=1e-4, abs=1e-6), key


def _train_commands(mocap_files, mocap_dir, tmp: Path) -> dict[str, list[str]]:
    """Each training command, one step on a few short Bandai clips (its output folder appended by the caller)."""
    data = tmp / "data"
    data.mkdir()
    names = ["walk_happy", "walk_angry", "run_happy", "run_angry"]
    for path in mocap_files([f"bandai_namco_1/dataset-1_{n}_001.bvh" for n in names]):
        skelanim.save(skelanim.load(path)[:120], data / path.name)
    quick = ["--max-steps", "1", "--no-progress", "--batch-size", "2"]
    learn = ["--data", str(data), "--split", "none", *quick]
    return {
        "ik train": ["ik", "train", "--data", str(data / "*.bvh"), "--val", "*_happy_*", "--epochs", "1", "--hidden", "8",
                     "--layers", "1", "--heads", "2", "--max-frames-per-file", "20", *quick],
        "retarget train": ["retarget", "train", "--data", str(mocap_dir), "--families", "bandai,deepmimic", "--max-files",
                           "2", "--epochs", "1", "--samples", "4", "--hidden", "8", "--window", "16", *quick],
        "recognize train": ["learn", "recognize", "train", *learn, "--window", "32", "--stride", "16", "--epochs", "1"],
        "predict train": ["learn", "predict", "train", *learn, "--arch", "mlp", "--stride", "25", "--epochs", "1"],
        # a batch of 16 of the 24 windows: the VAE's one epoch is its one step, so it ends and the GAN stage runs (a
        # VAE stage stopped by --max-steps before its last epoch leaves the GAN stage to --resume)
        "generate train": ["learn", "generate", "train", *learn[:-2], "--batch-size", "16", "--window", "16", "--stride",
                           "16", "--vae-epochs", "1", "--gan-epochs", "1"],
    }  # fmt: skip


@pytest.mark.parametrize("name", ["ik train", "retarget train", "recognize train", "predict train", "generate train"])
def test_training_commands_train_on_the_device_they_are_given(name, mocap_files, mocap_dir, tmp_path, capsys, monkeypatch):
    """``--device`` reaches the loop of every training command (each stage of the generator's): on the stand-in
    the networks run there, and the model folder records it."""
    command = _train_commands(mocap_files, mocap_dir, tmp_path)[name]
    real = __import__("skelanim.nn.device", fromlist=["resolve_device"]).resolve_device
    monkeypatch.setattr("skelanim.nn.device.resolve_device", lambda n: DEVICE if n == "meta" else real(n))
    monkeypatch.setenv("SKELANIM_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "model"
    with VirtualDevice() as stand_in:
        code = main([*command, "-o", str(out), "--device", "meta"])
    assert code == 0, capsys.readouterr().err
    assert stand_in.operations > 100
    folders = [out / "vae", out] if name == "generate train" else [out]
    for folder in folders:
        assert json.loads((folder / "config.json").read_text())["training"]["loop"]["device"] == "meta", folder
