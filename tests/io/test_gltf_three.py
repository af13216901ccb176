"""skelanim's GLB export as a game engine reads it: three.js (``tools/three_pose.mjs``: GLTFLoader, an
AnimationMixer, three's own skinning) poses real exported files, and its joint and vertex world positions are
compared with :meth:`Motion.positions` and :meth:`Motion.world`, times the export scale, in glTF's Y-up frame.

This checks the writer against a reader that shares none of its code or conventions (quaternion component
order, node order and names, sampler key times, rest pose against first frame, the inverse bind matrices,
scale and up axis): ``tests/io/test_gltf.py`` checks against our own Python reader. Needs ``node`` and
``npm ci`` in ``tools/``; without them the test skips with the reason, unless ``SKELANIM_REQUIRE_NODE=1`` (CI,
``.ci/run``), where it fails.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from needs import node_tool  # tests/helpers

import skelanim
from skelanim import Motion
from skelanim.core.rotations import matrix_to_quat, quat_multiply, quat_slerp
from skelanim.core.units import up_to_y_matrix
from skelanim.io import gltf

#: (file under the mocap folder, the up axis to turn it to before export, ``None`` to keep it)
CASES = [
    ("bandai_namco_1/dataset-1_walk_normal_001.bvh", None),  # cm, 30 fps, translations animated on every joint
    ("cmu_cgspeed_mb/01_01.bvh", None),  # CMU units, 120 fps, 2752 frames
    ("pymo_demo/AV_8Walk_Meredith_HVHA_Rep1.bvh", "z"),  # inches, turned to Z up: the root node carries the turn
]


def three_pose(path: Path, times: list[float], skin_time: float) -> dict[str, Any]:
    """three.js's world positions for ``path`` (see ``tools/three_pose.mjs``); skips when node or the npm
    module three is missing, or fails under ``SKELANIM_REQUIRE_NODE=1``."""
    tools = node_tool("three", "the three.js check of the glTF export")
    command = ["node", str(tools / "three_pose.mjs"), str(path), "--times", ",".join(map(repr, times)),
               "--skin-time", repr(skin_time)]  # fmt: skip
    run = subprocess.run(command, check=False, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def turned(motion: Motion, axis: str) -> Motion:
    """``motion`` (Y up, no joint translations) turned so that it stands along ``axis``: the same motion as a
    Z-up (or X-up) source would record it."""
    assert motion.joint_translations is None
    turn = up_to_y_matrix("xyz".index(axis)).T  # takes +Y to the new up axis
    q_turn = matrix_to_quat(turn)
    sk = motion.skeleton
    skeleton = type(sk)(sk.names, sk.parents, sk.offsets @ turn.T, sk.channels,
                        {k: turn @ v for k, v in sk.end_sites.items()})  # fmt: skip
    rotations = quat_multiply(quat_multiply(q_turn, motion.rotations), q_turn * torch.tensor([1.0, -1, -1, -1]))
    out = Motion(skeleton, rotations, motion.root_positions @ turn.T, motion.fps, metadata=dict(motion.metadata))
    assert out.up_direction() == ("xyz".index(axis), 1.0)
    return out


def between(motion: Motion, k: int, u: float) -> Motion:
    """A one-frame motion a fraction ``u`` of the way from frame ``k`` to ``k + 1``: rotations slerped,
    translations linear, as glTF's LINEAR sampler defines."""
    a, b = motion[k], motion[k + 1]
    lerp = None if a.joint_translations is None else torch.lerp(a.joint_translations, b.joint_translations, u)
    return a.copy(rotations=quat_slerp(a.rotations, b.rotations, u),
                  root_positions=torch.lerp(a.root_positions, b.root_positions, u), joint_translations=lerp)  # fmt: skip


def fastest_step(motion: Motion) -> int:
    """The frame ``k`` whose step to ``k + 1`` turns the joints most: where interpolation is most visible."""
    q = motion.rotations / motion.rotations.norm(dim=-1, keepdim=True)
    return int((1 - (q[1:] * q[:-1]).sum(-1).abs()).sum(-1).argmax())


def compare_joints(got: dict[str, list[float]], motion: Motion, scale: float, turn: np.ndarray, tol: float,
                   what: str) -> float:
    """three's world positions of the joints and End Sites equal ``scale * turn @`` those of the one-frame
    ``motion``, within ``tol`` metres; the largest error, in metres."""
    names = motion.skeleton.names + motion.end_site_names()
    want = scale * motion.positions(end_sites=True)[0].numpy() @ turn.T
    assert set(names) <= set(got), f"{what}: three.js has no node for {sorted(set(names) - set(got))}"
    have = np.array([got[n] for n in names])
    np.testing.assert_allclose(have, want, atol=tol, rtol=0, err_msg=what)
    return float(np.abs(have - want).max())


def compare_skin(skin: dict[str, Any], motion: Motion, scale: float, turn: np.ndarray, tol: float, what: str) -> float:
    """three's skinned vertices of the one-frame ``motion``: each moves rigidly with its bone's joint from the
    bind pose, which is the skeleton's rest pose; each bone starts on its joint and its tip (vertex 3 of its 24)
    is on a child joint, and follows that child where the child's translation is its rest offset."""
    sk = motion.skeleton
    names = sk.names + motion.end_site_names()
    parents = sk.parents.tolist() + sorted(sk.end_sites)
    rest = scale * Motion.rest(sk).positions(end_sites=True)[0].numpy() @ turn.T
    world_rot, _ = motion.world()
    pos = scale * motion.positions(end_sites=True)[0].numpy() @ turn.T
    bind, posed = np.array(skin["bind"]), np.array(skin["posed"])
    assert len(bind) % 24 == 0 and np.all(np.array(skin["weight"]) == 1.0), f"{what}: not 24 rigid vertices a bone"
    owner = np.array([names.index(skin["bones"][b]) for b in skin["bone"]])
    assert np.all(owner < sk.num_joints), f"{what}: a vertex is skinned to an End Site"
    turn_rot = turn @ world_rot[0, owner].numpy() @ turn.T  # world rotation change since the rest pose (C at rest)
    want = pos[owner] + np.einsum("vij,vj->vi", turn_rot, bind - rest[owner])
    np.testing.assert_allclose(posed, want, atol=tol, rtol=0, err_msg=f"{what}: skinned vertices")
    local = motion.local_translations()[0]
    for base in range(0, len(bind), 24):
        joint = owner[base]
        np.testing.assert_allclose(bind[base], rest[joint], atol=tol, err_msg=f"{what}: bone base of {names[joint]}")
        child = int(np.argmin(np.linalg.norm(rest - bind[base + 3], axis=1)))
        assert np.linalg.norm(rest[child] - bind[base + 3]) < tol and parents[child] == joint, \
            f"{what}: the bone of {names[joint]} does not end on one of its children"  # fmt: skip
        if child >= sk.num_joints or torch.allclose(local[child], sk.offsets[child], atol=tol / scale, rtol=0):
            np.testing.assert_allclose(posed[base + 3], pos[child], atol=tol, err_msg=f"{what}: tip at {names[child]}")
    return float(np.abs(posed - want).max())


@pytest.mark.parametrize(("name", "up"), CASES)
def test_three_js_poses_the_export_as_skelanim(mocap_files: Callable[[list[str]], list[Path]], tmp_path: Path, name: str,
                                                up: str | None) -> None:
    """three.js's joints at the first, middle and last frame and between the two frames that turn most (its
    slerp against ours), its rest pose, and its skinned bone mesh at the middle frame, all within 1e-5 of the
    body height of what skelanim's FK gives, scaled to metres and turned Y up."""
    (source,) = mocap_files([name])
    motion = skelanim.load(source)
    if up is not None:
        motion = turned(motion, up)
    out = tmp_path / (source.stem + ".glb")
    skelanim.save(motion, out)
    scale, _ = gltf.export_scale(motion)
    turn = up_to_y_matrix(*motion.up_direction()).numpy()
    last, middle, k = motion.num_frames - 1, motion.num_frames // 2, fastest_step(motion)
    keys = (np.arange(motion.num_frames) / motion.fps).astype(np.float32).astype(np.float64)  # glTF key times
    u = 0.37
    times = [0.0, float(keys[middle]), float(keys[last]), float(keys[k] + u * (keys[k + 1] - keys[k]))]
    three = three_pose(out, times, float(keys[middle]))
    assert three["animation"]["duration"] == pytest.approx(keys[last], abs=1e-6)

    tol = 1e-5 * motion.height * scale
    errors = {"rest": compare_joints(three["rest"], Motion.rest(motion.skeleton), scale, turn, tol, f"{name} rest")}
    expected = [motion[0], motion[middle], motion[last], between(motion, k, u)]
    labels = ["frame 0", f"frame {middle}", f"frame {last}", f"{u} of the way from frame {k} to {k + 1}"]
    for pose, want, label in zip(three["poses"], expected, labels):
        errors[label] = compare_joints(pose["nodes"], want, scale, turn, tol, f"{name} at t={pose['time']:g} s ({label})")
    errors["skin"] = compare_skin(three["skin"], motion[middle], scale, turn, tol, f"{name} skin at frame {middle}")
    print(f"{name}: three.js r{three['three']} max error (m) " + ", ".join(f"{k}: {v:.2e}" for k, v in errors.items())
          + f"; tolerance {tol:.2e}")  # fmt: skip
