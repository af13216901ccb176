"""``recognize --keep-going`` and ``gait --keep-going``: a file that cannot be read, is on another skeleton or has no
gait cycles no longer stops a batch; the others are reported, the failures come at the end as one line each
(with ``--json`` an entry of the file and its error, in the order given), and the exit status is 2. Without it, the
first bad file stops the command with its name and nothing is reported, as before."""

from __future__ import annotations

import json

from skelanim.cli import main

BOW = "bandai_namco_1/dataset-1_bow_normal_001.bvh"
WALK = "bandai_namco_1/dataset-1_walk_normal_001.bvh"
XIA = "xia_style/neutral_01_000.bvh"


def test_recognize_keeps_going_past_a_missing_file_and_another_skeleton(mocap_files, tmp_path, capsys):
    bow, walk, xia = map(str, mocap_files([BOW, WALK, XIA]))
    missing = str(tmp_path / "missing.bvh")
    args = ["recognize", bow, xia, missing, walk, "--no-progress"]
    assert main(args) == 2
    said = capsys.readouterr()
    assert said.out == "" and missing in said.err and len(said.err.strip().splitlines()) == 1  # paths first
    assert main([*args, "--keep-going"]) == 2
    said = capsys.readouterr()
    assert [line.split(":")[0] for line in said.out.splitlines()] == [bow, walk]
    assert " bow " in said.out.splitlines()[0] and " walk " in said.out.splitlines()[1]
    errors = said.err.strip().splitlines()
    assert len(errors) == 2 and errors[0].startswith(f"error: {xia}: the recogniser works on a 22-joint skeleton")
    assert errors[1].startswith(f"error: {missing}: no such file")
    assert main([*args, "--keep-going", "--json"]) == 2
    files = json.loads(capsys.readouterr().out)["files"]
    assert [f["file"] for f in files] == [bow, xia, missing, walk]
    assert [f.get("content") for f in files] == ["bow", None, None, "walk"]
    assert "22-joint" in files[1]["error"] and "no such file" in files[2]["error"]


def test_gait_keeps_going_past_a_take_without_gait_cycles(mocap_files, tmp_path, capsys):
    xia, bow = map(str, mocap_files([XIA, BOW]))
    missing = str(tmp_path / "missing.bvh")
    figure = tmp_path / "g.png"
    assert main(["gait", xia, bow, missing, "-o", str(figure)]) == 2
    assert capsys.readouterr().out == "" and not list(tmp_path.iterdir())  # stopped before drawing anything
    assert main(["gait", xia, bow, missing, "-o", str(figure), "--keep-going"]) == 2
    said = capsys.readouterr()
    assert "cadence" in said.out and said.out.count("cadence") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g_neutral_01_000.png"]
    errors = said.err.strip().splitlines()
    assert len(errors) == 2 and errors[0].startswith(f"error: {bow}: no gait cycles found")
    assert errors[1].startswith(f"error: {missing}: no such file")
    assert main(["gait", missing, xia, missing, "--keep-going"]) == 2  # a file named twice: its error once
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert main(["gait", xia, bow, "--json", "--keep-going"]) == 2
    facts = json.loads(capsys.readouterr().out)
    assert [f["file"] for f in facts] == [xia, bow] and 80 < facts[0]["cadence"] < 110 and "error" in facts[1]
