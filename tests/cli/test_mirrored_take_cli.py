"""A Bandai take mirrored by ``convert --mirror`` is the mirror image of the rig (``Skeleton.rig_difference``): the
shipped models refuse it in one line, and ``predict --retarget`` retargets it (found by a read-only review: the
recogniser had read it as a 35 % walk and ``predict --retarget`` had predicted the mirrored rest axes as the rig's).
The reference: the unmirrored take, read as a walk, and the mirrored walk's own pace."""

from __future__ import annotations

from pathlib import Path

import pytest

import skelanim
from skelanim.cli import main

WALK = "bandai_namco_1/dataset-1_walk_normal_001.bvh"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_models_refuse_a_mirrored_take_and_predict_retargets_it(mocap_files, tmp_path: Path, capsys) -> None:
    """``convert --mirror`` of a Bandai walk: ``recognize`` and ``predict`` refuse it in one line naming the bone;
    ``predict --retarget`` goes through the model's skeleton (it had skipped the retargeting and predicted the
    mirrored rest axes as the rig's: the pelvis covered 81 cm in the predicted second where the last observed
    second covered 121). The unmirrored take is read as a walk (the reference)."""
    source = mocap_files([WALK])[0]
    mirrored = tmp_path / source.name
    assert run(["convert", str(source), str(mirrored), "--mirror"], capsys)[0] == 0
    code, out, _ = run(["recognize", str(source), "--top", "1"], capsys)
    assert code == 0 and ": walk " in out
    for argv in (["recognize", str(mirrored)], ["predict", str(mirrored), "-o", str(tmp_path / "p.bvh")]):
        code, _, err = run(argv, capsys)
        assert code == 2 and "this motion has its bone to 'Spine' turned 180 degrees at rest" in err, err
        assert len(err.strip().splitlines()) == 1
    code, out, _ = run(["predict", str(mirrored), "--retarget", "-o", str(tmp_path / "p.bvh"), "--no-progress"],
                       capsys)  # fmt: skip
    assert code == 0 and "through the model's 22-joint skeleton" in out
    predicted = skelanim.load(tmp_path / "p.bvh")
    observed = skelanim.load(mirrored)
    pelvis = observed.skeleton.pelvis

    def travel(motion: skelanim.Motion, first: int, last: int) -> float:  # the pelvis's ground distance, X and Z
        return float((motion.positions()[last, pelvis, [0, 2]] - motion.positions()[first, pelvis, [0, 2]]).norm())

    frames = observed.num_frames
    # a steady walk keeps its pace: the predicted second covers within a fifth of the last observed second
    assert travel(predicted, frames - 1, frames + 29) == pytest.approx(travel(observed, frames - 31, frames - 1), rel=0.2)


def test_training_data_that_mixes_a_take_and_its_mirror_image_is_refused(mocap_files, tmp_path: Path, capsys) -> None:
    """One dataset holds one rig: a mirrored take beside the takes it was made from (the review: trained on without a
    word) is one line naming the file and the bone, and no model folder is written."""
    source = mocap_files([WALK])[0]
    mirrored = tmp_path / "mirrored" / source.name
    assert run(["convert", str(source), str(mirrored), "--mirror"], capsys)[0] == 0
    out = tmp_path / "model"
    code, _, err = run(["learn", "predict", "train", "--data", str(source), "--data", str(mirrored), "--labels", "none",
                        "--split", "none", "--arch", "mlp", "--max-steps", "1", "--no-progress", "-o", str(out)],
                       capsys)  # fmt: skip
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    first, second = sorted([str(source), str(mirrored)])  # the dataset's first file is the rig the rest must match
    assert err.startswith(f"error: {second}: skeleton differs from {first}") and "'Spine' turned 180 degrees" in err
    assert not out.exists()
