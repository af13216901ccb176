"""``skelanim recognize``: what motion files show, by the shipped ST-GCN (or any recogniser folder); a thin
wrapper over :meth:`skelanim.learn.recognize.Recognizer.recognize_motions`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from skelanim.cli import app
from skelanim.cli.learn_common import apply_threads, run_device_option, threads_option


@app.command("recognize")
def recognize_cmd(
    files: list[Path] = typer.Argument(..., help="Motion files (or folders of them, or glob patterns) on the model's "
                                       "skeleton, reported in the order given (a folder's files sorted by name)."),
    model: Path | None = typer.Option(None, "--model", "-m", help="Recogniser folder (default: the shipped ST-GCN)."),
    top: int = typer.Option(3, "--top", min=1, help="Contents listed per file, most probable first."),
    windows: bool = typer.Option(False, "--windows", help="Also list each window's content (a timeline: each window's "
                                 "span, start to start plus the window's length, cut at the clip's end)."),
    stride: int = typer.Option(8, "--stride", min=1, help="Frames between windows, at the model's frame rate."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    device: str = run_device_option(),
    threads: int | None = threads_option(),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="A progress bar on stderr over a long "
                                  "input's windows."),
    keep_going: bool = typer.Option(False, "--keep-going", help="Classify the other files where one cannot be read "
                                    "or is not on the model's skeleton; its error comes at the end (with --json, an "
                                    "entry of its file and error), and the exit status is 2."),
) -> None:
    """Classify the content of motion files (walk, run, bow, wave, ...).

    A file's content is the mean of the class probabilities of its windows, as in `skelanim learn recognize eval`."""
    import skelanim
    from skelanim.cli import error_line
    from skelanim.cli.learn_common import echo_json
    from skelanim.data.dataset import expand_paths
    from skelanim.learn.recognize import Recognizer

    # one entry per argument, in the order given (a file named twice, twice); a folder's or pattern's files in place
    paths: list[Path] = []
    loaded: dict[Path, Any] = {}  # a file named twice is read once; with --keep-going, a bad one's error line
    for given in files:
        try:
            found = expand_paths([given], suffixes=tuple(skelanim.io.MOTION_FORMATS))
            if not found:
                raise skelanim.errors.FormatError("no motion files here", path=given)
        except (skelanim.errors.SkelanimError, OSError) as err:
            if not keep_going:
                raise
            found, loaded[given] = [given], error_line(err)
        paths.extend(found)
    apply_threads(threads)
    rec = Recognizer.load(model).to(device)
    for p in paths:
        if p not in loaded:
            try:
                loaded[p] = skelanim.load(p)
                loaded[p].metadata.setdefault("path", str(p))  # every format's motion names its file in errors
                if keep_going:  # its skeleton checked alone, as all of them are below
                    rec.motions_dataset([loaded[p]])
            except (skelanim.errors.SkelanimError, OSError) as err:
                if not keep_going:
                    raise
                loaded[p] = error_line(err)
    failed = {p: loaded[p] for p in paths if isinstance(loaded[p], str)}
    paths_all, paths = paths, [p for p in paths if p not in failed]
    motions = [loaded[p] for p in paths]
    out = rec.recognize_motions(motions, stride=stride, progress=progress) if motions else None  # SkeletonError
    names = rec.contents.names
    length_s = rec.window / rec.fps
    report: list[dict[str, Any]] = []
    for i, p in enumerate(paths):
        assert out is not None
        probs = out["probs"][i]
        order = probs.argsort(descending=True)[:top].tolist()
        entry: dict[str, Any] = {
            "file": str(p),  # as info --json and gait --json name it
            "path": str(p),
            "content": names[order[0]],
            "probability": round(float(probs[order[0]]), 4),
            "top": [[names[c], round(float(probs[c]), 4)] for c in order],
        }
        if windows:
            mine = (out["windows"][:, 0] == i).nonzero().flatten().tolist()
            entry["windows"] = []
            for w in mine:
                wp = out["window_probs"][w]
                start = float(out["windows"][w, 1]) / rec.fps
                # the window's span [start, start + its length), cut at the clip's end (its frames' span, F / fps):
                # the last one, moved back to end there, is as long as the others (it had ended at the last frame's
                # time, (F - 1) / fps, a frame short)
                end = min(start + length_s, motions[i].num_frames / motions[i].fps)
                entry["windows"].append({"start_s": round(start, 3), "end_s": round(end, 3),
                                         "content": names[int(wp.argmax())], "probability": round(float(wp.max()), 4)})  # fmt: skip
        report.append(entry)
    if failed:  # in the order given, a failed file as an entry of its file and error
        done = iter(report)
        report = [{"file": str(p), "error": failed[p]} if p in failed else next(done) for p in paths_all]
    if as_json:
        echo_json({"model": str(model) if model else "shipped", "files": report})
    for entry in [] if as_json else [e for e in report if "error" not in e]:
        others = ", ".join(f"{n} {q:.2f}" for n, q in entry["top"][1:])
        typer.echo(
            f"{entry['path']}: {entry['content']} {entry['probability']:.2f}" + (f" ({others})" if others else "")
        )
        for w in entry.get("windows", []):
            typer.echo(f"  {w['start_s']:7.2f}-{w['end_s']:6.2f} s  {w['content']} {w['probability']:.2f}")
    for message in dict.fromkeys(failed.values()):
        typer.echo(f"error: {message}", err=True)
    if failed:
        raise typer.Exit(2)
