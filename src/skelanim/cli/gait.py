"""Gait command: ``gait``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from skelanim.cli import app
from skelanim.cli.files import load_one_figure, with_option_hint

if TYPE_CHECKING:
    from skelanim.metrics.gait import GaitReport


def figure_paths(out: Path, files: list[Path]) -> list[Path]:
    """Where ``gait -o OUT`` draws each file's report: ``OUT`` itself for one file, ``OUT``'s stem, ``_``, the file's
    stem and ``OUT``'s suffix for several (``-o gait.png walk.bvh run.bvh``: ``gait_walk.png``, ``gait_run.png``)."""
    if len(files) == 1:
        return [out]
    paths = [out.with_name(f"{out.stem}_{file.stem}{out.suffix}") for file in files]
    seen: dict[Path, Path] = {}
    for file, path in zip(files, paths):
        if path in seen:
            raise typer.BadParameter(f"{seen[path]} and {file} would both be drawn to {path} (two files named "
                                     f"{file.stem!r}): run gait once for each", param_hint="'-o'")  # fmt: skip
        seen[path] = file
    return paths


@app.command()
def gait(
    files: list[Path] = typer.Argument(..., help="Walking motion files."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (a list of them for several files)."),
    out: Path | None = typer.Option(None, "-o", "--out", help="Also write a report figure (.png, .pdf, .svg); for "
                                    "several files one each, OUT's name followed by _ and the file's (gait_walk.png)."),
    keep_going: bool = typer.Option(False, "--keep-going", help="Report the other files where one cannot be read or "
                                    "analysed; its error comes at the end (with --json, an entry of its file and "
                                    "error), and the exit status is 2."),
) -> None:
    """Gait analysis of each FILE: cadence, stride length, step width, speed, stance/swing, flexion curves.

    Every file is read and analysed before anything is printed or drawn, so a bad one stops the command with its
    name (with --keep-going, the others are reported)."""
    from skelanim.cli import error_line
    from skelanim.errors import SkelanimError
    from skelanim.metrics.gait import gait_analysis

    figures = figure_paths(out, files) if out is not None else [None] * len(files)
    reports: list[GaitReport | str] = []  # a report, or with --keep-going the file's error line
    for file in files:
        try:
            motion = load_one_figure(file, "gait")
            try:
                reports.append(gait_analysis(motion))
            except SkelanimError as err:
                with_option_hint(err, [file], " (gait analysis finds the feet by their names: left/right foot, ankle, toe)")
                raise
        except (SkelanimError, OSError) as err:
            if not keep_going:
                raise
            reports.append(error_line(err))
    facts = [{"file": str(file), **({"error": report} if isinstance(report, str) else report.to_dict())}
             for file, report in zip(files, reports)]  # fmt: skip
    done = [(file, report, figure, fact) for file, report, figure, fact in zip(files, reports, figures, facts)
            if not isinstance(report, str)]  # fmt: skip
    failed = list(dict.fromkeys(report for report in reports if isinstance(report, str)))  # a file named twice, once
    for file, report, figure, _ in done:
        if figure is not None:
            from skelanim.viz.plots import plot_gait_report, save_figure

            save_figure(plot_gait_report(report, label=file.name), figure)
    if as_json:
        typer.echo(json.dumps(facts[0] if len(facts) == 1 else facts, indent=2))
    else:
        for number, (file, report, figure, fact) in enumerate(done):
            if number:
                typer.echo("")
            _print_report(file, report, fact)
            if figure is not None:
                typer.echo(f"wrote {figure}")
    for message in failed:
        typer.echo(f"error: {message}", err=True)
    if failed:
        raise typer.Exit(2)


def _print_report(file: Path, report: GaitReport, facts: dict) -> None:
    """The text block of one file's report."""
    units = report.units or facts["units_guess"]  # lengths below in the file's units, guessed from the height

    def in_metres(key: str, per: str) -> str:
        return "" if units == "m" or facts[key] is None else f" = {facts[key]:.3f} m{per}"

    lines = [
        ("file", str(file)),
        ("gait cycles", f"{report.num_cycles} ({facts['num_heel_strikes']} heel strikes"
                        + (f"; the loop played {report.loop_plays} times in a row)" if report.loop_plays > 1 else ")")),
        ("cadence", f"{report.cadence:.1f} steps/min"),
        ("stride time", f"{report.stride_time:.3f} s"),
        ("stride length", (f"{report.stride_length:.4g} {units}{in_metres('stride_length_m', '')} "
                          f"({facts['stride_length_per_height']:.3f} heights)")),
        ("step width", f"{report.step_width:.4g} {units} ({facts['step_width_per_height'] or float('nan'):.3f} heights)"),
        ("walking speed", (f"{report.walking_speed:.4g} {units}/s{in_metres('walking_speed_m_per_s', '/s')} "
                          f"({facts['walking_speed_per_height']:.3f} heights/s)")),
        ("stance / swing", (f"{report.stance_fraction:.1%} / {1 - report.stance_fraction:.1%} "
                            f"(ratio {report.stance_swing_ratio:.2f})")),
    ]
    for name in ("knee_flexion", "hip_flexion"):
        mean, _ = report.curve(name)
        lines.append((name.replace("_", " "), f"{mean.min():.1f} to {mean.max():.1f} deg over the cycle (mean)"))
    for key, value in lines:
        typer.echo(f"{key:>15}: {value}")
