"""Bone frames calibrated on a skeleton's own motion: for zero poses that are no body pose (Bandai-Namco lays
every bone along +X, one leg along the spine), the limbs' twist of retargeted motion then matches the
skeleton's own captures, which the frames read off the zero pose miss by up to a half turn."""

from __future__ import annotations

import json
import shutil
import warnings

import pytest
import torch

import skelanim
from skelanim.cli import main
from skelanim.core.motion import Motion
from skelanim.core.rotations import matrix_geodesic, mean_rotations, quat_to_matrix
from skelanim.retarget import DEFAULT_MODEL, Retargeter
from skelanim.retarget.data import encode_clip, load_families
from skelanim.retarget.rig import SLOT, CanonicalRig, canonical_locals, physical_zero_pose

BANDAI_WALKS = [f"bandai_namco_1/dataset-1_walk_{s}_001.bvh" for s in ("normal", "angry", "happy", "proud")]


def _mean_local(motion: Motion, joint: str) -> torch.Tensor:
    """Chordal mean ``(3, 3)`` of a joint's local rotation over a clip."""
    return mean_rotations(quat_to_matrix(motion.rotations[:, motion.skeleton.names.index(joint)].double()))


def _twist_gap(motion: Motion, captures: list[Motion], joint: str) -> float:
    """Degrees between a joint's mean local rotation in ``motion`` and in the skeleton's own captures."""
    own = mean_rotations(torch.stack([_mean_local(c, joint) for c in captures]))
    return float(torch.rad2deg(matrix_geodesic(_mean_local(motion, joint), own)))


def test_zero_poses_that_are_no_body_pose_are_told_apart(clips):
    assert not physical_zero_pose(clips["bandai"].skeleton)  # a leg along the spine
    assert not physical_zero_pose(clips["ccrig"].skeleton)  # every bone along +Y
    for name in ("cmu_mb", "cmu_max", "xia", "pymo"):  # T-poses
        assert physical_zero_pose(clips[name].skeleton), name


def test_calibrated_bandai_frames_give_retargeted_motion_bandais_own_twist(mocap_files):
    walks = [skelanim.load(p) for p in mocap_files(BANDAI_WALKS)]
    pymo = skelanim.load(mocap_files(["pymo_demo/AV_8Walk_Meredith_HVHA_Rep1.bvh"])[0])[::4]
    bandai = walks[0].skeleton
    plain = Retargeter(pymo.skeleton, bandai, "copy")(pymo)
    calibrated = Retargeter(pymo.skeleton, bandai, "copy", target_calibration=walks[0].rotations)(pymo)
    others = walks[1:]  # Bandai captures the calibration did not see (among themselves: within 4-33 degrees)
    # joint: (uncalibrated at least, calibrated at most), degrees from the mean of Bandai's own walks; measured
    # 174 / 11 (thighs), 79-97 / 13-18 (collars), 75-117 / 28-33 (upper arms; Bandai's walks among themselves up
    # to 21), 49-52 / 5-9 (forearms), 128-132 / 31-32 (feet: the pymo walk's ankles are held otherwise, not only
    # twisted otherwise; Bandai's walks among themselves up to 8)
    bounds = {"UpperLeg_L": (150, 20), "UpperLeg_R": (150, 20), "Shoulder_L": (70, 25), "Shoulder_R": (70, 25),
              "UpperArm_L": (90, 40), "UpperArm_R": (60, 40), "LowerArm_L": (40, 20), "LowerArm_R": (40, 20),
              "Foot_L": (100, 45), "Foot_R": (100, 45)}  # fmt: skip
    for joint, (off, near) in bounds.items():
        assert _twist_gap(plain, others, joint) > off, joint
        assert _twist_gap(calibrated, others, joint) < near, joint
    # the pose is the same either way but for the toes and the height: what changed is the twist about the bones
    # and the feet's pitch, which the calibration also levels (retarget.stance: the motion shows how Bandai's
    # ankles stand), and with it the sole the body stands on
    sk = plain.skeleton
    body = [j for j, name in enumerate(sk.names) if j > 0 and not name.startswith("Toes_")]  # ankles stay where they were
    hips = sk.names.index("Hips")
    torch.testing.assert_close(calibrated.positions()[:, body] - calibrated.positions()[:, hips : hips + 1],
                               plain.positions()[:, body] - plain.positions()[:, hips : hips + 1],
                               atol=1e-9 * plain.height, rtol=0)  # fmt: skip



def test_a_motion_given_for_a_skeleton_calibrates_it(clips, mocap_files):
    walk = skelanim.load(mocap_files([BANDAI_WALKS[0]])[0])
    pymo = clips["pymo"]
    explicit = Retargeter(pymo.skeleton, walk.skeleton, "copy", target_calibration=walk.rotations)(pymo)
    given = Retargeter(pymo, walk, "copy")(pymo)  # the motions stand for their skeletons
    torch.testing.assert_close(given.rotations, explicit.rotations, atol=0, rtol=0)
    assert Retargeter(pymo, walk).target.calibration is not None  # a zero pose that is no body pose
    assert Retargeter(pymo, walk).source.calibration is None  # a T-pose: nothing to calibrate


def test_nkn_warns_when_a_skeleton_needs_calibration_it_was_not_given(clips, mocap_files):
    """A bare Bandai skeleton (a zero pose that is no body pose) given to the NKN, which was trained on calibrated
    frames, is retargeted from guessed bone frames: a warning says so (an audit measured 5.8 times the skating);
    given as a clip, or a T-posed skeleton, nothing is said."""
    walk = skelanim.load(mocap_files([BANDAI_WALKS[0]])[0])
    pymo = clips["pymo"]
    with pytest.warns(UserWarning, match="target skeleton's zero pose is no body pose"):
        Retargeter(pymo.skeleton, walk.skeleton, "nkn")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Retargeter(pymo.skeleton, walk, "nkn")
        Retargeter(pymo.skeleton, walk.skeleton, "copy")  # the warning is the NKN's, which learned calibrated frames


def test_calibration_is_the_same_from_any_take(mocap_files):
    """The limbs' turns are measured at their first joints and snapped to axis turns: every take of a skeleton
    gives the same frames, a half turn for Bandai's legs and a quarter turn for its arms; the feet are then levelled
    by the pitch the take's standing feet hold (39.6 degrees in Bandai's), the same to 2 degrees from every take
    (measured 0.4-1.4)."""
    takes = ["bandai_namco_1/dataset-1_walk_normal_001.bvh", "bandai_namco_1/dataset-1_bow_active_001.bvh",
             "bandai_namco_1/dataset-1_kick_normal_001.bvh", "bandai_namco_2/dataset-2_run_active_001.bvh"]  # fmt: skip
    motions = [skelanim.load(p) for p in mocap_files(takes)]
    plain = CanonicalRig(motions[0].skeleton)
    rigs = [CanonicalRig(motions[0].skeleton, calibration=m.rotations) for m in motions]
    feet = [SLOT[f"{s}_{p}"] for s in "lr" for p in ("foot", "toe")]
    limbs = [slot for slot in range(len(SLOT)) if slot not in feet]
    for rig in rigs[1:]:
        torch.testing.assert_close(rig.rest_frames[limbs], rigs[0].rest_frames[limbs], atol=1e-9, rtol=0)
        assert float(torch.rad2deg(matrix_geodesic(rig.rest_frames[feet], rigs[0].rest_frames[feet])).max()) < 2.0
    turned = torch.rad2deg(matrix_geodesic(plain.rest_frames, rigs[0].rest_frames))
    for slot, degrees in {"l_upleg": 180, "l_clavicle": 90, "r_hand": 90, "chest": 0, "head": 0}.items():
        assert float(turned[SLOT[slot]]) == pytest.approx(degrees, abs=1e-6), slot


def test_round_trip_through_another_skeleton_is_exact_with_calibration(clips):
    bandai, cmu = clips["bandai"], clips["cmu_mb"].skeleton
    rig = CanonicalRig(bandai.skeleton, calibration=bandai.rotations)
    there = Retargeter(rig, cmu, "copy")(bandai)
    back = Retargeter(cmu, rig, "copy")(there)
    angles = torch.rad2deg(
        matrix_geodesic(quat_to_matrix(back.rotations[:, 1:]), quat_to_matrix(bandai.rotations[:, 1:]))
    )
    assert float(angles.max()) < 0.01


def test_calibrated_rig_keeps_canonical_fk_exact_and_holds_extra_joints_as_captured(clips, mocap_files):
    bandai = clips["bandai"]
    rig = CanonicalRig(bandai.skeleton, calibration=bandai.rotations)
    frames, pos = rig.encode(bandai.rotations, bandai.local_translations())
    _, again = rig.canonical_fk(canonical_locals(frames), pos[:, 0])
    torch.testing.assert_close(again, pos, atol=1e-6 * bandai.height, rtol=0)
    ccrig = skelanim.load(mocap_files(["cmu_iclone_ccrig/005_01.bvh"])[0])[::4]
    out = Retargeter(clips["pymo"].skeleton, ccrig.skeleton, "copy", target_calibration=ccrig.rotations)(clips["pymo"])
    sk = ccrig.skeleton
    mapped = set(CanonicalRig(sk).joint_of_slot.tolist())
    on_chains = {int(sk.parents[j]) for j in mapped} - mapped  # between mapped joints: kept as the rest pose has them
    held = [j for j in range(1, sk.num_joints) if j not in mapped | on_chains and int(sk.parents[j]) in mapped
            and float(quat_to_matrix(ccrig.rotations[:, j]).std(0).max()) < 1e-6]  # fmt: skip
    assert len(held) >= 5  # the face and twist bones, constant in the capture
    gap = torch.rad2deg(
        matrix_geodesic(quat_to_matrix(out.rotations[:, held]), quat_to_matrix(ccrig.rotations[:1, held]))
    )
    assert float(gap.max()) < 0.01  # as the capture holds them (uncalibrated: 90-180 degrees off)


def test_cli_calibrates_by_default_and_nkn_models_must_know_the_frames(mocap_files, tmp_path, capsys):
    pymo, walk, *others = mocap_files(["pymo_demo/AV_8Walk_Meredith_HVHA_Rep1.bvh", *BANDAI_WALKS])
    captures = [skelanim.load(p) for p in others]
    gaps = {}
    for flags in ([], ["--no-calibrate"], ["--method", "nkn"]):
        out = tmp_path / f"onto_bandai{len(gaps)}.bvh"
        assert main(["retarget", "run", str(pymo), "--to", str(walk), "-o", str(out), *flags]) == 0
        gaps[" ".join(flags)] = _twist_gap(skelanim.load(out), captures, "UpperLeg_L")
    assert gaps[""] < 20 and gaps["--method nkn"] < 20  # calibrated on the --to file's walk
    assert gaps["--no-calibrate"] > 150
    capsys.readouterr()
    old = tmp_path / "old_model"  # the shipped model as one trained before calibration would describe itself
    shutil.copytree(DEFAULT_MODEL, old)
    config = json.loads((old / "config.json").read_text())
    del config["architecture"]["calibrated_frames"]
    (old / "config.json").write_text(json.dumps(config))
    bad = tmp_path / "nkn.bvh"
    args = ["retarget", "run", str(pymo), "--to", str(walk), "-o", str(bad), "--method", "nkn", "--model", str(old)]
    assert main(args) == 2
    assert "trained on uncalibrated" in capsys.readouterr().err and not bad.exists()
    assert main([*args, "--no-calibrate"]) == 0 and bad.exists()


def test_training_families_share_one_twist_convention(mocap_dir):
    """NKN's families (``retarget train``) calibrate Bandai's and the production rig's frames, so a thigh's
    canonical rotation means the same in every family; read off the zero pose, Bandai's is a half turn away."""
    loaded = [*load_families(mocap_dir, ["bandai", "xia"], max_files=2, use_cache=False),
              *load_families(mocap_dir, ["ccrig"], max_files=2, use_cache=False)]
    # its first two files have 101 joints and are left out: max_files counts the clips read (it had sliced the file
    # list first, so --max-files 2 left the family without a clip, and the error blamed the clips' length)
    assert [len(f.clips) for f in loaded] == [2, 2, 2]
    families = {f.name: f for f in loaded}
    assert families["bandai"].rig.calibration is not None and families["ccrig"].rig.calibration is not None
    assert families["xia"].rig.calibration is None  # a T-pose needs none

    def thighs(local: torch.Tensor) -> torch.Tensor:
        return torch.stack([mean_rotations(local[:, SLOT[s]].double()) for s in ("l_upleg", "r_upleg")])

    reference = thighs(torch.cat([c["local"] for c in families["xia"].clips]))
    for name in ("bandai", "ccrig"):
        local = torch.cat([c["local"] for c in families[name].clips])
        gap = torch.rad2deg(matrix_geodesic(thighs(local), reference))
        # measured: Bandai's bows 15-21, the rig's 005_01 and 006_01 25-28 (other poses than a walk)
        assert float(gap.max()) < 45, name
    bandai = skelanim.load(mocap_dir / "bandai_namco_1" / families["bandai"].clips[0]["name"])
    plain = encode_clip(bandai, CanonicalRig(bandai.skeleton))["local"]
    assert float(torch.rad2deg(matrix_geodesic(thighs(plain), reference)).min()) > 150


def test_a_family_reads_the_same_clips_whatever_the_cache_holds(mocap_dir, tmp_path, monkeypatch):
    """``cmu_mb`` trains on Xia's clips, which are on CMU subject 1's skeleton under other joint names. With a fresh
    cache every one was left out ("31 joints ... not its family's (31)") and training stopped; with a cache the
    ``xia`` family had filled, ``cmu_mb`` read that family's encodings. Now each family encodes a clip of another
    export of its skeleton on the clip's own rig, cached per family rig: fresh, warm or off, the same tensors."""
    monkeypatch.setenv("SKELANIM_CACHE", str(tmp_path / "cache"))
    runs = [load_families(mocap_dir, ["cmu_mb"], max_files=2),  # fresh cache
            load_families(mocap_dir, ["xia", "cmu_mb"], max_files=2)[1:],  # after xia wrote its own
            load_families(mocap_dir, ["cmu_mb"], max_files=2, use_cache=False)]  # fmt: skip
    for families in runs:
        (family,) = families
        assert family.name == "cmu_mb" and len(family.clips) == 2
        for clip, first in zip(family.clips, runs[0][0].clips, strict=True):
            assert clip["name"] == first["name"]
            for key in ("local", "hips", "contacts"):
                assert torch.equal(clip[key], first[key]), key
    xia = load_families(mocap_dir, ["xia"], max_files=2, use_cache=False)[0]
    for mine, theirs in zip(runs[0][0].clips, xia.clips, strict=True):  # the same motion, in canonical form
        torch.testing.assert_close(mine["local"], theirs["local"], atol=1e-5, rtol=0)
