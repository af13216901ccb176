"""``skelanim evaluate`` says what its numbers are in: raw values in the files' units beside the height-normalised
ones (``--json``: ``jerk_raw``, ``foot_skating_raw``, ``ground_penetration_raw``, ``units``), and in the text table
the units, the height and each row's unit (an audit: only normalised jerk, skating and penetration, and neither
units nor height in the table)."""

from __future__ import annotations

import json
import shutil

import pytest

from skelanim.cli import main


@pytest.fixture(scope="module")
def sets(learn_files, tmp_path_factory):
    """Set A: a walk and a bow (Bandai, centimetres); set B: the other walk and bow."""
    root = tmp_path_factory.mktemp("evaluate-units")
    for name, files in (("a", learn_files[0:4:2]), ("b", learn_files[1:4:2])):
        (root / name).mkdir()
        for f in files:
            shutil.copy(f, root / name / f.name)
    return root / "a", root / "b"


def test_the_json_gives_raw_values_in_the_files_units(sets, capsys):
    a, b = sets
    capsys.readouterr()
    assert main(["evaluate", str(a), str(b), "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["units"] == "cm" and obj["height"] > 100  # Bandai: centimetres, a body about 1.4 m tall in its moves
    for side in ("a", "b"):
        s = obj[side]
        assert s["units"] == "cm"
        for key in ("jerk", "foot_skating", "ground_penetration"):  # raw = normalised times the height, in cm
            assert s[f"{key}_raw"] == pytest.approx(s[key] * s["height"], rel=1e-12), (side, key)
        assert {"motions", "frames", "jerk", "foot_skating", "ground_penetration", "bone_length_error", "height",
                "floor", "diversity", "recognised"} <= set(s)  # the keys read before are kept  # fmt: skip
    assert obj["paired_raw"]["mpjpe"] == pytest.approx(obj["paired"]["mpjpe"] * obj["a"]["height"], rel=1e-12)
    assert set(obj["paired"]) == {"mpjpe", "mpjpe_root_relative", "angle_deg"}


def test_the_text_table_names_units_and_height(sets, capsys):
    a, b = sets
    capsys.readouterr()
    assert main(["evaluate", str(a), str(b)]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {line[:36].strip(): line[36:].split() for line in lines[1:] if len(line) > 36 and not line.startswith("note")}
    assert rows["units"] == ["cm", "cm"]
    assert float(rows["height [u]"][0]) > 100
    for label in ("jerk [h/s^3]", "jerk_raw [u/s^3]", "foot_skating [h/s]", "foot_skating_raw [u/s]",
                  "ground_penetration [h]", "ground_penetration_raw [u]", "mpjpe [h of A]", "mpjpe_raw [u of A]"):  # fmt: skip
        assert label in rows, label
    jerk, raw, height = (float(rows[k][0]) for k in ("jerk [h/s^3]", "jerk_raw [u/s^3]", "height [u]"))
    assert raw == pytest.approx(jerk * height, rel=1e-3)  # 4 significant digits printed
    assert any(line.startswith("h: heights") and "u: the set's file units" in line for line in lines)
