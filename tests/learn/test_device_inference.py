"""The shipped learning models infer on a device other than the CPU (the stand-in accelerator of
``tests/helpers/virtual_device``, which enforces CUDA's device rules on CPU values): recognition of files,
continuation of a file by each predictor and by their combination, and the generator's samples, interpolations
and long motions equal the CPU's (to float rounding), on the CPU."""

from __future__ import annotations

import copy

import pytest
import torch
from virtual_device import OnDevice, VirtualDevice  # tests/helpers

import skelanim
from skelanim.core.motion import Motion
from skelanim.learn.forecast import predict_motion, predict_retargeted
from skelanim.learn.generate import Generator
from skelanim.learn.generate_long import sample_long, sample_plan
from skelanim.learn.predict import CombinedPredictor, Predictor
from skelanim.learn.recognize import Recognizer


def _on_cpu(*tensors: torch.Tensor) -> None:
    for t in tensors:
        assert not isinstance(t, OnDevice) and t.device.type == "cpu"


def _same_motion(got: Motion, want: Motion) -> None:
    _on_cpu(got.rotations, got.root_positions)
    torch.testing.assert_close(got.rotations, want.rotations, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got.positions(), want.positions(), rtol=1e-5, atol=1e-5 * want.height)


@pytest.fixture(scope="module")
def walk(learn_files) -> Motion:
    return skelanim.load(learn_files[0])[:45]  # 1.5 s at 30 fps: one observed second and a little more


@pytest.mark.parametrize("folder", ["recognize", "recognize_cnn"])
def test_recognizing_files_on_a_device_gives_the_cpu_probabilities(learn_files, folder):
    motions = [skelanim.load(p)[:60] for p in learn_files[:2]]
    model = Recognizer.load(default=folder)
    on_cpu = model.recognize_motions(motions, stride=8)
    windows = torch.randn(3, model.window, model.rig.num_joints, 16, generator=torch.Generator().manual_seed(0))
    cpu_probs, cpu_features = model.classify(windows[..., : model.norm.mean.shape[-1]])
    with VirtualDevice():
        moved = copy.deepcopy(model).to("meta")
        on_device = moved.recognize_motions(motions, stride=8)
        probs, features = moved.classify(windows[..., : model.norm.mean.shape[-1]])  # CPU in, CPU out
    for value, want in ((probs, cpu_probs), (features, cpu_features)):
        _on_cpu(value)
        torch.testing.assert_close(value, want, rtol=1e-5, atol=1e-6)
    assert on_device.keys() == on_cpu.keys()
    for key, value in on_cpu.items():
        _on_cpu(on_device[key])
        torch.testing.assert_close(on_device[key], value, rtol=1e-5, atol=1e-6, msg=key)


@pytest.mark.parametrize("archs", [["rnn"], ["gcn"], ["mlp"], ["rnn", "gcn", "mlp"]], ids="+".join)
def test_continuing_a_file_on_a_device_gives_the_cpu_motion(walk, archs):
    models = [Predictor.load(default=f"predict_{arch}") for arch in archs]

    def model(ms: list[Predictor]) -> Predictor | CombinedPredictor:
        return ms[0] if len(ms) == 1 else CombinedPredictor(ms)

    method = archs[0] if len(archs) == 1 else "combined"
    on_cpu = predict_motion(walk, method=method, model=model(models), seconds=0.5)
    with VirtualDevice():
        on_device = predict_motion(walk, method=method, model=model([copy.deepcopy(m).to("meta") for m in models]),
                                   seconds=0.5)  # fmt: skip
    _same_motion(on_device, on_cpu)


def test_continuing_another_skeleton_on_a_device_gives_the_cpu_motion(mocap_files):
    """``predict_retargeted`` (``skelanim predict --retarget``): the model's reference pose comes from its
    statistics, which are on the device."""
    cmu = skelanim.load(mocap_files(["cmu_cgspeed_mb/01_01.bvh"])[0])[::4][:40]
    model = Predictor.load(default="predict_gcn")
    on_cpu = predict_retargeted(cmu, method="gcn", model=model, seconds=0.5)
    with VirtualDevice():
        on_device = predict_retargeted(cmu, method="gcn", model=copy.deepcopy(model).to("meta"), seconds=0.5)
    _same_motion(on_device, on_cpu)


@pytest.fixture(scope="module")
def generator() -> Generator:
    return Generator.load()


def _generate(model: Generator) -> dict[str, torch.Tensor]:
    """A sample, an interpolation between two of its motions, a long motion and a plan (a few seam steps)."""
    content, style = model.contents.names[0], model.styles.names[0]
    x = model.sample([content, content], [style, style], generator=torch.Generator().manual_seed(0))
    a, b = model.to_motions(x)
    between = model.interpolate(a, b, (content, style), (content, style), steps=3)
    frames = model.length + 12
    long = sample_long(model, [content], [style], frames, generator=torch.Generator().manual_seed(1), steps=3)
    plan = sample_plan(model, [(content, style, 40), (model.contents.names[1], style, 40)], steps=3,
                       generator=torch.Generator().manual_seed(2))  # fmt: skip
    return {"sample": x, "rotations": a.rotations, "between": torch.stack([m.rotations for m in between]),
            "long": long, "plan": plan}  # fmt: skip


def test_generating_on_a_device_gives_the_cpu_motion(generator):
    on_cpu = _generate(generator)
    with VirtualDevice():
        on_device = _generate(copy.deepcopy(generator).to("meta"))
    for key, value in on_cpu.items():
        _on_cpu(on_device[key])
        torch.testing.assert_close(on_device[key], value, rtol=1e-5, atol=1e-5, msg=key)
