"""``skelanim retarget --to humanoid.urdf`` (or a DeepMimic clip): ``--target-map`` and ``--show-map`` apply to the
humanoid as they do to a BVH target, not silently ignored."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from needs import missing_data

import skelanim
from skelanim.cli import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line_error(code: int, err: str) -> str:
    assert code == 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


@pytest.fixture(scope="module")
def cmu(clips, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("dm_options") / "cmu.bvh"
    skelanim.save(clips["cmu_mb"][:12], path)
    return path


@pytest.fixture(scope="module")
def targets(mocap_dir: Path) -> dict[str, Path]:
    out = {"urdf": mocap_dir / "deepmimic" / "humanoid.urdf", "clip": mocap_dir / "deepmimic" / "humanoid3d_walk.txt"}
    for path in out.values():
        if not path.exists():
            missing_data(f"{path} not present")
    return out


@pytest.mark.parametrize("target", ["urdf", "clip"])
@pytest.mark.parametrize("suffix", [".txt", ".bvh"])
def test_a_missing_target_map_is_refused(cmu, targets, tmp_path, capsys, target, suffix):
    """As ``--map /missing.json`` is: one line naming the file, exit 2, no output."""
    out = tmp_path / f"o{suffix}"
    missing = tmp_path / "does" / "not" / "exist.yaml"
    for extra in ([], ["--show-map"]):
        code, _, err = run(["retarget", str(cmu), "--to", str(targets[target]), "-o", str(out), "--target-map",
                            str(missing), *extra], capsys)  # fmt: skip
        assert str(missing) in one_line_error(code, err)
        assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_bad_target_map_is_one_line_naming_it(cmu, targets, tmp_path, capsys):
    out = tmp_path / "o.txt"
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("neck: Neck\n")  # the humanoid's is "neck"
    code, _, err = run(["retarget", str(cmu), "--to", str(targets["urdf"]), "-o", str(out), "--target-map", str(wrong)],
                       capsys)  # fmt: skip
    line = one_line_error(code, err)
    assert "wrong.yaml" in line and "'Neck'" in line
    stripped = tmp_path / "stripped.yaml"
    stripped.write_text("l_upperarm: null\n")  # a required joint removed: the option to fix it is named
    code, _, err = run(["retarget", str(cmu), "--to", str(targets["urdf"]), "-o", str(out), "--target-map",
                        str(stripped)], capsys)  # fmt: skip
    line = one_line_error(code, err)
    assert "l_upperarm" in line and "(--target-map)" in line
    assert not out.exists()


@pytest.mark.parametrize("target", ["urdf", "clip"])
def test_show_map_prints_the_source_and_humanoid_mappings(cmu, targets, tmp_path, capsys, target):
    out = tmp_path / "o.txt"
    code, stdout, err = run(["retarget", str(cmu), "--to", str(targets[target]), "-o", str(out), "--show-map"], capsys)
    assert code == 0, err
    assert f"source {cmu}:" in stdout and f"target {targets[target]}:" in stdout
    assert "l_upleg     LeftUpLeg  name" in stdout  # the CMU source
    assert "r_forearm   right_elbow  name" in stdout and "neck        neck  name" in stdout  # the humanoid
    assert "wrote" in stdout and skelanim.load(out).num_frames == 12


def test_the_target_map_is_used_for_the_humanoid(cmu, targets, tmp_path, capsys):
    """``neck: null`` leaves the humanoid's neck out of the retarget: shown as unmapped, and the written clip's
    neck is no longer the source's (the rest of the body is unchanged)."""
    plain, mapped = tmp_path / "plain.txt", tmp_path / "mapped.txt"
    no_neck = tmp_path / "no_neck.yaml"
    no_neck.write_text("neck: null\n")
    code, _, err = run(["retarget", str(cmu), "--to", str(targets["urdf"]), "-o", str(plain)], capsys)
    assert code == 0, err
    code, stdout, err = run(["retarget", str(cmu), "--to", str(targets["urdf"]), "-o", str(mapped), "--show-map",
                             "--target-map", str(no_neck)], capsys)  # fmt: skip
    assert code == 0, err
    humanoid = stdout.split(f"target {targets['urdf']}:")[1]
    assert "\nneck        -\n" in humanoid and "neck        neck" not in humanoid
    a, b = skelanim.load(plain), skelanim.load(mapped)
    neck = a.skeleton.index("neck")
    assert float((a.rotations[:, neck].abs() - b.rotations[:, neck].abs()).abs().max()) > 1e-3
    others = [j for j in range(a.skeleton.num_joints) if j != neck]
    torch.testing.assert_close(a.rotations[:, others].abs(), b.rotations[:, others].abs(), atol=1e-4, rtol=0)
