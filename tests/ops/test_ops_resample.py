"""Resampling against scipy's Slerp and numpy's interp."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.spatial.transform import Rotation, Slerp

from skelanim.core.motion import Motion
from skelanim.core.rotations import quat_geodesic
from skelanim.core.skeleton import Skeleton
from skelanim.errors import ShapeError
from skelanim.ops import resample, sample_frames, sample_times


def scipy_reference(motion, fps: float, n: int):
    """Rotations (Slerp) and root positions (np.interp) at k / fps, held at the end."""
    f = motion.num_frames
    times = np.arange(f) / motion.fps
    query = np.minimum(np.arange(n) / fps, times[-1])
    rots = []
    for j in range(motion.skeleton.num_joints):
        r = Rotation.from_quat(motion.rotations[:, j].numpy(), scalar_first=True)
        rots.append(Slerp(times, r)(query).as_quat(scalar_first=True))
    root = np.stack([np.interp(query, times, motion.root_positions[:, a].numpy()) for a in range(3)], -1)
    return torch.from_numpy(np.stack(rots, 1)), torch.from_numpy(root)


@pytest.mark.parametrize(
    "frames,fps_in,fps_out",
    [(41, 30.0, 24.0), (100, 30.0, 24.0), (37, 120.0, 50.0), (25, 30.0, 60.0), (50, 60.0, 59.94), (100, 30.0, 25.0)],
)
def test_resample_matches_scipy(frames, fps_in, fps_out, helpers, check_unchanged):
    m = helpers.random_motion(helpers.body_skeleton(), frames, fps=fps_in, amplitude=1.2)
    done = check_unchanged(m)
    out = resample(m, fps_out)
    assert done()
    assert out.fps == fps_out
    # duration kept to within half a new frame period
    assert abs(out.duration - m.duration) <= 0.5 / fps_out + 1e-12
    rot, root = scipy_reference(m, fps_out, out.num_frames)
    assert float(quat_geodesic(out.rotations, rot).max()) < 1e-9
    assert torch.allclose(out.root_positions, root, atol=1e-12)


def test_integer_ratio_keeps_frames_and_duration_exactly(helpers):
    m = helpers.random_motion(helpers.body_skeleton(), 4 * 12 + 1, fps=120.0)
    down = resample(m, 30.0)
    assert down.num_frames == 13 and down.duration == m.duration
    assert torch.equal(down.rotations, m.rotations[::4]) and torch.equal(down.root_positions, m.root_positions[::4])
    up = resample(m, 240.0)
    assert up.num_frames == 2 * m.num_frames - 1 and up.duration == m.duration
    assert torch.equal(up.rotations[::2], m.rotations)
    # midpoints: the slerp halfway point is equidistant from both neighbours
    d0 = quat_geodesic(up.rotations[1::2], m.rotations[:-1])
    d1 = quat_geodesic(up.rotations[1::2], m.rotations[1:])
    assert torch.allclose(d0, d1, atol=1e-9)


def test_resample_joint_translations_and_single_frame(helpers):
    m = helpers.random_motion(helpers.body_skeleton(), 21, fps=20.0, translations=True)
    out = resample(m, 40.0)
    jt = m.joint_translations.numpy()
    t_in, t_out = np.arange(21) / 20.0, np.arange(out.num_frames) / 40.0
    expected = np.apply_along_axis(lambda v: np.interp(t_out, t_in, v), 0, jt)
    assert np.allclose(out.joint_translations.numpy(), expected, atol=1e-12)
    single = resample(m[0:1], 60.0)
    assert single.num_frames == 1 and single.fps == 60.0 and torch.equal(single.rotations, m.rotations[:1])


def test_resample_shortest_path_through_sign_flips(helpers):
    m = helpers.random_motion(helpers.body_skeleton(), 11, fps=10.0)
    flipped = m.copy(rotations=m.rotations * torch.tensor([1.0, -1.0] * 5 + [1.0], dtype=torch.float64)[:, None, None])
    a, b = resample(m, 30.0), resample(flipped, 30.0)
    assert float(quat_geodesic(a.rotations, b.rotations).max()) < 1e-9


def test_sample_times_and_errors():
    s = sample_times(100, 30.0, 24.0)  # 99 frames = 79.2 new periods: 80 frames, ending 0.2 periods early
    assert len(s) == 80 and float(s[-1]) == 98.75 and float(s[1]) == pytest.approx(1.25)
    s = sample_times(100, 30.0, 25.0)  # 82.5 new periods: rounds up to 84 frames, the last one held
    assert len(s) == 84 and float(s[-1]) == 99.0 and float(s[-2]) == pytest.approx(82 * 1.2)
    with pytest.raises(ShapeError):
        sample_times(0, 30.0, 24.0)
    with pytest.raises(ShapeError):
        sample_times(10, 30.0, -1.0)


def test_sample_frames_at_arbitrary_times_matches_scipy(helpers):
    m = helpers.random_motion(helpers.body_skeleton(), 30, fps=25.0, amplitude=1.2)
    times = np.array([0.0, 0.013, 0.48, 0.51, 0.999, 1.16])  # seconds, not on one grid
    out = sample_frames(m, torch.from_numpy(times * m.fps), 30.0)
    assert out.num_frames == 6 and out.fps == 30.0
    whole = np.arange(30) / m.fps
    for j in range(m.skeleton.num_joints):
        r = Rotation.from_quat(m.rotations[:, j].numpy(), scalar_first=True)
        ref = torch.from_numpy(Slerp(whole, r)(times).as_quat(scalar_first=True))
        assert float(quat_geodesic(out.rotations[:, j], ref).max()) < 1e-9
    assert torch.equal(out.rotations[2], m.rotations[12])  # a whole index: that frame exactly
    with pytest.raises(ShapeError, match=r"within \[0, 29\]"):
        sample_frames(m, torch.tensor([0.0, 29.5]), 30.0)


def test_resample_real(real):
    m = real("cmu_cgspeed_mb/01_01.bvh")[:601]  # Frame Time 0.008333: 120.0048 fps
    out = resample(m, m.fps / 4)  # an exact ratio: every 4th frame, the same duration
    assert out.num_frames == 151 and out.duration == pytest.approx(m.duration, abs=1e-12)
    assert torch.allclose(out.positions(), m.positions()[::4], atol=1e-9 * m.height)
    out = resample(m, 30.0)
    assert abs(out.duration - m.duration) <= 0.5 / 30 + 1e-9
    rot, root = scipy_reference(m, 30.0, out.num_frames)
    assert float(quat_geodesic(out.rotations, rot).max()) < 1e-9
    assert torch.allclose(out.root_positions, root, atol=1e-9 * m.height)


def test_repeat_loop_plays_a_loop_in_a_row(looped_walk) -> None:
    """Against the tests' own tiling of the bundled one-stride walk (frames 0..F-2 per loop, the root moved on by
    the loop's travel each time); the last frame closes the last play."""
    import skelanim
    from skelanim.data.samples import sample_path
    from skelanim.ops import repeat_loop

    walk = skelanim.load(sample_path("walk"))
    played = repeat_loop(walk, 3)
    n = walk.num_frames - 1
    assert played.num_frames == 3 * n + 1 and played.fps == walk.fps and played.metadata["loop"] == "wrap"
    reference = looped_walk(3)
    torch.testing.assert_close(played.positions()[: 3 * n], reference.positions(), atol=1e-12, rtol=0)
    travel = walk.root_positions[-1] - walk.root_positions[0]
    torch.testing.assert_close(played.root_positions[-1], walk.root_positions[-1] + 2 * travel)
    torch.testing.assert_close(repeat_loop(walk, 1).positions(), walk.positions(), atol=0, rtol=0)  # the clip
    with pytest.raises(ShapeError, match="cannot play 0 time"):
        repeat_loop(walk, 0)


def test_a_resample_too_large_to_hold_is_refused_before_it_is_made():
    """A frame count beyond :data:`~skelanim.core.motion.MAX_FRAMES`, or joint-frames beyond ``MAX_JOINT_FRAMES``,
    is refused by its size before any array is made (an audit's 30-minute clip at 10,000 fps, and a 1e4 s frame
    resampled to 30 fps, had allocated until the kernel killed the process)."""
    from skelanim.core.motion import MAX_FRAMES
    from skelanim.ops.resample import MAX_JOINT_FRAMES, sample_frames, sample_times

    with pytest.raises(ShapeError, match="more than 10,000,000"):
        sample_times(3, 1e-6, 30.0)  # two frames a million seconds apart, at 30 fps: 6e7 frames
    with pytest.raises(ShapeError, match="more than"):
        sample_times(2, 1e-300, 1.0)  # a span that overflows
    assert MAX_FRAMES == 10_000_000 and len(sample_times(3, 1.0, 1000.0)) == 2001  # a large one is still made
    skeleton = Skeleton([f"j{i}" for i in range(100)], [-1] + list(range(99)), torch.zeros(100, 3))
    motion = Motion.rest(skeleton, 2)
    with pytest.raises(ShapeError, match="joint-frames"):
        sample_frames(motion, torch.zeros(MAX_JOINT_FRAMES // 100 + 1), 30.0)


def test_repeat_loop_moves_on_a_body_root_under_a_static_dummy_root(mocap_dir) -> None:
    """Bandai's Hips travel in their own translation channels under a joint_Root that never moves: each play had
    started back where the first did (a 146.6 cm jump at every boundary of a 40-frame walk). Against the same
    loop with the travel moved into the root first (``simplify_channels``): the same world positions."""
    import skelanim
    from skelanim.ops import repeat_loop, simplify_channels

    walk = skelanim.load(mocap_dir / "bandai_namco_1" / "dataset-1_walk_normal_001.bvh")[:40]
    assert torch.equal(walk.root_positions[0], walk.root_positions[-1])  # the dummy stays put
    played = repeat_loop(walk, 3)
    hips = played.positions()[:, walk.skeleton.pelvis]
    steps = (hips[1:] - hips[:-1]).norm(dim=-1)
    assert float(steps.max()) < 2 * float(steps.median())
    simple = repeat_loop(simplify_channels(walk), 3)  # the dummy root dropped, Hips the root
    same = walk.skeleton.indices(simple.skeleton.names)
    torch.testing.assert_close(played.positions()[:, same], simple.positions(), atol=1e-9 * walk.height, rtol=0)


def test_resampling_drops_the_files_own_rate_numbers(mocap_dir, tmp_path) -> None:
    """An export audit: a 120 fps BVH resampled to 30 fps kept ``frame_time`` 1/120 s, which glTF wrote into its
    extras (a DeepMimic walk at 60 fps kept its 0.0333 s duration). At a new rate they go; at the same rate they
    stay, and a BVH written from the resampled motion says its own rate."""
    import skelanim

    pymo = skelanim.load(mocap_dir / "pymo_demo" / "AV_8Walk_Meredith_HVHA_Rep1.bvh")
    assert pymo.metadata["frame_time"] == pytest.approx(1 / 120, rel=1e-3)
    slow = resample(pymo, 30.0)
    assert "frame_time" not in slow.metadata and resample(pymo, pymo.fps).metadata["frame_time"] == pymo.metadata["frame_time"]
    skelanim.save(slow, tmp_path / "slow.bvh")
    assert "Frame Time: 0.0333333" in (tmp_path / "slow.bvh").read_text()
    walk = skelanim.load(mocap_dir / "deepmimic" / "humanoid3d_walk.txt")
    assert "frame_duration" in walk.metadata and "frame_duration" not in resample(walk, 60.0).metadata
