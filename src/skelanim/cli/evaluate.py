"""``skelanim evaluate``: compare two sets of motion files with every metric (:mod:`skelanim.metrics.compare`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer

from skelanim.cli import app
from skelanim.cli.files import load_one_figure
from skelanim.cli.learn_common import apply_threads, echo_json, run_device_option, threads_option


@app.command("evaluate")
def evaluate_cmd(
    set_a: Path = typer.Argument(..., help="A motion file or a folder of them."),
    set_b: Path = typer.Argument(..., help="Another file or folder."),
    recognizer: Path | None = typer.Option(
        None, "--recognizer", help="Recogniser for FID/diversity (default: the shipped one)."
    ),
    labels: str | None = typer.Option(
        None, "--labels", help="How the file names carry their content, for 'recognised': 'bandai', 'generated' or a "
        "regular expression with a named group content; names it does not match are read by the first two (default).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    device: str = run_device_option(),
    threads: int | None = threads_option(),
) -> None:
    """Compare two sets of motion files with every metric (FID, diversity, recognition, jerk, foot skating, ...)."""
    import skelanim
    from skelanim.data.dataset import expand_paths
    from skelanim.data.labels import LabelError, known_labels, label_parser
    from skelanim.learn.recognize import Recognizer
    from skelanim.metrics.compare import compare_sets

    try:
        parse = label_parser(labels) if labels is not None else known_labels
    except ValueError as err:
        raise typer.BadParameter(str(err), param_hint="--labels") from None
    if parse is None:
        raise typer.BadParameter("'none' names no content; leave --labels out to compare without 'recognised'",
                                 param_hint="--labels")  # fmt: skip
    from skelanim.data.labels import LABEL_PRESETS

    if labels is not None and "content" not in re.compile(LABEL_PRESETS.get(labels, labels)).groupindex:
        raise typer.BadParameter("the pattern has no group named content, which is all evaluate reads from a name",
                                 param_hint="--labels")  # fmt: skip

    def content_of(path: Path) -> str | None:
        try:
            return parse(path).get("content")
        except LabelError:  # a name the pattern does not match: the known schemes (skelanim generate's), else none
            return known_labels(path).get("content")

    suffixes = tuple(skelanim.io.MOTION_FORMATS)
    files = {k: expand_paths([p], suffixes=suffixes) for k, p in (("a", set_a), ("b", set_b))}
    for k, p in (("a", set_a), ("b", set_b)):
        if not files[k]:
            raise skelanim.errors.FormatError(f"no motion files ({', '.join(suffixes)}) in this set", path=p)
    motions = {k: [load_one_figure(f, "evaluate") for f in v] for k, v in files.items()}
    for k, v in files.items():
        for f, motion in zip(v, motions[k]):
            motion.metadata.setdefault("path", str(f))  # every format's motion names its file in errors
    contents: dict[str, Any] = {}
    unlabelled = []
    for k, v in files.items():
        found = [content_of(f) for f in v]  # the datasets' names, or skelanim generate's, or --labels
        contents[k] = None if None in found else found
        if contents[k] is None:
            scheme = "--labels" if labels is not None else "dataset-N_CONTENT_STYLE_TAKE or CONTENT_STYLE_TAKE"
            unlabelled.append(f"set {k}: its file names carry no content label ({scheme}), so 'recognised' is "
                              "left out")  # fmt: skip
    apply_threads(threads)
    rec = Recognizer.load(recognizer).to(device)
    res = compare_sets(
        motions["a"], motions["b"], embed=rec.embed_motions, contents_a=contents["a"], contents_b=contents["b"]
    )
    if recognizer is not None:  # asked for by name: a set it cannot read is an error, not a note beside null FIDs
        unread = [note for note in res["notes"] if "no recogniser features" in note]
        if unread:
            raise skelanim.errors.SkelanimError(f"--recognizer {recognizer}: {unread[0]}")
    res["notes"].extend(unlabelled)
    for k in ("a", "b"):  # a name read by the wrong scheme (Xia's sexy_01_000 as content 'sexy') had scored 0 silently
        unknown = sorted(set(contents[k] or ()) - set(rec.contents.names))
        if unknown and res[k]["recognised"] is not None:
            res["notes"].append(f"set {k}: {len(unknown)} content label(s) read from its file names are not the "
                                f"recogniser's ({', '.join(unknown[:4])}{', ...' if len(unknown) > 4 else ''}): their "
                                "files count as wrong in 'recognised' (--labels?)")  # fmt: skip
    if as_json:
        echo_json(res)
        return
    # each row with what its numbers are in: h = the set's height (row "height"), u = its files' length unit
    rows = (("motions", ""), ("frames", ""), ("units", ""), ("height", "u"), ("floor", "u"), ("jerk", "h/s^3"),
            ("jerk_raw", "u/s^3"), ("foot_skating", "h/s"), ("foot_skating_raw", "u/s"), ("ground_penetration", "h"),
            ("ground_penetration_raw", "u"), ("bone_length_error", "relative"), ("diversity", "features"),
            ("recognised", "share"))  # fmt: skip
    typer.echo(f"{'':>36} {'A':>12} {'B':>12}")
    for key, unit in rows:
        cells = [("mixed" if key == "units" and res[s][key] is None else res[s][key]) for s in ("a", "b")]
        label = f"{key} [{unit}]" if unit else key
        typer.echo(f"{label:>36} " + " ".join(f"{c:12.4g}" if isinstance(c, float) else f"{c!s:>12}" for c in cells))
    typer.echo(f"{'fid [features]':>36} {res['fid'] if res['fid'] is None else format(res['fid'], '.4g')}")
    paired_units = {"mpjpe": "h of A", "mpjpe_root_relative": "h of A", "angle_deg": "degrees"}
    paired = [(f"{k} [{paired_units.get(k, '')}]", v) for k, v in (res["paired"] or {}).items()]
    paired += [(f"{k}_raw [u of A]", v) for k, v in (res["paired_raw"] or {}).items()]
    for label, value in paired:
        typer.echo(f"{label:>36} {value:.4g}")
    typer.echo("h: heights (lengths divided by the set's height); u: the set's file units (row units); a set "
               "mixing units has no raw values")  # fmt: skip
    for note in res["notes"]:
        typer.echo(f"note: {note}")
