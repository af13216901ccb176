"""Readers and writers checked against independent sources: the formats' own rules (the glTF 2.0 spec's
CUBICSPLINE Hermite and column-major matrices, the BVH ``Frame Time``), the rules the module docstrings state,
and hand-built files (tiny glTF documents written here as JSON, BVH text, DeepMimic frames)."""

from __future__ import annotations

import base64
import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import skelanim
from skelanim.core.motion import Motion
from skelanim.core.skeleton import Skeleton
from skelanim.data.samples import sample_path
from skelanim.errors import FormatError
from skelanim.io import bvh, deepmimic, gltf, positions

# ------------------------------------------------------------------------------------------ BVH
BVH_TEXT = """HIERARCHY
ROOT Hips
{
\tOFFSET 0 0 0
\tCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
\tJOINT Leg
\t{
\t\tOFFSET 0 -1 0
\t\tCHANNELS 3 Zrotation Xrotation Yrotation
\t\tEnd Site
\t\t{
\t\t\tOFFSET 0 -1 0
\t\t}
\t}
}
MOTION
Frames: 3
Frame Time: 0.0333333
0 2 0 0 0 0 10 0 0
1 2 0 0 0 0 20 0 0
2 2 0 0 0 0 30 0 0
"""


def _frame_time(text: str) -> float:
    (line,) = [line for line in text.splitlines() if line.startswith("Frame Time:")]
    return float(line.split(":")[1])


@pytest.mark.parametrize("fps", [60.0, 24.0, 120.0])
def test_a_motion_given_another_rate_is_written_at_that_rate(fps: float) -> None:
    """The module docstring: ``metadata["frame_time"]`` is written back verbatim *while it stands for fps*. A
    motion read at 30 fps (``0.0333333``) and given another rate is written with a Frame Time of 1 / fps, and reads
    back at that rate; unchanged, it keeps the file's own text."""
    m = bvh.loads(BVH_TEXT)
    assert m.fps == 30.0 and m.metadata["frame_time"] == 0.0333333
    assert _frame_time(bvh.dumps(m)) == 0.0333333
    text = bvh.dumps(m.copy(fps=fps))
    assert _frame_time(text) == pytest.approx(1.0 / fps, rel=1e-6)
    assert bvh.loads(text).fps == fps


def test_a_value_that_rounds_to_zero_is_written_without_a_sign() -> None:
    """A root x of -1e-9 (and other tiny negatives) is ``0.000000`` at 6 decimals, never ``-0.000000``: every
    written number that reads as zero has no minus sign."""
    sk = Skeleton(["Hips", "Leg"], [-1, 0], torch.tensor([[0.0, 1.0, 0.0], [0.0, -1.0, 0.0]], dtype=torch.float64))
    m = Motion.rest(sk, 2, fps=30.0)
    root = m.root_positions.clone()
    root[0, 0], root[0, 2], root[1, 0] = -1e-9, -4e-7, -0.25
    text = bvh.dumps(m.copy(root_positions=root))
    rows = [line.split() for line in text.split("Frame Time:")[1].splitlines()[1:]]
    assert rows[0][:3] == ["0.000000", "1.000000", "0.000000"]
    assert rows[1][0] == "-0.250000"
    for token in (t for row in rows for t in row):
        assert not (float(token) == 0.0 and token.startswith("-")), token


# ------------------------------------------------------------------------------------------ DeepMimic
def test_durations_differing_by_under_one_percent_are_kept(tmp_path: Path) -> None:
    """The module docstring: durations differing by more than one part in a million make ``d`` their median
    and are all kept in ``metadata["frame_durations"]``. Here most frames last 0.0333333 s (30 fps, as the BVH
    rule reads it) and every fifth 0.0335 s (0.5 % longer, so the first frame's 0.0335 is not the rate)."""
    doc = json.loads(Path(sample_path("walk")).read_text())
    frames = doc["Frames"]
    for k, frame in enumerate(frames[:-1]):
        frame[0] = 0.0335 if k % 5 == 0 else 0.0333333
    durations = [frame[0] for frame in frames]
    timed = durations[:-1]
    assert 0 < max(abs(d - timed[0]) for d in timed) <= 1e-2 * timed[0]  # within 1 %, well beyond 1e-6
    assert float(np.median(timed)) == 0.0333333
    path = tmp_path / "clip.txt"
    path.write_text(json.dumps(doc))
    m = deepmimic.load(path)
    assert m.metadata["frame_durations"] == durations
    assert m.metadata["frame_duration"] == 0.0333333
    assert m.fps == 30.0


# ------------------------------------------------------------------------------------------ positions CSV
def test_csv_frame_column_counts_from_zero_and_time_is_frame_over_fps(tmp_path: Path) -> None:
    """The positions module docstring: a ``frame`` column, then ``time`` (seconds, ``frame / fps``). The first
    frame of a motion is frame 0 at time 0."""
    walk = skelanim.load(sample_path("walk"))[:4]
    path = tmp_path / "walk.csv"
    positions.save(walk, path)
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0][:2] == ["frame", "time"]
    frames = [int(r[0]) for r in rows[1:]]
    times = [float(r[1]) for r in rows[1:]]
    assert frames == [0, 1, 2, 3]
    assert times == [f / walk.fps for f in frames]
    back = positions.load(path)
    np.testing.assert_array_equal(back.positions, walk.positions().numpy())


# ------------------------------------------------------------------------------------------ glTF
def _gltf(path: Path, nodes: list[dict[str, Any]], tracks: list[tuple[int, str, str, np.ndarray, np.ndarray]],
          *, skin: list[int] | None = None) -> Path:
    """Write a glTF 2.0 text file by hand: ``nodes`` as given (node 0 the scene root), one animation with one
    channel per track ``(node, path, interpolation, keys (K,), values (V, width))`` stored as float32 in one
    base64 buffer, and a skin of ``skin`` joints when given."""
    data, views, accessors, samplers, channels = bytearray(), [], [], [], []
    kinds = {1: "SCALAR", 3: "VEC3", 4: "VEC4"}

    def add(array: np.ndarray, bounds: bool) -> int:
        a = np.ascontiguousarray(array, dtype="<f4").reshape(len(array), -1)
        views.append({"buffer": 0, "byteOffset": len(data), "byteLength": a.nbytes})
        acc: dict[str, Any] = {"bufferView": len(views) - 1, "componentType": 5126, "count": len(a),
                               "type": kinds[a.shape[1]]}
        if bounds:
            acc["min"], acc["max"] = a.min(axis=0).tolist(), a.max(axis=0).tolist()
        accessors.append(acc)
        data.extend(a.tobytes())
        return len(accessors) - 1

    for node, kind, mode, keys, values in tracks:
        samplers.append({"input": add(keys, True), "output": add(values, False), "interpolation": mode})
        channels.append({"sampler": len(samplers) - 1, "target": {"node": node, "path": kind}})
    doc: dict[str, Any] = {
        "asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}], "nodes": nodes,
        "buffers": [{"uri": "data:application/octet-stream;base64," + base64.b64encode(bytes(data)).decode(),
                     "byteLength": len(data)}],
        "bufferViews": views, "accessors": accessors,
        "animations": [{"name": "take", "channels": channels, "samplers": samplers}],
    }  # fmt: skip
    if skin is not None:
        doc["skins"] = [{"joints": skin}]
    path.write_text(json.dumps(doc))
    return path


IDENTITY = np.array([0.0, 0.0, 0.0, 1.0])  # glTF quaternions are x, y, z, w


def _still(node: int, keys: np.ndarray) -> tuple[int, str, str, np.ndarray, np.ndarray]:
    """A LINEAR rotation track holding the identity at ``keys`` (it sets the key grid, not the pose)."""
    return node, "rotation", "LINEAR", keys, np.tile(IDENTITY, (len(keys), 1))


def test_cubicspline_tangents_are_scaled_by_the_key_span(tmp_path: Path) -> None:
    """glTF 2.0 spec, Appendix C (cubic spline interpolation): between keys t_k and t_k+1, with
    ``t_d = t_k+1 - t_k`` and ``s = (t - t_k) / t_d``,
    ``p(s) = (2s^3 - 3s^2 + 1) v_k + t_d (s^3 - 2s^2 + s) b_k + (-2s^3 + 3s^2) v_k+1 + t_d (s^3 - s^2) a_k+1``
    (b: out-tangent, a: in-tangent, per second). A root translation with two keys 2 s apart, read at the 10 fps
    grid that a still rotation track on the leg lays down."""
    v0, b0, a1, v1 = np.array([0.0, 1.0, 0.0]), np.array([1.0, 0.5, -2.0]), np.array([-1.0, 2.0, 0.25]), \
        np.array([2.0, 1.0, 0.5])  # fmt: skip
    unused = np.array([5.0, 5.0, 5.0])  # a_0 and b_1 play no part between the two keys
    cubic = np.stack([unused, v0, b0, a1, v1, unused])
    grid = np.arange(21) / 10.0
    path = _gltf(tmp_path / "cubic.gltf",
                 [{"name": "Hips", "children": [1]}, {"name": "Leg", "translation": [0.0, -1.0, 0.0]}],
                 [(0, "translation", "CUBICSPLINE", np.array([0.0, 2.0]), cubic), _still(1, grid)])  # fmt: skip
    m = gltf.load(path)
    assert m.fps == 10.0 and m.num_frames == 21
    s = (grid / 2.0)[:, None]
    expected = ((2 * s**3 - 3 * s**2 + 1) * v0 + 2.0 * (s**3 - 2 * s**2 + s) * b0 + (-2 * s**3 + 3 * s**2) * v1
                + 2.0 * (s**3 - s**2) * a1)  # fmt: skip
    np.testing.assert_allclose(m.root_positions.numpy(), expected, atol=1e-5)
    assert m.root_positions[10].tolist() == pytest.approx(list(0.5 * (v0 + v1) + 0.25 * (b0 - a1)), abs=1e-5)


def _trs_matrix(t: list[float], q_xyzw: list[float], s: float = 1.0) -> np.ndarray:
    """``T * R * S`` (glTF's node transform) as a 4x4 matrix, from the quaternion by the textbook formula."""
    x, y, z, w = q_xyzw
    r = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                  [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                  [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])  # fmt: skip
    out = np.eye(4)
    out[:3, :3], out[:3, 3] = r * s, t
    return out


def _three_nodes(leg: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": "Hips", "children": [1], "translation": [0.0, 1.0, 0.0]}, {"name": "Leg", "children": [2], **leg},
            {"name": "Foot", "translation": [0.0, -0.4, 0.1]}]


def test_a_node_given_as_a_matrix_is_the_same_node_given_as_trs(tmp_path: Path) -> None:
    """glTF 2.0 spec (3.5.3, transformations): ``matrix`` is a column-major 4x4, the same transform as
    ``translation``, ``rotation``, ``scale`` composed as T * R * S. The leg's rest transform written either way
    gives one skeleton and one motion."""
    half = math.radians(50.0) / 2
    axis = np.array([1.0, 2.0, 2.0]) / 3.0
    q = [*(math.sin(half) * axis), math.cos(half)]
    t = [0.1, -0.5, 0.2]
    column_major = _trs_matrix(t, q).flatten(order="F").tolist()
    assert column_major[12:15] == t  # the spec's layout: the translation is the fourth column
    keys = np.arange(4) / 30.0
    track = (0, "rotation", "LINEAR", keys, np.array([[0.0, math.sin(a), 0.0, math.cos(a)] for a in keys]))
    as_trs = gltf.load(_gltf(tmp_path / "trs.gltf", _three_nodes({"translation": t, "rotation": q}), [track],
                             skin=[0, 1, 2]))  # fmt: skip
    as_matrix = gltf.load(_gltf(tmp_path / "matrix.gltf", _three_nodes({"matrix": column_major}), [track],
                                skin=[0, 1, 2]))  # fmt: skip
    np.testing.assert_allclose(as_matrix.skeleton.offsets.numpy(), as_trs.skeleton.offsets.numpy(), atol=1e-12)
    np.testing.assert_allclose(as_matrix.positions().numpy(), as_trs.positions().numpy(), atol=1e-9)
    # and both put the foot where the matrices say (rest pose of frame 0: the root turned by 0)
    foot = np.eye(4)
    foot[:3, 3] = [0.0, -0.4, 0.1]
    world = _trs_matrix([0.0, 1.0, 0.0], list(IDENTITY)) @ _trs_matrix(t, q) @ foot
    np.testing.assert_allclose(as_matrix.positions()[0, 2].numpy(), world[:3, 3], atol=1e-6)


@pytest.mark.parametrize("scale", [1.05, 0.97, 1.001])
def test_a_scaled_joint_is_refused(tmp_path: Path, scale: float) -> None:
    """The loader's docstring: joints with a scale are a FormatError (a Motion has no joint scale); 5 %, 3 % or
    0.1 % is a scale, not float32 round-off."""
    keys = np.arange(4) / 30.0
    nodes = _three_nodes({"translation": [0.0, -0.5, 0.0], "scale": [scale] * 3})
    with pytest.raises(FormatError, match="scale"):
        gltf.load(_gltf(tmp_path / "scaled.gltf", nodes, [_still(0, keys)], skin=[0, 1, 2]))
    nodes[1]["scale"] = [1.0, 1.0, 1.0]
    assert gltf.load(_gltf(tmp_path / "unscaled.gltf", nodes, [_still(0, keys)], skin=[0, 1, 2])).num_frames == 4


def test_keys_at_30_fps_with_one_left_out_read_at_30_fps(tmp_path: Path) -> None:
    """Key times k / 30 (float32) with frame 10 missing: the rate is still 30 fps (the step that most keys are
    apart), 13 frames, and frame 10 lies half-way between its neighbours (LINEAR)."""
    frames = np.r_[np.arange(10), 11, 12]
    values = np.stack([frames * 0.1, np.ones(len(frames)), np.zeros(len(frames))], axis=1)
    path = _gltf(tmp_path / "gap.gltf", [{"name": "Hips", "children": [1]}, {"name": "Leg", "translation": [0, -1, 0]}],
                 [(0, "translation", "LINEAR", frames / 30.0, values)])  # fmt: skip
    m = gltf.load(path)
    assert m.fps == 30.0 and m.num_frames == 13
    np.testing.assert_allclose(m.root_positions[:, 0].numpy(), np.arange(13) * 0.1, atol=1e-6)
