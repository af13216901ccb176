"""``skelanim convert-all``: many files into one folder with ``convert``'s options, against the library called on
each file alone; every name checked before anything is written; a bad file stops the batch with whole outputs left."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cli_output import run_cli as run  # tests/helpers

import skelanim
from skelanim import ops
from skelanim.io.positions import JointPositions

WALKS = ["bandai_namco_1/dataset-1_walk_normal_001.bvh", "bandai_namco_1/dataset-1_walk_sad_001.bvh"]


def _copies(mocap_files, folder: Path) -> list[Path]:
    """The two walks copied into ``folder`` (a folder of sources the test may add to)."""
    folder.mkdir(parents=True, exist_ok=True)
    copies = []
    for path in mocap_files(WALKS):
        copy = folder / path.name
        copy.write_bytes(path.read_bytes())
        copies.append(copy)
    return copies


def test_each_file_is_what_the_library_makes_of_it_alone(mocap_files, tmp_path: Path, capsys):
    sources = _copies(mocap_files, tmp_path / "in")
    out = tmp_path / "out"
    code, text, err = run(["convert-all", str(tmp_path / "in"), "-o", str(out), "--to", "npz", "--fps", "20"], capsys)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == sorted(p.stem + ".npz" for p in sources)
    for src in sources:
        expected = JointPositions.from_motion(ops.resample(skelanim.load(src), 20))  # the library on this file alone
        got = np.load(out / (src.stem + ".npz"))
        np.testing.assert_allclose(got["positions"], np.asarray(expected.positions), rtol=0, atol=1e-9)
        assert list(got["joints"]) == list(expected.names)
    assert text.strip() == f"wrote 2 file(s) to {out}"
    assert "2/2" in err  # the progress bar, on stderr


def test_bvh_outputs_equal_convert_of_each_file(mocap_files, tmp_path: Path, capsys):
    sources = _copies(mocap_files, tmp_path / "in")
    code, _, err = run(["convert-all", *map(str, sources), "-o", str(tmp_path / "all"), "--to", ".BVH",
                        "--simple-channels", "--no-progress"], capsys)  # fmt: skip
    assert code == 0 and err == ""
    for src in sources:
        code, _, err = run(["convert", str(src), str(tmp_path / "one.bvh"), "--simple-channels"], capsys)
        assert code == 0, err
        assert (tmp_path / "all" / src.name).read_text() == (tmp_path / "one.bvh").read_text()


def test_two_sources_of_one_name_are_refused_before_anything_is_written(mocap_files, tmp_path: Path, capsys):
    first = _copies(mocap_files, tmp_path / "a")[0]
    twin = tmp_path / "b" / first.name
    twin.parent.mkdir()
    twin.write_bytes(first.read_bytes())
    out = tmp_path / "out"
    code, text, err = run(["convert-all", str(first), str(twin), "-o", str(out), "--to", ".glb"], capsys)
    assert code == 2 and text == "" and "would both be written to" in err and "Traceback" not in err
    assert not out.exists() or not any(out.iterdir())


def test_an_output_that_is_a_source_is_refused(mocap_files, tmp_path: Path, capsys):
    sources = _copies(mocap_files, tmp_path / "in")
    before = [s.read_bytes() for s in sources]
    code, _, err = run(["convert-all", str(tmp_path / "in"), "-o", str(tmp_path / "in"), "--to", ".bvh"], capsys)
    assert code == 2 and "is one of the sources" in err
    assert [s.read_bytes() for s in sources] == before


def test_a_bad_file_stops_the_batch_and_leaves_whole_outputs(mocap_files, tmp_path: Path, capsys):
    sources = _copies(mocap_files, tmp_path / "in")
    late = tmp_path / "in" / "zz_bad.bvh"  # last by name: the two walks are converted before it
    late.write_text("HIERARCHY\nROOT Hips\n{\n")
    out = tmp_path / "out"
    code, text, err = run(["convert-all", str(tmp_path / "in"), "-o", str(out), "--to", ".npz"], capsys)
    assert code == 2 and text == ""
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and str(late) in errors[0] and "Traceback" not in err
    assert sorted(p.name for p in out.iterdir()) == sorted(p.stem + ".npz" for p in sources)  # no temporary left
    for src in sources:
        assert np.load(out / (src.stem + ".npz"))["positions"].shape[0] == skelanim.load(src).num_frames


def test_keep_going_converts_the_files_after_a_bad_one_and_lists_it(mocap_files, tmp_path: Path, capsys):
    """With --keep-going a bad file in the middle is listed at the end (exit 2) and the files after it converted."""
    sources = _copies(mocap_files, tmp_path / "in")
    bad = tmp_path / "in" / (sources[0].stem + "_cut.bvh")  # between the two walks by name
    bad.write_bytes(sources[0].read_bytes()[:20000])
    assert sorted(p.name for p in (tmp_path / "in").iterdir()).index(bad.name) == 1
    out = tmp_path / "out"
    code, text, err = run(["convert-all", str(tmp_path / "in"), "-o", str(out), "--to", ".npz", "--keep-going",
                           "--no-progress"], capsys)  # fmt: skip
    assert code == 2 and "Traceback" not in err
    assert text.strip() == f"wrote 2 file(s) to {out}; 1 could not be converted:"
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {bad}:")
    assert sorted(p.name for p in out.iterdir()) == sorted(p.stem + ".npz" for p in sources)


def test_a_folder_whose_files_are_in_its_subfolders_says_how_to_read_them(mocap_files, tmp_path: Path, capsys):
    _copies(mocap_files, tmp_path / "top" / "sub")
    code, _, err = run(["convert-all", str(tmp_path / "top"), "-o", str(tmp_path / "out"), "--to", ".npz"], capsys)
    assert code == 2
    assert f"no motion files here (its subfolders hold some: '{tmp_path / 'top'}/**/*.bvh' reads them)" in err
    code, _, err = run(["convert-all", f"{tmp_path / 'top'}/**/*.bvh", "-o", str(tmp_path / "out"), "--to", ".npz",
                        "--no-progress"], capsys)  # fmt: skip
    assert code == 0, err
    assert len(list((tmp_path / "out").iterdir())) == 2
    deeper = tmp_path / "txt" / "sub"  # the suffix the subfolders hold, of those --from reads
    deeper.mkdir(parents=True)
    (deeper / "walk.txt").write_text("{}")
    code, _, err = run(["convert-all", str(tmp_path / "txt"), "--from", ".bvh,.txt", "-o", str(tmp_path / "o2"),
                        "--to", ".npz"], capsys)  # fmt: skip
    assert code == 2 and f"'{tmp_path / 'txt'}/**/*.txt' reads them" in err


@pytest.mark.parametrize("argv, needle", [
    (["--to", ".xyz"], "no format skelanim writes"),
    (["--to", ".bvh", "--from", ".abc"], "motion formats are"),
    (["--to", ".bvh", "--loop", "wrap"], "has no loop field"),
    (["--to", ".npz", "--up", "z"], "--up is for .glb/.gltf"),
])
def test_bad_options_are_refused_in_one_line(argv, needle, mocap_files, tmp_path: Path, capsys):
    sources = _copies(mocap_files, tmp_path / "in")
    code, text, err = run(["convert-all", str(sources[0]), "-o", str(tmp_path / "out"), *argv], capsys)
    assert code == 2 and text == "" and needle in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_a_file_named_twice_is_converted_once(mocap_files, tmp_path: Path, capsys):
    sources = _copies(mocap_files, tmp_path / "in")
    code, text, err = run(["convert-all", str(tmp_path / "in"), str(sources[0]), "-o", str(tmp_path / "out"),
                           "--to", ".npz", "--no-progress"], capsys)  # fmt: skip
    assert code == 0, err
    assert text.strip() == f"wrote 2 file(s) to {tmp_path / 'out'}"
