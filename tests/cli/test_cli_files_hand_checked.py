"""The file commands (info, convert, gait), the exit codes and the shared option checks, against independent
sources: the file's own text counted by hand, the library called directly with the same arguments, hand values.

Each test here was seen to fail with a small change to ``src/skelanim/cli`` that the other CLI tests let pass (a
mutation audit): a JSON key of ``info`` miscounted, a figure picked off by one, an exit code.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from bvh_text import POS, ROT, TWO_FIGURES, make_bvh, random_values  # tests/helpers
from cli_output import run_cli as run  # tests/helpers

import skelanim
from skelanim.cli import main
from skelanim.data.samples import sample_path


def info_json(path: Path, capsys) -> dict:
    code, out, err = run(["info", str(path), "--json"], capsys)
    assert code == 0, err
    return json.loads(out)


# --- info: every count against the BVH text itself ------------------------------------------------------------------

CMU = "cmu_cgspeed_mb/01_01.bvh"


def test_info_counts_end_sites_and_channels_as_the_bvh_text_has_them(mocap_dir: Path, capsys):
    """``end_sites`` is the number of ``End Site`` blocks and ``channels_per_joint`` the number of joints of each
    ``CHANNELS n`` line, counted in the file's text (not through skelanim's reader)."""
    path = mocap_dir / CMU
    text = path.read_text()
    counts: dict[str, int] = {}
    for n in re.findall(r"^\s*CHANNELS\s+(\d+)", text, flags=re.MULTILINE):
        counts[n] = counts.get(n, 0) + 1
    facts = info_json(path, capsys)
    assert facts["end_sites"] == len(re.findall(r"^\s*End Site", text, flags=re.MULTILINE)) == 7
    assert facts["channels_per_joint"] == dict(sorted(counts.items())) == {"3": 30, "6": 1}
    assert facts["joints"] == len(re.findall(r"^\s*(ROOT|JOINT)\s", text, flags=re.MULTILINE)) == 31


def test_info_counts_left_right_pairs_by_hand(capsys):
    """The DeepMimic walk: right/left hip, knee, ankle, shoulder and elbow, five pairs."""
    facts = info_json(sample_path("walk"), capsys)
    assert facts["left_right_pairs"] == 5


def test_info_says_whether_a_joint_below_the_root_has_animated_translations(tmp_path: Path, capsys):
    """A joint below the root with position channels is ``animated_joint_translations: true``; the same file with
    rotations alone below the root is ``false``."""
    moving = [POS + ROT, POS + ROT, ROT, ROT]  # the Spine has position channels
    still = [POS + ROT, ROT, ROT, ROT]
    for channels, expected in ((moving, True), (still, False)):
        path = tmp_path / f"{expected}.bvh"
        path.write_text(make_bvh(channels, random_values(channels, frames=3)))
        facts = info_json(path, capsys)
        assert facts["animated_joint_translations"] is expected
        assert facts["channels_per_joint"] == ({"3": 2, "6": 2} if expected else {"3": 3, "6": 1})


def test_info_text_prints_floats_to_four_significant_digits(mocap_dir: Path, capsys):
    """The text form of a 120 fps CMU file: ``fps: 120`` and the duration of its frame count, by hand."""
    path = mocap_dir / CMU
    frames = int(re.search(r"^Frames:\s*(\d+)", path.read_text(), flags=re.MULTILINE).group(1))
    code, out, err = run(["info", str(path)], capsys)
    assert code == 0, err
    lines = {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in out.splitlines())}
    assert lines["fps"] == "120"
    assert float(lines["duration_s"]) == pytest.approx((frames - 1) / 120, rel=5e-4)
    assert lines["frames"] == str(frames)


# --- convert: options reach the written file ------------------------------------------------------------------------


def test_convert_loop_none_overrides_a_looping_source(tmp_path: Path, capsys):
    """``--loop none`` on a clip that says ``Loop: wrap`` writes ``none`` (read back as JSON, not through skelanim)."""
    src = sample_path("run")
    assert json.loads(src.read_text())["Loop"] == "wrap"
    out = tmp_path / "once.txt"
    code, _, err = run(["convert", str(src), str(out), "--loop", "none"], capsys)
    assert code == 0, err
    assert json.loads(out.read_text())["Loop"] == "none"
    code, _, err = run(["convert", str(src), str(tmp_path / "kept.txt")], capsys)
    assert code == 0 and json.loads((tmp_path / "kept.txt").read_text())["Loop"] == "wrap"


def test_convert_fps_is_kept_to_the_fraction(tmp_path: Path, capsys):
    """``--fps 29.97`` writes a BVH whose ``Frame Time`` is 1/29.97 s (read from the text), and says so."""
    out = tmp_path / "ntsc.bvh"
    code, stdout, err = run(["convert", str(sample_path("walk")), str(out), "--fps", "29.97"], capsys)
    assert code == 0, err
    text = out.read_text()
    frame_time = float(re.search(r"^Frame Time:\s*(\S+)", text, flags=re.MULTILINE).group(1))
    frames = int(re.search(r"^Frames:\s*(\d+)", text, flags=re.MULTILINE).group(1))
    assert frame_time == pytest.approx(1 / 29.97, rel=1e-5)
    assert stdout.strip() == f"wrote {out} ({frames} frames at 29.97 fps)"


def test_convert_takes_the_lowest_rate_the_help_allows(tmp_path: Path, capsys):
    """``--fps 0.01`` (the bottom of the documented 0.01 to 10000) is taken: one frame every 100 s, by hand."""
    out = tmp_path / "slow.bvh"
    code, _, err = run(["convert", str(sample_path("walk")), str(out), "--fps", "0.01"], capsys)
    assert code == 0, err
    frame_time = float(re.search(r"^Frame Time:\s*(\S+)", out.read_text(), flags=re.MULTILINE).group(1))
    assert frame_time == pytest.approx(100.0)


def test_info_guesses_the_unit_of_a_crawl_from_its_standing_body(mocap_dir: Path, tmp_path: Path, capsys):
    """The DeepMimic crawl (metres) scaled by 100 is a 1.38 m body in centimetres that is 41 units tall on all
    fours: ``units_guess`` is cm (a 41 cm posed height alone would not say cm)."""
    from skelanim.core.units import guess_unit

    out = tmp_path / "crawl_cm.bvh"
    code, _, err = run(["convert", str(mocap_dir / "deepmimic" / "humanoid3d_crawl.txt"), str(out), "--scale", "100"],
                       capsys)  # fmt: skip
    assert code == 0, err
    facts = info_json(out, capsys)
    assert facts["height"] < 60  # on all fours
    assert guess_unit(facts["height"]) != "cm"  # so the posed height would have guessed wrong
    assert facts["units_guess"] == "cm"


# --- gait: the text report says the analysis' own numbers -----------------------------------------------------------

BANDAI_WALK = "bandai_namco_1/dataset-1_walk_normal_001.bvh"


def test_gait_text_gives_metres_once_for_a_file_in_metres(mocap_dir: Path, tmp_path: Path, capsys):
    """The Bandai walk scaled to metres (``convert --scale 0.01``): the lengths are said in m, without a second
    ``= ... m`` conversion (which a file in centimetres gets)."""
    metres = tmp_path / "walk_m.bvh"
    code, _, err = run(["convert", str(mocap_dir / BANDAI_WALK), str(metres), "--scale", "0.01"], capsys)
    assert code == 0, err
    code, out, err = run(["gait", str(metres)], capsys)
    assert code == 0, err
    lines = {k.strip(): v.strip() for k, v in (line.split(": ", 1) for line in out.splitlines())}
    assert lines["stride length"].split()[1] == "m" and "=" not in lines["stride length"]
    assert lines["walking speed"].split()[1] == "m/s" and "=" not in lines["walking speed"]


def test_gait_text_reports_the_analysis_numbers(mocap_dir: Path, capsys):
    """Each line of ``gait FILE`` against :func:`gait_analysis` run directly: stride length (in cm, and in metres at
    0.01 m per cm, by hand), step width, speed, and stance / swing adding up to 100 %."""
    from skelanim.metrics.gait import gait_analysis

    path = mocap_dir / BANDAI_WALK
    report = gait_analysis(skelanim.load(path))
    code, out, err = run(["gait", str(path)], capsys)
    assert code == 0, err
    lines = {k.strip(): v.strip() for k, v in (line.split(": ", 1) for line in out.splitlines())}
    stride = float(lines["stride length"].split()[0])
    assert stride == pytest.approx(report.stride_length, rel=1e-3)
    assert f"= {report.stride_length * 0.01:.3f} m" in lines["stride length"]  # a Bandai file is in centimetres
    assert float(lines["step width"].split()[0]) == pytest.approx(report.step_width, rel=1e-3)
    assert float(lines["walking speed"].split()[0]) == pytest.approx(report.walking_speed, rel=1e-3)
    assert f"= {report.walking_speed * 0.01:.3f} m/s" in lines["walking speed"]
    stance, swing = (float(p.strip().rstrip("%")) for p in lines["stance / swing"].split("(")[0].split("/"))
    assert stance == pytest.approx(100 * report.stance_fraction, abs=0.05)
    assert stance + swing == pytest.approx(100, abs=0.11)
    assert lines["stride time"] == f"{report.stride_time:.3f} s"


# --- convert --figure: the N-th ROOT, and no N past the last ---------------------------------------------------------


def test_convert_figure_past_the_last_is_one_line_and_writes_nothing(tmp_path: Path, capsys):
    two = tmp_path / "two.bvh"
    two.write_text(TWO_FIGURES.format(a="A", b="B"))
    code, _, err = run(["convert", str(two), str(tmp_path / "b.bvh"), "--figure", "2"], capsys)
    assert code == 0, err
    assert "ROOT B" in (tmp_path / "b.bvh").read_text() and "ROOT A" not in (tmp_path / "b.bvh").read_text()
    for n in ("3", "4"):
        out = tmp_path / f"f{n}.bvh"
        code, _, err = run(["convert", str(two), str(out), "--figure", n], capsys)
        assert code == 2 and err.count("\n") == 1 and err.startswith("error: "), err
        assert f"holds 2 figure(s), not {n}" in err and not out.exists()


# --- exit codes: the documented numbers -----------------------------------------------------------------------------


def test_an_interrupt_outside_the_command_exits_130(monkeypatch, capsys):
    """A Ctrl-C that lands before the command runs (in the argument parsing, say) is exit 130, as inside it."""
    from skelanim import cli

    def interrupted(argv):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_run", interrupted)
    assert main(["info", "whatever.bvh"]) == 130


@pytest.mark.parametrize(
    "text",
    [
        "CUDA out of memory. Tried to allocate 2.00 GiB",
        "[enforce fail at alloc_cpu.cpp:83] DefaultCPUAllocator: can't allocate memory",
    ],
)
def test_torch_running_out_of_memory_is_one_line_exit_2(text, monkeypatch, tmp_path: Path, capsys):
    """torch's two ways of saying it could not allocate (a GPU's and the CPU's) are the one-line memory error; any
    other RuntimeError is not hidden."""

    def fails(*args, **kwargs):
        raise RuntimeError(text)

    monkeypatch.setattr(skelanim, "load", fails)
    (tmp_path / "a.bvh").write_text("HIERARCHY\n")
    code, out, err = run(["info", str(tmp_path / "a.bvh")], capsys)
    assert code == 2 and out == ""
    assert err == "error: not enough memory for this (a smaller --fps, --dpi, --seconds, -n or input?)\n"


def test_another_runtime_error_is_not_called_a_memory_error(monkeypatch, tmp_path: Path):
    def fails(*args, **kwargs):
        raise RuntimeError("something else")

    monkeypatch.setattr(skelanim, "load", fails)
    (tmp_path / "a.bvh").write_text("HIERARCHY\n")
    with pytest.raises(RuntimeError, match="something else"):
        main(["info", str(tmp_path / "a.bvh")])


# --- learn_common: the shared option checks, by hand ------------------------------------------------------------------


def test_generation_plan_rounds_seconds_to_the_nearest_frame():
    """0.99 s at 25 fps is 24.75 frames: 25 (the nearest), not 24; 0.5 s at 30 fps is 15; a plan gives each part its
    own rounded length."""
    from skelanim.cli.learn_common import generation_plan

    assert generation_plan("walk", 0.99, 25.0, 64) == [("walk", 25)]
    assert generation_plan("walk", 0.5, 30.0, 64) == [("walk", 15)]
    assert generation_plan("walk", None, 25.0, 64) == [("walk", 64)]
    assert generation_plan("walk:0.99,run:2", None, 25.0, 64) == [("walk", 25), ("run", 50)]


@pytest.mark.parametrize("content", ["walk:0", "walk:3,run:0", "walk:0.01", "walk:-1", ":3", "walk:x"])
def test_generation_plan_refuses_a_part_of_no_frame(content):
    """A part shorter than half a frame at 25 fps (0 s, 0.01 s = 0.25 frames) is no length: a usage error."""
    import typer

    from skelanim.cli.learn_common import generation_plan

    with pytest.raises(typer.BadParameter, match="is not CONTENT:SECONDS"):
        generation_plan(content, None, 25.0, 64)


def test_a_plan_longer_than_ten_minutes_is_refused():
    import typer

    from skelanim.cli.learn_common import generation_plan

    assert sum(f for _, f in generation_plan("walk:300,run:300", None, 25.0, 64)) == 600 * 25
    with pytest.raises(typer.BadParameter, match="more than 600 s"):
        generation_plan("walk:300,run:300.1", None, 25.0, 64)


def test_split_values_drops_empty_items():
    """``--val a,,b --val c,`` is ``[a, b, c]``: a doubled or trailing comma names nothing."""
    from skelanim.cli.learn_common import split_values

    assert split_values(["a,,b", "c,"]) == ["a", "b", "c"]
    assert split_values([","]) == [] and split_values(None) == []


@pytest.mark.parametrize("argv, said", [
    (["learn", "recognize", "train", "--amplitude", "2", "1"], "expected 0 < LO <= HI, got 2.0 1.0"),
    (["learn", "recognize", "train", "--amplitude", "0", "1"], "expected 0 < LO <= HI, got 0.0 1.0"),
    (["ik", "train", "--lr", "0"], "must be a positive finite learning rate, got 0.0"),
    (["learn", "recognize", "combine", "only_one"], "give two or more model folders"),
])  # fmt: skip
def test_bad_ranges_and_rates_are_refused_before_any_work(argv, said, tmp_path: Path, capsys):
    """An empty or reversed range and a learning rate of 0 are usage errors (exit 2, one line), before the data is
    looked at and with nothing written."""
    out = tmp_path / "model"
    data = [] if "combine" in argv else ["--data", str(tmp_path / "none.bvh")]
    code, stdout, err = run([*argv, *data, "--out", str(out)], capsys)
    assert code == 2 and stdout == "" and err.count("\n") == 1 and said in err, err
    assert list(tmp_path.iterdir()) == []


def test_an_abort_is_one_line_and_exit_1(monkeypatch, capsys):
    """typer turns an EOFError inside a command into its Abort, which is a RuntimeError: it had escaped main as a
    traceback (the RuntimeError branch re-raised it) instead of 'error: aborted', exit 1."""
    import skelanim

    def end_of_input(*args, **kwargs):
        raise EOFError

    monkeypatch.setattr(skelanim, "load", end_of_input)
    assert main(["info", "x.bvh"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "error: aborted"


@pytest.mark.parametrize("dpi", [1, 9])
def test_plot_refuses_a_dpi_its_fonts_cannot_render(tmp_path, capsys, dpi):
    """``--dpi`` below 10 (1-4 had failed in FreeType after drawing, a traceback): refused before any work, in one
    line naming the option, nothing written; 10, the least taken, renders every kind."""
    walk = str(sample_path("walk"))
    out = tmp_path / "a.png"
    assert main(["plot", walk, "-o", str(out), "--dpi", str(dpi)]) == 2
    err = capsys.readouterr().err
    assert "--dpi" in err and len(err.strip().splitlines()) == 1 and not out.exists()
    for kind in ("trajectories", "angles", "contacts", "poses"):
        assert main(["plot", walk, "-o", str(out), "--kind", kind, "--dpi", "10"]) == 0
