"""``sample_frames`` works :data:`~skelanim.ops.resample.CHUNK_JOINT_FRAMES` joint-frames at a time into its result:
the chunks give the same bits as one pass over every frame (at one thread: see the constant), on real clips longer
than many chunks (with and without joint translations) and on random motions of several joint counts at random
sample times that hit whole frames, the last frame and everything between."""

from __future__ import annotations

import importlib

import pytest
import torch

from skelanim import Motion, Skeleton
from skelanim.core.rotations import quat_normalize
from skelanim.ops import resample, sample_frames, sample_times

resample_module = importlib.import_module("skelanim.ops.resample")  # the package's ``resample`` is the function
ONE_PASS = 10**12  # joint-frames per chunk: every frame at once


@pytest.fixture(autouse=True)
def _one_thread():
    """One intra-op thread: with several, torch's split of a kernel between threads moves an ulp here and there,
    in one pass too."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def same_bits(a: Motion, b: Motion) -> bool:
    jt_a, jt_b = a.joint_translations, b.joint_translations
    return (torch.equal(a.rotations, b.rotations) and torch.equal(a.root_positions, b.root_positions)
            and ((jt_a is None and jt_b is None) or (jt_a is not None and jt_b is not None and torch.equal(jt_a, jt_b)))
            and a.fps == b.fps and a.metadata == b.metadata)  # fmt: skip


def chunked_and_whole(monkeypatch, motion: Motion, indices: torch.Tensor, fps: float,
                      chunk_frames: int) -> tuple[Motion, Motion]:  # fmt: skip
    """``sample_frames`` in chunks of ``chunk_frames`` frames (rounded to whole 64s, at least 64; the last is
    shorter) and in one pass."""
    joints = motion.skeleton.num_joints
    monkeypatch.setattr(resample_module, "CHUNK_JOINT_FRAMES", chunk_frames * joints, raising=False)
    chunked = sample_frames(motion, indices, fps)
    monkeypatch.setattr(resample_module, "CHUNK_JOINT_FRAMES", ONE_PASS, raising=False)
    return chunked, sample_frames(motion, indices, fps)


@pytest.mark.parametrize("chunk_frames", [1, 64, 200])
def test_chunks_give_the_bits_of_one_pass_on_a_real_clip(monkeypatch, real, chunk_frames):
    walk = real("cmu_cgspeed_mb/01_01.bvh")  # 2,752 frames of 31 joints, 120 fps
    assert walk.joint_translations is None
    for fps in (30.0, 47.0, 240.0):  # down, to an uneven rate (samples between frames), up (5,503 frames)
        chunked, whole = chunked_and_whole(monkeypatch, walk, sample_times(walk.num_frames, walk.fps, fps), fps,
                                           chunk_frames)  # fmt: skip
        assert chunked.num_frames > 3 * max(64, chunk_frames) and same_bits(chunked, whole)


def test_chunks_give_the_bits_of_one_pass_with_joint_translations(monkeypatch, real):
    walk = real("bandai_namco_1/dataset-1_walk_normal_001.bvh")  # a static dummy root, Hips translated
    assert walk.joint_translations is not None
    for fps in (24.0, 100.0):
        chunked, whole = chunked_and_whole(monkeypatch, walk, sample_times(walk.num_frames, walk.fps, fps), fps, 64)
        assert same_bits(chunked, whole)


@pytest.mark.parametrize("joints", [1, 3, 21, 57])
def test_chunks_give_the_bits_of_one_pass_at_random_times(monkeypatch, joints):
    """Chunks of 64 frames of 21 joints: 1,344 elements in each per-joint array, whole SIMD blocks (chunks of 33
    frames, 693 elements, had left a few elements to the scalar atan2 and differed by an ulp)."""
    skeleton = Skeleton([f"j{i}" for i in range(joints)], [-1] + list(range(joints - 1)), torch.zeros(joints, 3))
    gen = torch.Generator().manual_seed(joints)
    frames = 300
    rotations = quat_normalize(torch.randn(frames, joints, 4, generator=gen, dtype=torch.float64))
    rotations[1::3] = rotations[0::3][:100] * (1 + 1e-12)  # neighbours (nearly) alike: slerp's small-angle branch
    motion = Motion(skeleton, rotations, torch.randn(frames, 3, generator=gen, dtype=torch.float64), 30.0,
                    joint_translations=torch.randn(frames, joints, 3, generator=gen, dtype=torch.float64))  # fmt: skip
    times = torch.rand(5000, generator=gen, dtype=torch.float64) * (frames - 1)
    times[::5] = torch.randint(0, frames, (1000,), generator=gen).to(torch.float64)  # whole frames: taken exactly
    times[1::97] = frames - 1.0  # the last frame: a == 1 past the last pair
    times[2::89] = times[2::89].round() + 1e-10  # within 1e-9 of a whole frame
    chunked, whole = chunked_and_whole(monkeypatch, motion, times, 30.0, 1)
    assert same_bits(chunked, whole)
    assert torch.equal(whole.rotations[::5], motion.rotations[times[::5].long()])
    single = motion[:1]  # one frame: every sample is it
    chunked, whole = chunked_and_whole(monkeypatch, single, torch.zeros(100, dtype=torch.float64), 30.0, 1)
    assert same_bits(chunked, whole) and torch.equal(whole.rotations, single.rotations.expand(100, -1, -1))


def test_a_resample_longer_than_the_default_chunk_keeps_its_whole_frames(real):
    """The default chunk (8,192 frames of 32 joints) is thousands of frames; a resample longer than it, through
    its chunks, still takes whole source frames exactly."""
    assert resample_module.CHUNK_JOINT_FRAMES >= 1024 * 32
    walk = real("cmu_cgspeed_mb/01_01.bvh")
    up = resample(walk, 1000.0)  # 22,926 frames: three chunks of 8,448; frame 25 k is source frame 3 k
    assert up.num_frames == 22_926 and up.num_frames * 31 > 2 * resample_module.CHUNK_JOINT_FRAMES
    assert torch.equal(up.rotations[::25], walk.rotations[::3])
    assert torch.equal(up.root_positions[::25], walk.root_positions[::3])
