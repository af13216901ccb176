"""``compare_sets``: a set against itself, against a sliding copy, with and without a feature extractor."""

from __future__ import annotations

import pytest
import torch

import skelanim
from skelanim.core.motion import Motion
from skelanim.core.skeleton import Skeleton
from skelanim.data.samples import sample_path
from skelanim.metrics.compare import compare_sets
from skelanim.ops import rotate


def _legs() -> Skeleton:
    names = ["Hips", "Head", "LeftFoot", "RightFoot"]
    offsets = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.7, 0.0], [0.2, -1.0, 0.0], [-0.2, -1.0, 0.0]])
    return Skeleton(names, [-1, 0, 0, 0], offsets)


def _standing(frames: int = 30) -> Motion:
    return Motion.rest(_legs(), frames, fps=30.0)


def _sliding(frames: int = 30, speed: float = 0.6) -> Motion:
    m = _standing(frames)
    root = m.root_positions.clone()
    root[:, 0] += speed * torch.arange(frames) / 30.0  # the whole body glides with feet on the floor
    return m.copy(root_positions=root)


def test_a_set_against_itself():
    res = compare_sets([_standing()], [_standing()])
    for side in ("a", "b"):
        assert res[side]["jerk"] == 0.0 and res[side]["foot_skating"] == 0.0
        assert res[side]["ground_penetration"] == 0.0 and res[side]["bone_length_error"] == pytest.approx(
            0.0, abs=1e-12
        )
        assert res[side]["diversity"] is None and res[side]["frames"] == 30
    assert res["fid"] is None
    assert res["paired"] == {"mpjpe": 0.0, "mpjpe_root_relative": 0.0, "angle_deg": 0.0}
    assert res["height"] == pytest.approx(1.7)


def test_a_set_measured_against_another_skeleton_keeps_its_own_numbers():
    alone = compare_sets([_sliding()], [_sliding()])
    assert alone["notes"] == [] and alone["a"]["height"] == pytest.approx(1.7)
    giant = _sliding()
    giant = giant.copy(skeleton=Skeleton(giant.skeleton.names, giant.skeleton.parents, giant.skeleton.offsets * 100),
                       root_positions=giant.root_positions * 100)  # the same motion in centimetres  # fmt: skip
    mixed = compare_sets([_sliding()], [giant])
    assert mixed["height"] is None and "each is measured against its own height" in mixed["notes"][0]
    for key in ("foot_skating", "jerk", "ground_penetration"):  # in heights: the same numbers for both
        assert mixed["a"][key] == pytest.approx(alone["a"][key], rel=1e-6, abs=1e-12)
        assert mixed["b"][key] == pytest.approx(alone["a"][key], rel=1e-6, abs=1e-12)
    assert mixed["b"]["height"] == pytest.approx(170.0)


def test_a_pair_in_other_units_is_compared_at_its_pair_s_size():
    centimetres = _sliding(speed=0.3)
    centimetres = centimetres.copy(
        skeleton=Skeleton(centimetres.skeleton.names, centimetres.skeleton.parents, centimetres.skeleton.offsets * 100),
        root_positions=centimetres.root_positions * 100,
    )
    same = compare_sets([_sliding()], [_sliding(speed=0.3)])["paired"]
    mixed = compare_sets([_sliding()], [centimetres])
    assert same["mpjpe"] > 0.01  # the gliding copies part by 0.3 heights/s
    for key in ("mpjpe", "mpjpe_root_relative", "angle_deg"):
        assert mixed["paired"][key] == pytest.approx(same[key], rel=1e-6, abs=1e-9)
    assert any("scaled to their pair's height" in note for note in mixed["notes"])


def test_gliding_feet_skate_and_pair_up():
    res = compare_sets([_standing()], [_sliding()])
    assert res["a"]["foot_skating"] == 0.0
    assert res["b"]["foot_skating"] == pytest.approx(0.6 / 1.7, rel=1e-6)  # heights per second
    assert res["paired"]["mpjpe_root_relative"] == pytest.approx(0.0, abs=1e-12)
    assert res["paired"]["mpjpe"] > 0.0


def test_feature_extractor_gives_fid_diversity_and_recognition():
    def embed(motions):
        if any(m.num_frames < 10 for m in motions):
            raise ValueError("too short")
        feats = torch.stack([m.root_positions[:, 0].reshape(-1)[:10] for m in motions for _ in range(3)]).float()
        feats = feats + 0.01 * torch.arange(feats.shape[0])[:, None]
        return feats, ["walk" for _ in motions]

    res = compare_sets([_standing(), _sliding()], [_sliding(), _sliding(speed=0.3)], embed=embed,
                       contents_a=["walk", "run"], contents_b=["walk", "walk"])  # fmt: skip
    assert res["fid"] is not None and res["fid"] > 0
    assert res["a"]["recognised"] == 0.5 and res["b"]["recognised"] == 1.0
    assert res["a"]["diversity"] > 0
    short = compare_sets([_standing(5)], [_standing()], embed=embed)
    assert short["fid"] is None and short["notes"] and "too short" in short["notes"][0]


def test_root_relative_error_subtracts_the_hips_below_a_static_dummy_root():
    """Bandai-Namco's rigs put a static ``joint_Root`` above the hips, which carry the travel (translation
    channels): a copy whose hips glide is the same pose, root-relative, though the dummy never moves."""
    names = ["joint_Root", "Hips", "Head", "LeftFoot", "RightFoot"]
    offsets = torch.tensor([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.7, 0.0], [0.2, -1.0, 0.0], [-0.2, -1.0, 0.0]])
    still = Motion.rest(Skeleton(names, [-1, 0, 1, 1, 1], offsets), 30, fps=30.0)
    travel = offsets.expand(30, 5, 3).clone()
    gliding = travel.clone()
    gliding[:, 1, 0] += 0.6 * torch.arange(30) / 30.0
    a, b = still.copy(joint_translations=travel), still.copy(joint_translations=gliding)
    res = compare_sets([a], [b])
    assert res["paired"]["mpjpe"] > 0.05
    assert res["paired"]["mpjpe_root_relative"] == pytest.approx(0.0, abs=1e-12)


def _dummy_rooted(frames: int = 30) -> tuple[Motion, torch.Tensor]:
    """A standing body under a static ``joint_Root`` at the origin (Bandai-Namco's layout), hips at 1.5 and feet
    at 0.5, and its per-frame joint translations."""
    names = ["joint_Root", "Hips", "Head", "LeftFoot", "RightFoot"]
    offsets = torch.tensor([[0.0, 0.0, 0.0], [0.0, 1.5, 0.0], [0.0, 0.7, 0.0], [0.2, -1.0, 0.0], [-0.2, -1.0, 0.0]])
    still = Motion.rest(Skeleton(names, [-1, 0, 1, 1, 1], offsets), frames, fps=30.0)
    return still, offsets.expand(frames, 5, 3).clone()


def test_a_sunk_set_is_measured_against_the_reference_floor():
    """Set B is set A with its hips 0.15 lower: it sinks 0.15 below A's floor (the feet at 0.5, a static dummy root
    at 0 that is no body joint). Pooled over both sets, the lower median floor was B's own and the dummy's 0, so B
    read no penetration; A's floor gives 0.15 / height exactly."""
    still, travel = _dummy_rooted()
    sunk = travel.clone()
    sunk[:, 1, 1] -= 0.15
    a = [still.copy(joint_translations=travel) for _ in range(3)]
    b = [still.copy(joint_translations=sunk) for _ in range(3)]
    res = compare_sets(a, b)
    height = a[0].height
    assert res["floor"] == pytest.approx(0.5, abs=1e-9)
    assert res["a"]["ground_penetration"] == pytest.approx(0.0, abs=1e-12)
    assert res["b"]["ground_penetration"] == pytest.approx(0.15 / height, rel=1e-6)


def test_a_stretching_bone_counts_and_the_dummy_link_does_not():
    """A shin whose translation channel stretches it by 20 % every other frame: each of the 3 bones' relative
    deviation from its offset's length, averaged (closed form: the shin is 1 and 1.2 times its offset, deviation 0
    and 0.2, mean 0.1; the other two 0) is 1/30. The hips' link to the static dummy moves with the travel and is no
    bone."""
    still, travel = _dummy_rooted(frames=20)
    stretched = travel.clone()
    stretched[1::2, 3] *= 1.2
    stretched[:, 1, 0] += torch.arange(20) * 0.1  # the travel: the dummy-to-hips link changes length
    res = compare_sets([still.copy(joint_translations=stretched)], [still.copy(joint_translations=travel)])
    assert res["a"]["bone_length_error"] == pytest.approx(1 / 30, rel=1e-6)
    assert res["b"]["bone_length_error"] == pytest.approx(0.0, abs=1e-12)


def test_a_bone_stretched_alike_in_every_frame_counts_and_a_zero_offset_bone_is_measured_on_its_mean():
    """A review found a shin stretched 10 % in every frame by its translation channels scoring 0 (each bone's own mean
    length had been the reference): against the offsets it is 0.1 / 3 bones. A bone whose offset is zero (its length
    in the channels alone, as some exporters write) is measured against its mean length: 1 and 1.2 alternating, mean
    1.1, deviation 1/11 each frame, over 3 bones 1/33."""
    still, travel = _dummy_rooted(frames=20)
    stretched = travel.clone()
    stretched[:, 3] *= 1.1
    res = compare_sets([still.copy(joint_translations=stretched)], [still.copy(joint_translations=travel)])
    assert res["a"]["bone_length_error"] == pytest.approx(0.1 / 3, rel=1e-6)
    offsets = still.skeleton.offsets.clone()
    offsets[3] = 0.0
    zero = still.copy(skeleton=Skeleton(still.skeleton.names, still.skeleton.parents, offsets))
    alternating = travel.clone()
    alternating[1::2, 3] *= 1.2
    res = compare_sets([zero.copy(joint_translations=alternating)], [still.copy(joint_translations=travel)])
    assert res["a"]["bone_length_error"] == pytest.approx(1 / 33, rel=1e-6)


def test_pairs_are_matched_by_time_and_over_body_joints():
    """B is A resampled to twice its rate: pairing frame by frame gave errors of the clip's own motion; by time
    they are those of the resampling only. Over body joints only (the static dummy left out), the paired error
    of a glide equals the mean over the four body joints."""
    still, travel = _dummy_rooted(frames=31)
    gliding = travel.clone()
    gliding[:, 1, 0] += torch.linspace(0, 3.0, 31)  # constant speed: resampling is exact
    a = still.copy(joint_translations=gliding)
    fast = a.copy(joint_translations=travel[:1].expand(61, 5, 3).clone(), rotations=still.rotations[:1].expand(61, 5, 4),
                  root_positions=still.root_positions[:1].expand(61, 3), fps=60.0)  # fmt: skip
    fast.joint_translations[:, 1, 0] += torch.linspace(0, 3.0, 61)
    res = compare_sets([a], [fast])
    assert res["paired"]["mpjpe"] == pytest.approx(0.0, abs=1e-9)
    assert any("resampled" in note for note in res["notes"])
    moved = gliding.clone()
    moved[:, 1, 2] += 0.4  # the hips, and with them every body joint, 0.4 along z; the dummy stays
    res = compare_sets([a], [a.copy(joint_translations=moved)])
    assert res["paired"]["mpjpe"] == pytest.approx(0.4 / a.height, rel=1e-6)  # the dummy's 0 not averaged in


def test_degenerate_sets_say_what_they_cannot_measure():
    """A 2-frame set has no jerk (it needs 4 frames) or foot skating: ``None`` with a note, not a 'perfectly
    smooth' 0."""
    res = compare_sets([_standing(30)], [_standing(2)])
    assert res["b"]["jerk"] is None and res["b"]["foot_skating"] is None and res["a"]["jerk"] == 0.0
    assert any("set b: no jerk" in note for note in res["notes"])


def test_a_set_mixing_units_is_said_to():
    """One body in metres and one in centimetres-like units (five times as tall) in set A: one median height
    normalised both without a word; now a note says so, and each set keeps its own height and floor."""
    big = _standing(30)
    big = big.copy(skeleton=Skeleton(big.skeleton.names, big.skeleton.parents, big.skeleton.offsets * 5))
    res = compare_sets([_standing(30), big], [_standing(30)])
    assert any("set a mixes skeletons of heights" in note for note in res["notes"]) and res["height"] is None


def test_the_package_names_its_metrics():
    """``skelanim.metrics`` had exported nothing (``skelanim.metrics.kinematic`` an AttributeError, an audit found,
    while the learn README documents the package): its modules and each name of its ``__all__`` are reachable and
    are the modules' own functions."""
    import importlib
    import subprocess
    import sys

    from skelanim import metrics

    for name in metrics.__all__:
        value = getattr(metrics, name)
        module = value if isinstance(value, type(metrics)) else importlib.import_module(value.__module__)
        assert module.__name__.startswith("skelanim.metrics.") and getattr(module, name, value) is value, name
    assert metrics.mpjpe is metrics.kinematic.mpjpe and metrics.fid is metrics.distribution.fid
    code = "import skelanim.metrics as m; print(m.kinematic.mpjpe.__module__)"  # a fresh process: no import before
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "skelanim.metrics.kinematic"


def test_a_pair_on_one_skeleton_in_other_poses_is_not_rescaled(mocap_files):
    """The pair's size was judged by the motions' pose heights: a bow (150.7 cm tall over its frames) paired with a
    dash (132.5 cm, crouched) on the same skeleton was read as another size and scaled by 1.14 (an audit's case).
    Sizes are now the skeletons' rest heights: such a pair is measured as it is."""
    import skelanim
    from skelanim.metrics.kinematic import mpjpe

    bow, dash = (skelanim.load(p)[:60] for p in mocap_files(["bandai_namco_1/dataset-1_bow_normal_001.bvh",
                                                              "bandai_namco_1/dataset-1_dash_normal_001.bvh"]))  # fmt: skip
    assert abs(bow.height / dash.height - 1) > 0.1 and abs(bow.skeleton.height() / dash.skeleton.height() - 1) < 0.01
    out = compare_sets([bow], [dash])
    assert not any("scaled" in note for note in out["notes"])
    n = min(bow.num_frames, dash.num_frames)  # pairs are matched over their common frames
    want = float(mpjpe(bow.positions()[:n, 1:], dash.positions()[:n, 1:]).mean()) / out["height"]
    assert out["paired"]["mpjpe"] == pytest.approx(want, rel=1e-9)


def test_one_skeleton_in_crouched_and_upright_motions_is_one_size(mocap_files):
    """Set sizes were the motions' heights: Bandai clips of one skeleton (a dash's crouch, a bow) were said to mix
    heights, or two sets to differ, each then measured against its own height. Sizes at rest say they do not."""
    import skelanim

    bow, dash, walk = (skelanim.load(p)[:40] for p in mocap_files([
        "bandai_namco_1/dataset-1_bow_normal_001.bvh", "bandai_namco_1/dataset-1_dash_normal_001.bvh",
        "bandai_namco_1/dataset-1_walk_normal_001.bvh"]))  # fmt: skip
    assert abs(bow.height / dash.height - 1) > 0.1  # what had decided it
    one = compare_sets([bow, dash, walk], [walk])
    assert not [n for n in one["notes"] if "mixes" in n] and one["height"] == pytest.approx(walk.height, rel=0.2)
    two = compare_sets([bow], [dash])
    assert not [n for n in two["notes"] if "differ in skeleton" in n] and two["height"] is not None


def test_an_upside_down_set_is_measured_upright():
    """Camera-space poses have Y down: the floor is then the highest point along +Y. The sets turned upside down
    (a half turn about Z) give the upright sets' numbers; the head had been taken for the floor."""
    walk = skelanim.load(sample_path("walk"))
    sunk = walk.copy(root_positions=walk.root_positions - torch.tensor([0.0, 0.05, 0.0], dtype=torch.float64))
    half_turn = torch.tensor([0.0, 0.0, 0.0, 1.0], dtype=torch.float64)
    upright = compare_sets([walk], [sunk])
    flipped = compare_sets([rotate(walk, half_turn)], [rotate(sunk, half_turn)])
    assert upright["b"]["ground_penetration"] > 0.01 and upright["a"]["foot_skating"] > 0.0
    for side in ("a", "b"):
        for key in ("foot_skating", "ground_penetration", "jerk", "bone_length_error"):
            assert flipped[side][key] == pytest.approx(upright[side][key], rel=1e-6, abs=1e-12), (side, key)
    assert flipped["floor"] == pytest.approx(upright["floor"], abs=1e-9)
    # an upside-down reference and an upright B share the ground as upright sets do
    mixed = compare_sets([rotate(walk, half_turn)], [sunk])
    assert mixed["floor"] == pytest.approx(upright["floor"], abs=1e-9)
    assert mixed["b"]["ground_penetration"] == pytest.approx(upright["b"]["ground_penetration"], rel=1e-6)
    # and so does a B written Z up (an audit: it was measured against its own floor, so a sunk one read 0)
    from skelanim.core.units import up_to_y_matrix

    z_up = compare_sets([walk], [rotate(sunk, up_to_y_matrix(2).T)])
    assert z_up["floor"] == pytest.approx(upright["floor"], abs=1e-9)
    assert z_up["b"]["ground_penetration"] == pytest.approx(upright["b"]["ground_penetration"], rel=1e-6)
    assert "the sets differ in up axis (Y in set a, Z in set b): every motion is turned Y up first" in z_up["notes"]


def test_a_set_mixing_up_axes_and_rates_is_measured_alike():
    """An audit: a set holding a walk and its Z-up copy was measured along the first motion's axis (penetration
    0.39 heights for the same motion, no note); foot skating, in heights per second, grew with the frame rate (a
    CMU walk at 120 fps 20 % above itself at 30) while jerk was taken at the common rate. Now each motion is turned
    Y up, with a note, and skating is taken at the common rate too."""
    from skelanim.core.units import up_to_y_matrix
    from skelanim.ops import resample

    walk = skelanim.load(sample_path("walk"))
    z_up = rotate(walk, up_to_y_matrix(2).T)
    assert z_up.up_direction() == (2, 1.0)
    mixed = compare_sets([walk], [walk, z_up])
    assert mixed["b"]["ground_penetration"] == pytest.approx(0.0, abs=1e-12)
    assert mixed["b"]["foot_skating"] == pytest.approx(mixed["a"]["foot_skating"], rel=1e-9)
    assert any("mixes up directions (+Y, +Z)" in n for n in mixed["notes"])
    assert any("no paired measures: the sets hold 1 and 2" in n for n in mixed["notes"])
    fast = compare_sets([walk], [resample(walk, 120.0)])
    assert fast["b"]["foot_skating"] == pytest.approx(fast["a"]["foot_skating"], rel=0.01)
    assert fast["b"]["jerk"] == pytest.approx(fast["a"]["jerk"], rel=0.01)


def test_a_bandai_walk_and_its_z_up_copy_measure_alike_in_any_order(mocap_files):
    """A review: sharing the ground was decided by the first motion's axis (the order of a set changed the numbers),
    a Z-up copy's dummy root, turned, counted as a body joint at height 0, and the paired errors compared the
    unturned positions (0.865 heights between a walk and its own Z-up copy). Every motion is turned upright first."""
    from skelanim.core.units import up_to_y_matrix

    walk = skelanim.load(mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh"])[0])
    z_up = rotate(walk, up_to_y_matrix(2).T)
    first, second = compare_sets([walk], [walk, z_up]), compare_sets([walk], [z_up, walk])
    for res in (first, second):
        assert res["b"]["ground_penetration"] == pytest.approx(0.0, abs=1e-9)
        assert res["b"]["floor"] == res["a"]["floor"] == res["floor"]  # the reference's ground, shared
    assert second["b"]["foot_skating"] == pytest.approx(first["b"]["foot_skating"], rel=1e-9)
    paired = compare_sets([walk], [z_up])["paired"]
    assert paired["mpjpe"] == pytest.approx(0.0, abs=1e-6) and paired["angle_deg"] == pytest.approx(0.0, abs=1e-6)


def test_a_clip_too_short_at_the_common_rate_is_left_out_of_jerk():
    """An 8-frame clip at 120 fps is 2 frames at 30: it had counted as zero jerk, weighted by its 8 frames."""
    from skelanim.ops import resample

    walk = skelanim.load(sample_path("walk"))
    fast = resample(walk, 120.0)
    alone = compare_sets([walk], [fast[8:]])
    with_short = compare_sets([walk], [fast[:8], fast[8:]])
    assert with_short["b"]["jerk"] == pytest.approx(alone["b"]["jerk"], rel=1e-9)
    assert with_short["b"]["foot_skating"] == pytest.approx(alone["b"]["foot_skating"], rel=1e-9)
