"""``skelanim gait`` on several files: one report each, in the order given, each the report of
:func:`skelanim.metrics.gait.gait_analysis` run on that file alone; a JSON list; one figure per file, named as the
help says; and nothing printed or drawn when one file cannot be analysed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_output import run_cli as run  # tests/helpers
from PIL import Image

import skelanim
from skelanim.metrics.gait import gait_analysis

WALKS = ["bandai_namco_1/dataset-1_walk_normal_001.bvh", "bandai_namco_1/dataset-1_walk_sad_001.bvh"]


def test_two_files_give_each_files_own_report_in_order(mocap_files, capsys):
    paths = mocap_files(WALKS)
    code, out, err = run(["gait", *map(str, paths)], capsys)
    assert code == 0, err
    blocks = out.strip().split("\n\n")
    assert len(blocks) == 2
    for block, path in zip(blocks, paths):
        report = gait_analysis(skelanim.load(path))  # the library, on this file alone
        lines = dict(line.strip().split(": ", 1) for line in block.splitlines())
        assert lines["file"] == str(path)
        assert lines["cadence"] == f"{report.cadence:.1f} steps/min"
        assert lines["stride time"] == f"{report.stride_time:.3f} s"


def test_two_files_as_json_are_a_list_of_each_files_object(mocap_files, capsys):
    paths = mocap_files(WALKS)
    code, out, err = run(["gait", *map(str, paths), "--json"], capsys)
    assert code == 0, err
    objects = json.loads(out)
    assert isinstance(objects, list) and [o["file"] for o in objects] == list(map(str, paths))
    for facts, path in zip(objects, paths):
        report = gait_analysis(skelanim.load(path))
        assert facts["cadence"] == pytest.approx(report.cadence, rel=1e-12)
        assert facts["num_heel_strikes"] == report.to_dict()["num_heel_strikes"]
    code, out, _ = run(["gait", str(paths[0]), "--json"], capsys)  # one file: one object, as before
    assert code == 0 and json.loads(out)["file"] == str(paths[0])


def test_each_file_gets_its_figure_named_after_out_and_the_file(mocap_files, tmp_path: Path, capsys):
    paths = mocap_files(WALKS)
    out = tmp_path / "figs" / "gait.png"
    code, text, err = run(["gait", *map(str, paths), "-o", str(out)], capsys)
    assert code == 0, err
    expected = [tmp_path / "figs" / f"gait_{path.stem}.png" for path in paths]
    assert sorted(p.name for p in out.parent.iterdir()) == sorted(p.name for p in expected)
    for figure in expected:
        with Image.open(figure) as image:
            assert image.format == "PNG" and image.width > 200
        assert f"wrote {figure}" in text
    code, _, err = run(["gait", str(paths[0]), "-o", str(out)], capsys)  # one file: OUT itself
    assert code == 0 and out.is_file(), err


def test_two_files_of_one_name_are_refused_before_anything_is_drawn(mocap_files, tmp_path: Path, capsys):
    path = mocap_files(WALKS[:1])[0]
    twin = tmp_path / "copy" / path.name
    twin.parent.mkdir()
    twin.write_bytes(path.read_bytes())
    code, out, err = run(["gait", str(path), str(twin), "-o", str(tmp_path / "g.png")], capsys)
    assert code == 2 and out == "" and "Traceback" not in err
    assert "would both be drawn to" in err and path.stem in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy"]


def test_a_bad_second_file_stops_the_command_before_it_prints_or_draws(mocap_files, tmp_path: Path, capsys):
    path = mocap_files(WALKS[:1])[0]
    bad = tmp_path / "bad.bvh"
    bad.write_text("HIERARCHY\nROOT\n")
    code, out, err = run(["gait", str(path), str(bad), "-o", str(tmp_path / "g.png")], capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {bad}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.bvh"]
