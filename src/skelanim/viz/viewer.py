"""The browser viewer: one self-contained HTML page that plays one or several motions.

:func:`build_viewer_html` turns motions into a page; :func:`write_viewer` writes it atomically;
:func:`make_server` / :func:`serve` serve it on ``127.0.0.1``. The page inlines three.js (vendored in
``skelanim/viz/assets``, see its README) and the motion data, so it works offline from ``file://``.

What the page gets, per motion (see :func:`motion_payload`): world positions of every joint and End Site
from :meth:`skelanim.core.motion.Motion.positions`, turned into the viewer's frame, which is

- **Y up**: the up direction (heads above feet in the animated pose, see :func:`up_direction`) is
  turned onto +Y by a proper rotation (handedness kept);
- **metres**: the length unit is the motion's ``metadata["units"]``, else guessed from the body's bone lengths
  (:attr:`skelanim.core.motion.Motion.stature`, :func:`skelanim.core.units.motion_unit`), which no pose changes;
- **grounded and centred**: the lowest point over all frames sits on the floor ``y = 0`` and frame 0's
  body (:attr:`Skeleton.pelvis <skelanim.Skeleton.pelvis>`) is above the origin (so clips from different
  captures overlay);
- **the body only**: joints above the pelvis (Bandai-Namco's static ``joint_Root`` at the origin, the
  production rig's ``RL_BoneRoot`` on the floor) are left out, so no bone runs from them to the body and the
  camera frames and follows the body (its first point);

quantised per axis to 16 bits over the motion's bounding box (error below ``extent / 131070``, a
fraction of a millimetre for a room-sized capture) and base64-encoded, about 8 bytes per joint per frame.
Pages larger than :data:`DEFAULT_MAX_SAMPLES` joint-frames are refused with a message suggesting
``--max-frames`` or ``--stride``.
"""

from __future__ import annotations

import base64
import bisect
import functools
import html
import http.server
import json
import math
import os
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from skelanim.core.motion import Motion
from skelanim.core.skeleton import head_and_feet, up_sign
from skelanim.core.units import UNITS, motion_unit, up_to_y_matrix
from skelanim.errors import ShapeError
from skelanim.io.atomic import atomic_open

#: Most joint-frames (sum over motions of frames x (joints + End Sites)) one page may embed, about 8 bytes
#: each once encoded: the default keeps a page under ~25 MB, which browsers open comfortably.
DEFAULT_MAX_SAMPLES = 3_000_000
#: The vendored files inlined into every page.
ASSET_FILES = ("viewer.html", "viewer.js", "three.module.min.js", "OrbitControls.js")

_PLACEHOLDER = re.compile(r"\{\{([A-Z]+)\}\}")


class ViewerError(ShapeError):
    """A motion the viewer cannot show: no frames, non-finite positions, or more data than a page holds."""


# ---------------------------------------------------------------------------------------------- assets
def asset_text(name: str) -> str:
    """The text of a vendored asset (one of :data:`ASSET_FILES`, or ``three.LICENSE``)."""
    return (resources.files("skelanim.viz") / "assets" / name).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def _assets() -> dict[str, str]:
    """All inlined assets, checked once for sequences that would end their ``<script>`` element early."""
    texts = {name: asset_text(name) for name in ASSET_FILES}
    for name in ASSET_FILES[1:]:
        lowered = texts[name].lower()
        if "</script" in lowered or "<!--" in lowered:
            raise RuntimeError(f"vendored asset {name} contains '</script' or '<!--' and cannot be inlined")
    return texts


# ---------------------------------------------------------------------------------------------- geometry
def up_direction(names: Sequence[str], positions: np.ndarray, axis: int | None = None) -> tuple[int, float]:
    """The up axis (0=X, 1=Y, 2=Z) and its sign (+1/-1) of animated ``positions`` ``(F, P, 3)``.

    Where points named like a head/neck and like feet/ankles/toes exist (see
    :func:`skelanim.core.skeleton.head_and_feet`), up is the axis (and direction)
    along which the heads lie above the feet on average over the frames; otherwise the axis of largest
    extent in frame 0, positive. The animated pose is used rather than the rest pose, which some
    exporters leave meaningless (Bandai-Namco rest offsets all run along the bone's local X).
    """
    heads, feet = head_and_feet(names)
    if heads and feet:
        direction = (positions[:, heads].mean(axis=1) - positions[:, feet].mean(axis=1)).mean(axis=0)
        axis = int(np.abs(direction).argmax()) if axis is None else axis
        return axis, up_sign(names, positions, axis)
    extent = positions[0].max(axis=0) - positions[0].min(axis=0)
    return (int(extent.argmax()) if axis is None else axis), 1.0


def body_points(motion: Motion) -> list[int]:
    """Indices into ``positions(end_sites=True)`` of the points the viewer shows: every joint from
    :attr:`Skeleton.pelvis <skelanim.Skeleton.pelvis>` down and their End Sites (joints above the body are
    carriers, not body parts)."""
    skeleton = motion.skeleton
    above = set(skeleton.chain(0, skeleton.pelvis)[:-1])
    ends = sorted(skeleton.end_sites)
    return ([j for j in range(skeleton.num_joints) if j not in above]
            + [skeleton.num_joints + k for k, j in enumerate(ends) if j not in above])  # fmt: skip


def viewer_positions(motion: Motion, *, source: str | None = None) -> tuple[np.ndarray, float, float]:
    """World positions of ``motion`` in the viewer's frame.

    Raises :class:`ViewerError` (naming ``source``, the frame and the joint) on a non-finite position.

    Returns
    -------
    positions:
        ``(F, P, 3)`` float64, metres-ish, Y up, floor at 0, frame 0's body above the origin: the
        :func:`body_points` of the joints then End Sites (order of ``motion.end_site_names()``).
    scale:
        Metres per file unit that was applied.
    height:
        The figure's height in metres: the largest vertical extent of a frame.
    """
    pos = motion.positions(end_sites=True).detach().cpu().numpy().astype(np.float64)
    names = motion.skeleton.names + motion.end_site_names()
    bad = np.argwhere(~np.isfinite(pos))
    if len(bad):
        frame, point = int(bad[0][0]), int(bad[0][1])
        raise ViewerError("non-finite joint position", path=source, where=f"frame {frame}, joint {names[point]}")
    if not pos.size:
        raise ViewerError("the motion has no frames; there is nothing to view", path=source)
    pos = pos @ up_to_y_matrix(*up_direction(names, pos, motion.up_axis())).numpy().T
    pos = pos[:, body_points(motion)]
    height_units = float((pos[..., 1].max(axis=1) - pos[..., 1].min(axis=1)).max())
    scale = UNITS[motion_unit(motion.metadata.get("units"), motion.stature)]  # not the pose's extent: a crawl's
    pos *= scale
    pos[..., 1] -= pos[..., 1].min()
    pos[..., 0] -= pos[0, 0, 0]
    pos[..., 2] -= pos[0, 0, 2]
    return pos, scale, height_units * scale


def quantize(positions: np.ndarray) -> tuple[str, list[float], list[float]]:
    """Encode ``(..., 3)`` positions as base64 little-endian uint16, per axis over its ``[lo, hi]`` range.

    Returns ``(base64 text, lo, step)`` with ``value ~= lo[axis] + q * step[axis]``.
    """
    flat = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    lo = flat.min(axis=0) if len(flat) else np.zeros(3)
    hi = flat.max(axis=0) if len(flat) else np.zeros(3)
    step = np.where(hi > lo, (hi - lo) / 65535.0, 1.0)
    q = np.rint((flat - lo) / step).clip(0, 65535).astype("<u2")
    return base64.b64encode(q.tobytes()).decode("ascii"), lo.tolist(), step.tolist()


# ---------------------------------------------------------------------------------------------- payload
@dataclass(frozen=True)
class ViewerOptions:
    """How motions are cut before they are embedded.

    Attributes
    ----------
    stride:
        Keep every ``stride``-th frame (the frame rate is divided accordingly).
    max_frames:
        Keep at most this many frames (after ``stride``); ``None`` keeps all.
    max_samples:
        Refuse pages with more joint-frames than this, summed over the motions.
    """

    stride: int = 1
    max_frames: int | None = None
    max_samples: int = DEFAULT_MAX_SAMPLES


def _cut(motion: Motion, options: ViewerOptions, source: str | None) -> Motion:
    if options.stride < 1:
        raise ViewerError(f"stride must be at least 1, got {options.stride}", path=source)
    if options.max_frames is not None and options.max_frames < 1:
        raise ViewerError(f"max_frames must be at least 1, got {options.max_frames}", path=source)
    if motion.num_frames == 0:
        raise ViewerError("the motion has no frames; there is nothing to view", path=source)
    if options.stride > 1:
        motion = motion[:: options.stride].copy(fps=motion.fps / options.stride)
    if options.max_frames is not None and motion.num_frames > options.max_frames:
        motion = motion[: options.max_frames]
    return motion


def motion_payload(motion: Motion, *, name: str, source: str | None = None) -> dict:
    """The JSON-ready description of one motion that the page decodes (see the module docstring).

    Raises :class:`ViewerError` (naming ``source``) for a motion without frames or with non-finite
    positions.
    """
    if motion.num_frames == 0:
        raise ViewerError("the motion has no frames; there is nothing to view", path=source)
    pos, scale, height = viewer_positions(motion, source=source)
    encoded, lo, step = quantize(pos)
    skeleton = motion.skeleton
    kept = body_points(motion)
    index = {point: i for i, point in enumerate(kept)}  # old point -> new; the pelvis's parent is left out
    parents = skeleton.parents.tolist() + sorted(skeleton.end_sites)
    names = skeleton.names + motion.end_site_names()
    return {
        "name": name,
        "names": [names[p] for p in kept],
        "parents": [index.get(parents[p], -1) for p in kept],
        "end_site": [p >= skeleton.num_joints for p in kept],
        "fps": float(motion.fps),
        "frames": motion.num_frames,
        "height": float(height),
        "metres_per_unit": float(scale),
        "lo": lo,
        "step": step,
        "positions": encoded,
    }


def _labels(count: int, labels: Sequence[str] | None) -> list[str]:
    if labels is None:
        return [f"motion {i + 1}" for i in range(count)]
    if len(labels) != count:
        raise ValueError(f"{count} motions but {len(labels)} labels")
    return [str(label) for label in labels]


def _first(lo: int, hi: int, holds: Callable[[int], bool]) -> int:
    """The least ``n`` in ``[lo, hi]`` for which ``holds`` (monotone: false, then true) is true; ``hi + 1`` if none."""
    return lo + bisect.bisect_left(range(lo, hi + 1), True, key=holds)


def check_size(motions: Sequence[Motion], *, max_samples: int, sources: Sequence[str | None] | None = None) -> None:
    """Raise :class:`ViewerError` when the motions hold more joint-frames than ``max_samples``.

    The message names the largest file and suggests the most ``--max-frames`` and the least ``--stride`` that fit
    (each cuts every motion).
    """
    frames = [m.num_frames for m in motions]
    counts = [m.skeleton.num_joints + len(m.skeleton.end_sites) for m in motions]
    sizes = [f * p for f, p in zip(frames, counts)]
    total = sum(sizes)
    if total <= max_samples:
        return
    biggest = int(np.argmax(sizes))
    source = sources[biggest] if sources else None
    m = motions[biggest]
    points = counts[biggest]
    longest = max(frames)
    # both options cut every motion: --max-frames n keeps min(F, n) frames of each (the most that fits; the room the
    # other motions left whole had suggested 1 frame where 10 of each fitted), --stride s keeps ceil(F / s) of
    # each (the least that fits: 201 frames at stride 2 are 101, not 100.5, and had not fitted)
    fit_frames = _first(1, longest, lambda n: sum(min(f, n + 1) * p for f, p in zip(frames, counts)) > max_samples)
    stride = min(longest, _first(math.ceil(total / max_samples), longest,
                                 lambda s: sum(-(-f // s) * p for f, p in zip(frames, counts)) <= max_samples))  # fmt: skip
    raise ViewerError(
        f"too large for the browser viewer: {total:,} joint-frames in all "
        f"({m.num_frames:,} frames x {points} joints and End Sites here), the limit is {max_samples:,}; "
        f"show part of it with --max-frames {fit_frames} or thin it with --stride {stride}",
        path=source,
    )


def build_viewer_html(
    motions: Motion | Sequence[Motion],
    *,
    labels: Sequence[str] | None = None,
    sources: Sequence[str | None] | None = None,
    overlay: bool = False,
    title: str | None = None,
    autoplay: bool = True,
    stride: int = 1,
    max_frames: int | None = None,
    max_samples: int = DEFAULT_MAX_SAMPLES,
) -> str:
    """A self-contained HTML page playing ``motions`` (an empty sequence gives a page with an empty scene).

    Parameters
    ----------
    motions:
        The motions to show, side by side (or overlaid with ``overlay``) on one timeline; one bare
        :class:`Motion` is one motion (not its frames).
    labels:
        Names shown in the legend and tooltips (default ``motion 1``, ``motion 2``, ...).
    sources:
        File names used in error messages (default: none).
    overlay:
        Start with the motions overlaid instead of side by side (the page can switch).
    title:
        Page title (default: the labels).
    autoplay:
        Start playing when the page opens (``?autoplay=0`` in the URL overrides).
    stride, max_frames:
        Keep every ``stride``-th frame, then at most ``max_frames`` frames, of each motion.
    max_samples:
        Refuse (:class:`ViewerError`) more joint-frames than this in all.

    Returns
    -------
    str
        The page; it references no external script, style or font.
    """
    motions = [motions] if isinstance(motions, Motion) else list(motions)  # a Motion iterates as its frames
    names = _labels(len(motions), labels)
    srcs = list(sources) if sources is not None else [None] * len(motions)
    options = ViewerOptions(stride=stride, max_frames=max_frames, max_samples=max_samples)
    cut = [_cut(m, options, s) for m, s in zip(motions, srcs)]
    check_size(cut, max_samples=max_samples, sources=srcs)
    data = {
        "overlay": bool(overlay),
        "autoplay": bool(autoplay),
        "motions": [motion_payload(m, name=n, source=s) for m, n, s in zip(cut, names, srcs)],
    }
    return render_page(data, title=title or (" | ".join(names) if names else "skelanim viewer"))


def _script_json(data: object) -> str:
    """JSON safe inside a ``<script>`` element (``<``, ``>`` and ``&`` escaped)."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_page(data: dict, *, title: str) -> str:
    """Fill the page template with the payload ``data`` (``{"overlay", "autoplay", "motions"}``)."""
    from skelanim import __version__

    assets = _assets()
    values = {
        "VERSION": html.escape(__version__),
        "TITLE": html.escape(f"{title} \u2014 skelanim"),
        "DATA": _script_json(data),
        "THREE": assets["three.module.min.js"],
        "ORBIT": assets["OrbitControls.js"],
        "VIEWER": assets["viewer.js"],
    }
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], assets["viewer.html"])


def write_viewer(path: str | os.PathLike, motions: Motion | Sequence[Motion], **options) -> Path:
    """Write :func:`build_viewer_html` of ``motions`` (one :class:`Motion` or several) to ``path`` atomically;
    returns the path.

    ``options`` are those of :func:`build_viewer_html`. The path comes first (unlike ``render_video(motions, path)``
    and ``skelanim.save(motion, path)``): the motions first and a path second raise ``TypeError`` saying so.
    """
    if isinstance(motions, (str, os.PathLike)):  # a path is never motions: write_viewer([m], "v.html")
        raise TypeError(f"write_viewer(path, motions) takes the path first; got {type(path).__name__} for the path "
                        f"and {type(motions).__name__} {str(motions)!r} for the motions")  # fmt: skip
    page = build_viewer_html(motions, **options)
    with atomic_open(path, "w") as handle:
        handle.write(page)
    return Path(path)


def load_for_viewer(paths: Sequence[str | os.PathLike]) -> tuple[list[Motion], list[str]]:
    """Load motion files with :func:`skelanim.load`; returns the motions and their labels (file stems,
    or longer relative paths where stems repeat)."""
    from skelanim.io import load

    motions = [load(p) for p in paths]
    stems = [Path(p).stem for p in paths]
    labels = [str(p) if stems.count(s) > 1 else s for p, s in zip(paths, stems)]
    return motions, labels


# ---------------------------------------------------------------------------------------------- serving
class _PageHandler(http.server.BaseHTTPRequestHandler):
    """Answers ``GET /`` (and ``/index.html``, ``/viewer.html``) with the page, ``HEAD`` of them with its
    headers; 404 otherwise (to both)."""

    page: bytes = b""
    server_version = "skelanim-viewer"
    PATHS = ("/", "/index.html", "/viewer.html")

    def _headers(self) -> bool:
        """Send the status and headers of this request's path; ``True`` when the page follows (a served path)."""
        if self.path.split("?", 1)[0] not in self.PATHS:
            self.send_error(404, "only / is served")
            return False
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(self.page)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        return True

    def do_GET(self) -> None:
        if self._headers():
            self.wfile.write(self.page)

    def do_HEAD(self) -> None:
        self._headers()  # send_error leaves out the body of a HEAD answer

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: a viewer server has nothing to log per request."""


def make_server(page: str, *, host: str = "127.0.0.1", port: int = 8000) -> http.server.ThreadingHTTPServer:
    """An HTTP server (not yet serving) answering ``/`` with ``page``. ``port=0`` picks a free port
    (read it from ``server.server_address``). Raises :class:`ViewerError` when the port is taken."""
    handler = type("PageHandler", (_PageHandler,), {"page": page.encode("utf-8")})
    try:
        return http.server.ThreadingHTTPServer((host, port), handler)
    except OSError as err:
        raise ViewerError(
            f"cannot serve on {host}:{port} ({err.strerror or err}); choose another port with --port"
        ) from None


def server_url(server: http.server.HTTPServer) -> str:
    """``http://HOST:PORT/`` of a server made by :func:`make_server`."""
    host, port = server.server_address[:2]
    if isinstance(host, (bytes, bytearray)):  # typeshed allows a bytes host; a bound socket reports a str
        host = host.decode()
    return f"http://{host}:{port}/"


def serve(
    page: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    announce: Callable[[str], None] = print,
    stop: threading.Event | None = None,
    server: http.server.HTTPServer | None = None,
) -> None:
    """Serve ``page`` until Ctrl-C (or until ``stop`` is set); ``announce`` gets the URL first.

    Opens no browser. Ctrl-C ends it quietly. ``server``: one from :func:`make_server` (bound before, e.g. so that
    a busy port is refused before anything is written; ``page``, ``host`` and ``port`` are then not used); it is
    closed on return either way.
    """
    httpd = server if server is not None else make_server(page, host=host, port=port)
    try:
        announce(server_url(httpd))
        if stop is not None:
            def shut_down_when_stopped() -> None:
                stop.wait()
                httpd.shutdown()

            threading.Thread(target=shut_down_when_stopped, daemon=True).start()
        httpd.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
