"""A streaming retargeter written as an ONNX file (``skelanim.retarget.export``), run the way an engine would:
onnxruntime alone, the stream state fed back by hand from the file's own metadata; every frame must equal
:meth:`Retargeter.step`'s."""

from __future__ import annotations

import json
import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from virtual_device import DEVICE, VirtualDevice  # tests/helpers

import skelanim
from skelanim.core.units import up_to_y_matrix
from skelanim.ops import rotate
from skelanim.retarget import Retargeter, RetargetError
from skelanim.retarget.export import FORMAT, export_step


def _stream_file(path, source) -> list[list[np.ndarray]]:
    """Every frame of ``source`` through the exported file, as an engine would run it."""
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    meta = session.get_modelmeta().custom_metadata_map
    fill = {"inf": math.inf, "nan": math.nan}
    dtypes = {i.name: np.float64 if i.type == "tensor(double)" else np.float32 for i in session.get_inputs()}
    state = {name: np.full(spec["shape"], fill.get(spec["fill"], spec["fill"]), dtype=dtypes[name])
             for name, spec in json.loads(meta["skelanim.initial_state"]).items()}  # fmt: skip
    translations = source.local_translations().numpy()  # rest offsets, or the animated ones (Bandai's hips)
    frames = []
    for f in range(source.num_frames):
        feed = {"rotations": source.rotations[f].numpy(), "root_position": source.root_positions[f].numpy(),
                "joint_offsets": translations[f], **state}  # fmt: skip
        feed = {i.name: np.asarray(feed[i.name], dtype=dtypes[i.name]) for i in session.get_inputs()}
        out = dict(zip([o.name for o in session.get_outputs()], session.run(None, feed), strict=True))
        state = {name: out[f"next_{name}"] for name in state}
        frames.append([out[k] for k in ("target_rotations", "target_root_position") if k in out]
                      + [out.get("target_joint_translations")])  # fmt: skip
    return frames


@pytest.mark.parametrize(("method", "source", "target"), [("nkn", "cmu_mb", "bandai"), ("copy", "bandai", "cmu_mb"),
                                                         ("naive", "cmu_mb", "ccrig"), ("ik", "bandai", "cmu_mb")])  # fmt: skip
def test_the_file_streams_as_the_retargeter_steps(clips, tmp_path, method, source, target):
    """(``ik``: the whole 1.5 s Bandai walk, so that its feet touch down, stay, lift off and hang from their toes.)"""
    motion = clips[source][: 45 if method == "ik" else 20]
    retarget = Retargeter(motion, clips[target], method, fps=motion.fps, runtime="torch")  # eager: not the same trace
    path = export_step(retarget, tmp_path / "step.onnx", dtype="float64")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    meta = session.get_modelmeta().custom_metadata_map
    assert meta["skelanim.format"] == FORMAT and meta["skelanim.method"] == method
    assert json.loads(meta["skelanim.target_joints"]) == list(clips[target].skeleton.names)
    assert float(meta["skelanim.fps"]) == pytest.approx(motion.fps)
    kept = {"nkn": ["started", "floor", "previous_feet", "encoder_state", "decoder_state", "previous_hips"],
            "copy": [], "naive": [],
            "ik": ["started", "floor", "previous_feet", "foot_pins", "foot_pinned", "foot_offsets", "toe_offsets"]}[method]  # fmt: skip
    assert json.loads(meta["skelanim.inputs"]) == ["rotations", "root_position", "joint_offsets", *kept]
    initial = json.loads(meta["skelanim.initial_state"])
    assert all(initial[name]["fill"] == 0.0 for name in kept)  # a stream starts from zeros: no NaN or inf flags
    ops = {node.op_type for node in onnx.load(str(path)).graph.node}
    assert not ops & {"IsNaN", "IsInf"}, ops & {"IsNaN", "IsInf"}
    retarget.reset()
    height = float(clips[target].height)
    tol = 1e-6 if method == "nkn" else 1e-9  # the network is float32: onnxruntime's GRU and torch's round apart
    for f, (q, root, translations) in enumerate(_stream_file(path, motion)):
        want = retarget.step(motion.rotations[f], motion.root_positions[f], motion.local_translations()[f])
        np.testing.assert_allclose(q, want[0].numpy(), atol=tol, rtol=0)
        np.testing.assert_allclose(root, want[1].numpy(), atol=tol * height, rtol=0)
        assert (translations is None) == (want[2] is None)
        if translations is not None:
            np.testing.assert_allclose(translations, want[2].numpy(), atol=tol * height, rtol=0)


@pytest.mark.parametrize("turned", ["source", "target"])
def test_a_z_up_source_or_target_is_turned_inside_the_graph(clips, tmp_path, turned):
    """A Z-up copy of a CMU walk, as the source or as the target, streams through the file as the Retargeter steps
    it: the turns are in the graph, and the metadata names each side's up axis."""
    z_up = rotate(clips["cmu_mb"][:12], up_to_y_matrix(2).T)
    source, target = (z_up, clips["bandai"]) if turned == "source" else (clips["bandai"][:12], z_up)
    retarget = Retargeter(source, target, "copy", fps=source.fps)
    assert (retarget.source_turn is not None, retarget.target_turn is not None) == (turned == "source", turned == "target")
    path = export_step(retarget, tmp_path / "z.onnx", dtype="float64")
    meta = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).get_modelmeta().custom_metadata_map
    assert (meta["skelanim.source_up"], meta["skelanim.target_up"]) == (("+z", "+y") if turned == "source" else ("+y", "+z"))
    retarget.reset()
    for f, (q, root, translations) in enumerate(_stream_file(path, source)):
        want = retarget.step(source.rotations[f], source.root_positions[f], source.local_translations()[f])
        np.testing.assert_allclose(q, want[0].numpy(), atol=1e-9, rtol=0)
        np.testing.assert_allclose(root, want[1].numpy(), atol=1e-9, rtol=0)


def test_a_network_off_the_cpu_is_refused_and_nothing_is_written(clips, tmp_path):
    with VirtualDevice():
        on_device = Retargeter(clips["cmu_mb"], clips["bandai"], "nkn", device=DEVICE)
        with pytest.raises(RetargetError, match="network is on the CPU"):
            export_step(on_device, tmp_path / "nkn.onnx")
    assert not (tmp_path / "nkn.onnx").exists()


def test_the_cli_writes_a_file_an_engine_can_stream(mocap_files, tmp_path, capsys):
    from skelanim.cli import main

    src, to = mocap_files(["cmu_cgspeed_mb/01_01.bvh", "bandai_namco_1/dataset-1_walk_normal_001.bvh"])
    out = tmp_path / "step.onnx"
    assert main(["retarget", "export", str(src), "--to", str(to), "-o", str(out), "--fps", "60"]) == 0
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    meta = session.get_modelmeta().custom_metadata_map
    assert meta["skelanim.method"] == "nkn" and meta["skelanim.fps"] == "60"
    assert [o.shape for o in session.get_outputs()][:3] == [[22, 4], [3], [22, 3]]  # Bandai animates its hips' offset
    for argv, expected in ((["--method", "magic"], "'magic' is no method"), (["-o", str(tmp_path / "s.bvh")], "not '.bvh'")):
        capsys.readouterr()
        code = main(["retarget", "export", str(src), "--to", str(to), "-o", str(tmp_path / "x.onnx"), *argv])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and expected in err[0], err
    assert not (tmp_path / "x.onnx").exists() and not (tmp_path / "s.bvh").exists()


@pytest.mark.parametrize("up", ["y", "z"])
def test_a_source_whose_floor_is_far_below_its_origin_streams_as_the_clip_retargets(mocap_files, tmp_path, up):
    """The production rig stands a metre below its origin: the exported step knows that floor from SRC, measured in
    SRC's world turned Y up (it had taken y = 0 and sunk the target by 62 % of its height); streamed, it gives
    ``skelanim retarget``'s clip, also for a Z-up copy of the take."""
    from skelanim.cli import main
    from skelanim.core.motion import Motion

    ccrig, cmu = mocap_files(["cmu_iclone_ccrig/001_01.bvh", "cmu_cgspeed_mb/01_01.bvh"])
    src, to = tmp_path / "ccrig.bvh", tmp_path / "cmu.bvh"
    take = skelanim.load(ccrig)[:60]
    skelanim.save(take if up == "y" else rotate(take, up_to_y_matrix(2).T), src)
    skelanim.save(skelanim.load(cmu)[::4][:30], to)
    assert main(["retarget", "export", str(src), "--to", str(to), "-o", str(tmp_path / "step.onnx"), "--method", "copy"]) == 0
    assert main(["retarget", str(src), "--to", str(to), "-o", str(tmp_path / "clip.bvh"), "--method", "copy"]) == 0
    source, clip = skelanim.load(src), skelanim.load(tmp_path / "clip.bvh")
    meta = ort.InferenceSession(str(tmp_path / "step.onnx"), providers=["CPUExecutionProvider"]).get_modelmeta()
    assert json.loads(meta.custom_metadata_map["skelanim.source_floor"]) < -0.5 * source.height
    assert meta.custom_metadata_map["skelanim.source_up"] == f"+{up}" and meta.custom_metadata_map["skelanim.source_units"] == "cm"
    frames = _stream_file(tmp_path / "step.onnx", source)
    streamed = Motion(clip.skeleton, torch.from_numpy(np.stack([f[0] for f in frames])),
                      torch.from_numpy(np.stack([f[1] for f in frames])), clip.fps)  # fmt: skip
    error = (streamed.positions() - clip.positions()).norm(dim=-1).max() / clip.height
    assert error < 1e-4, f"streamed joints {float(error):.3g} heights from the clip's"


@pytest.mark.parametrize(("method", "source", "target"), [("nkn", "cmu_mb", "bandai"), ("ik", "bandai", "cmu_mb")])
def test_the_default_file_is_float32_throughout_and_close_to_the_float64_step(clips, tmp_path, method, source, target):
    """Engine runtimes (Unity Sentis, Unreal's GPU ones) take no float64: the default file holds none, and its
    frames stay within float32's rounding of :meth:`Retargeter.step`'s."""

    motion = clips[source][: 45 if method == "ik" else 20]
    retarget = Retargeter(motion, clips[target], method, fps=motion.fps, runtime="torch")
    path = export_step(retarget, tmp_path / "f32.onnx")
    model = onnx.load(str(path))
    double = onnx.TensorProto.DOUBLE
    graph = model.graph
    assert not [v.name for v in [*graph.input, *graph.output, *graph.value_info] if v.type.tensor_type.elem_type == double]
    assert not [i.name for i in graph.initializer if i.data_type == double]
    assert not [n.name for n in graph.node for a in n.attribute
                if (a.name == "to" and a.i == double) or (a.type == onnx.AttributeProto.TENSOR and a.t.data_type == double)]
    retarget.reset()
    height = float(clips[target].height)
    for f, (q, root, translations) in enumerate(_stream_file(path, motion)):
        want = retarget.step(motion.rotations[f], motion.root_positions[f], motion.local_translations()[f])
        assert q.dtype == np.float32
        cosine = np.clip(np.abs((q.astype(np.float64) * want[0].numpy()).sum(-1)), 0.0, 1.0)
        degrees = np.degrees(2 * np.arccos(cosine))  # the angle between the rotations
        assert degrees.max() < (0.3 if method == "ik" else 0.06), (f, degrees.max())  # ik: a straight knee's plane
        np.testing.assert_allclose(root, want[1].numpy(), atol=1e-5 * height, rtol=0)
        assert (translations is None) == (want[2] is None)
        if translations is not None:
            np.testing.assert_allclose(translations, want[2].numpy(), atol=1e-5 * height, rtol=0)


def test_a_retargeter_built_from_a_source_clip_records_the_floor_its_graph_stands_on(clips, tmp_path, monkeypatch):
    """A review: a Retargeter built from a source clip streams on that clip's floor, but its exported file said
    ``skelanim.source_floor`` 0 (the graph stood 5.3 cm elsewhere than its metadata); and the clip's floor, an FK
    pass over the whole clip, was measured on building even when nothing was streamed (7 times the building of a
    33k-frame clip): now on first use."""
    import skelanim.retarget.retargeter as module

    measured = []
    measure = module.target_floor_of
    monkeypatch.setattr(module, "target_floor_of", lambda *a: measured.append(1) or measure(*a))
    source = clips["cmu_mb"]
    retarget = Retargeter(source, clips["bandai"].skeleton, "copy", fps=source.fps)
    retarget(source)
    assert measured == []  # built and run on a clip: the stream's floor is not needed
    export_step(retarget, tmp_path / "step.onnx", dtype="float64")
    meta = onnx.load(str(tmp_path / "step.onnx")).metadata_props
    floor = json.loads({p.key: p.value for p in meta}["skelanim.source_floor"])
    assert floor == retarget.stream_floor == measure(retarget.source, source) and abs(floor) > 1e-3 * source.height
    assert measured == [1]  # measured once, on first use
    stream = Retargeter(source, clips["bandai"].skeleton, "copy", fps=source.fps, floor=floor)  # as an engine reads it
    got = _stream_file(tmp_path / "step.onnx", source)
    want = [stream.step(source.rotations[f], source.root_positions[f]) for f in range(source.num_frames)]
    assert float(np.abs(np.stack([g[1] for g in got]) - torch.stack([w[1] for w in want]).numpy()).max()) < 1e-6
