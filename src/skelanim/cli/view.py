"""``skelanim view``: write (or serve) a self-contained browser page that plays motion files."""

from __future__ import annotations

from pathlib import Path

import typer

from skelanim.cli import app
from skelanim.cli.files import require_suffix

DEFAULT_OUTPUT = Path("viewer.html")


def _megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


@app.command()
def view(
    files: list[Path] = typer.Argument(..., help="Motion files (.bvh, DeepMimic .txt/.json, .glb/.gltf) to play together."),
    out: Path | None = typer.Option(
        None, "-o", "--out", help="Page to write (default viewer.html; with --serve, only when given)."
    ),
    serve: bool = typer.Option(False, "--serve", help="Serve the page on 127.0.0.1 until Ctrl-C (opens nothing)."),
    port: int = typer.Option(8000, "--port", help="Port for --serve (0 picks a free one)."),
    overlay: bool = typer.Option(False, "--overlay", help="Start with the motions overlaid, not side by side."),
    max_frames: int | None = typer.Option(None, "--max-frames", help="Show at most this many frames."),
    stride: int = typer.Option(1, "--stride", help="Keep every N-th frame (frame rate / N)."),
    no_autoplay: bool = typer.Option(False, "--no-autoplay", help="Open paused on frame 0."),
) -> None:
    """Play FILES in the browser: play/pause, scrubbing, speed, orbit camera, joint names on hover.

    The page inlines three.js and the motions, so it works offline from file://.

    Lengths are shown in metres (the unit is the file's where it says, else guessed from the body's bone lengths, which no pose changes), Y up, over a 1 m grid.
    """
    from skelanim.io.atomic import atomic_open
    from skelanim.viz.viewer import ViewerError, build_viewer_html, load_for_viewer, make_server
    from skelanim.viz.viewer import serve as serve_page

    # Checked here (not with typer's min/max) so a bad value is one ``error:`` line and exit code 2.
    if stride < 1:
        raise ViewerError(f"--stride must be at least 1, got {stride}")
    if max_frames is not None and max_frames < 1:
        raise ViewerError(f"--max-frames must be at least 1, got {max_frames}")
    if not 0 <= port <= 65535:
        raise ViewerError(f"--port must be between 0 and 65535, got {port}")
    if out is not None:
        require_suffix(out, (".html", ".htm"), "the viewer page")
    motions, labels = load_for_viewer(files)
    page = build_viewer_html(
        motions,
        labels=labels,
        sources=[str(f) for f in files],
        overlay=overlay,
        autoplay=not no_autoplay,
        stride=stride,
        max_frames=max_frames,
    )
    target = out if out is not None else (None if serve else DEFAULT_OUTPUT)
    # the port is bound before the page is written: a busy port is refused with nothing written
    server = make_server(page, port=port) if serve else None
    if target is not None:
        try:
            with atomic_open(target, "w") as handle:
                handle.write(page)
        except BaseException:
            if server is not None:
                server.server_close()
            raise
        count = f"{len(motions)} motion{'s' * (len(motions) != 1)}"
        typer.echo(f"wrote {target} ({count}, {_megabytes(len(page.encode('utf-8')))})")
    if server is not None:
        serve_page(
            page,
            server=server,
            announce=lambda url: typer.echo(f"serving the viewer at {url} (Ctrl-C stops)"),
        )
        typer.echo("stopped")
