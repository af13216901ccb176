"""Gait command: ``gait``."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from skelanim.cli import app
from skelanim.cli.files import load_one_figure, with_option_hint


@app.command()
def gait(
    file: Path = typer.Argument(..., help="A walking motion file."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of text."),
    out: Path | None = typer.Option(None, "-o", "--out", help="Also write a report figure (.png, .pdf, .svg)."),
) -> None:
    """Gait analysis of FILE: cadence, stride length, step width, speed, stance/swing, flexion curves."""
    from skelanim.errors import SkelanimError
    from skelanim.metrics.gait import gait_analysis

    motion = load_one_figure(file, "gait")
    try:
        report = gait_analysis(motion)
    except SkelanimError as err:
        with_option_hint(err, [file], " (gait analysis finds the feet by their names: left/right foot, ankle, toe)")
        raise
    if out is not None:
        from skelanim.viz.plots import plot_gait_report, save_figure

        save_figure(plot_gait_report(report, label=file.name), out)
    facts = report.to_dict()
    if as_json:
        typer.echo(json.dumps({"file": str(file), **facts}, indent=2))
        return
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
    if out is not None:
        typer.echo(f"wrote {out}")
