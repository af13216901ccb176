"""Render motions as videos: capsule stick figures over a floor grid, drawn with PIL after a perspective
projection (no matplotlib in the loop), written as MP4 (libx264 through imageio-ffmpeg's bundled ffmpeg)
or GIF (Pillow).

Layout: several motions are drawn side by side, one panel each with its own camera (default), or
``overlay=True`` puts them all in one panel in different colours (e.g. ground truth vs prediction), in their
own units and world when they share both; motions in other units or with another up axis are each turned Y up and
drawn in metres first (:func:`overlay_frame`, the unit guessed from the figure's height as the browser viewer does;
a CMU figure had been a small cluster beside a Bandai one in centimetres, a DeepMimic one in metres a dot). In a panel left limbs are drawn lighter and right
limbs darker than the motion's colour.

Camera: perspective, 35 degrees across the smaller side of a panel, 2.3 body heights away, 15 degrees
above the horizon, looking from the side of the main direction of travel (30 degrees towards the front),
following the body centre (mean of the joints but the root, see :class:`~skelanim.viz._draw.Figure3D`;
the root itself is static in some files) along its horizontal path smoothed with a Gaussian of 0.5 s (at most
an eighth of a short clip); it aims at mid-body and rises with a jump, and where the smoothed aim would still let
a drawn joint leave the top of the picture (raised arms at a jump's peak) it rises as far as that frame needs.
The up axis comes from :meth:`Motion.up_axis <skelanim.core.motion.Motion.up_axis>` (the animated pose,
so files whose rest pose is not upright work too); the floor is the lowest point of the motion.

Time: the output runs at ``fps``; output frame ``k`` shows frame ``round(k / fps * motion.fps)`` of each
motion (nearest frame), held at the last frame once a motion has ended. The video lasts as long as the
longest motion: ``floor(duration * fps + tol) + 1`` frames, where ``tol = min(1e-4 * duration * fps + 1e-6, 0.5)``
absorbs the rounding of a frame time (a motion at ``1 / 0.0333333`` = 30.00003 fps, as a BVH ``Frame Time`` was
read before :func:`~skelanim.io.bvh.nominal_fps`, has 143 frames that last 141.99986 frames of 30 fps): a motion rendered at its nominal rate keeps every frame, and an extra
frame is never more than half an output frame past the end (where the nearest frame is still the last).

GIF stores frame durations in whole centiseconds: frame ``k`` lasts ``round(100 (k + 1) / fps) - round(100 k
/ fps)`` cs (30 fps: 30, 40, 30, 30, 40, 30 ... ms), so the time at every frame, and the total, is right to one
centisecond. A GIF is written at :data:`MAX_GIF_FPS` (50) frames per second at most: browsers play a delay of
1 cs (or 0) as 10 cs, so a 60 fps GIF (delays of 20, 10, 20, 20, 10 ms) played 2.7 times slow.

Labels: each panel names its motions as ``frame 123  label``, the frame number first and the label shortened
with an ellipsis to the panel's width (:func:`fit_text`), so that no text runs into the next panel.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont
from scipy.ndimage import gaussian_filter1d, maximum_filter1d
from tqdm import tqdm

from skelanim.core.motion import Motion
from skelanim.core.units import UNITS, motion_unit, up_to_y_matrix
from skelanim.errors import ShapeError, UnsupportedFormatError
from skelanim.io.atomic import atomic_path
from skelanim.ops import rotate, scale
from skelanim.ops.filters import check_fps
from skelanim.viz._draw import (
    PALETTE,
    Camera,
    Figure3D,
    color,
    floor_grid,
    follow_camera,
    labelled_motions,
    nice_step,
    shade,
    skeleton_figure,
    view_direction,
)
from skelanim.viz.mp4 import write_mp4

__all__ = [
    "MAX_GIF_FPS", "VIDEO_SUFFIXES", "check_video_path", "fit_text", "frame_count", "frame_indices", "gif_durations",
    "overlay_frame", "parse_size", "render_frames", "render_video",
]  # fmt: skip

VIDEO_SUFFIXES = (".mp4", ".gif")
#: The fastest GIF: 2 cs a frame (browsers play a frame delay of 1 cs as 10 cs).
MAX_GIF_FPS = 50.0
BACKGROUND = (246, 246, 244)
GRID = (200, 200, 196)
SHADOW = (214, 214, 210)
#: Shade of a figure's colour by side (:func:`shade` amounts): left lighter, right darker, the middle as it is.
SIDE_SHADES = {1: 0.4, 0: 0.0, -1: -0.3}
#: Text, and the line between side-by-side panels.
INK, DIVIDER = (30, 30, 30), (120, 120, 120)


def drawn_colours() -> list[tuple[int, int, int]]:
    """Every flat colour a frame is drawn with (the rest are their blends at antialiased edges): a GIF keeps each
    exactly (a palette from the first frame alone had lost the right limbs' shade of a figure)."""
    figures = [shade(c, a) if a else c for c in PALETTE for a in SIDE_SHADES.values()]
    return list(dict.fromkeys([BACKGROUND, GRID, SHADOW, INK, DIVIDER, *figures]))


SUPERSAMPLE = 2


def parse_size(text: str) -> tuple[int, int]:
    """``"640x480"`` to ``(640, 480)``; raises :class:`ShapeError` on anything else."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ShapeError(f"size must be WIDTHxHEIGHT in pixels, e.g. 640x480, got {text!r}") from None
    if not (16 <= w <= 7680 and 16 <= h <= 4320):
        raise ShapeError(f"size must be between 16x16 and 7680x4320, got {w}x{h}")
    return w, h


def check_video_path(
    path: str | os.PathLike, *, fps: float = 30.0, size: tuple[int, int] = (640, 480), fps_option: str = "fps"
) -> Path:
    """``path`` as a :class:`~pathlib.Path` if a video of ``size`` at ``fps`` can be written there, checked before
    any motion is loaded or drawn: the suffix is ``.mp4`` or ``.gif``
    (:class:`~skelanim.errors.UnsupportedFormatError` otherwise), an MP4 has an even width and height, a GIF at
    most :data:`MAX_GIF_FPS` frames per second (:class:`~skelanim.errors.ShapeError`, naming ``fps_option``).

    Parameters
    ----------
    path:
        The output file.
    fps:
        Output frame rate (already checked to be a positive number).
    size:
        ``(width, height)`` in pixels.
    fps_option:
        What the frame rate is called in the message (``"--fps"`` on the command line).
    """
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in VIDEO_SUFFIXES:
        raise UnsupportedFormatError(
            f"cannot write video as {suffix or '(no suffix)'!r}; expected one of {', '.join(VIDEO_SUFFIXES)}",
            path=target,
        )
    if suffix == ".mp4" and (size[0] % 2 or size[1] % 2):
        raise ShapeError(f"an MP4 (H.264, yuv420p) needs an even width and height, got {size[0]}x{size[1]}", path=target)
    if suffix == ".gif" and fps > MAX_GIF_FPS:
        raise ShapeError(
            f"a GIF plays at most {MAX_GIF_FPS:g} frames per second (browsers slow shorter frame delays to 100 ms), "
            f"got {fps_option} {fps:g}; use {fps_option} {MAX_GIF_FPS:g} or write an .mp4",
            path=target,
        )
    return target


def frame_count(motions: Sequence[Motion], fps: float) -> int:
    """Output frames for the longest motion at ``fps``: ``floor(duration * fps + tol) + 1`` with
    ``tol = min(1e-4 * duration * fps + 1e-6, 0.5)`` (see the module docstring: frame times in files are rounded)."""
    span = max(m.duration for m in motions) * fps
    return int(np.floor(span + min(1e-4 * span + 1e-6, 0.5))) + 1


def gif_durations(count: int, fps: float) -> list[int]:
    """Per-frame GIF durations in milliseconds, whole centiseconds whose running sum is the true time
    ``(k + 1) / fps`` rounded to a centisecond (at least 1 cs a frame): the first ``count`` of :func:`_gif_steps`."""
    return list(itertools.islice(_gif_steps(fps), count))


def frame_indices(motion: Motion, fps: float, count: int) -> np.ndarray:
    """``(count,)`` nearest source frame of each output frame (a tie to the later one; clamped to the last frame)."""
    t = np.arange(count) / fps
    # half up, as the viewer's Math.round (numpy's round to even had stepped 2,1,1,2 from 30 fps to 20, not 2,1,2,1)
    return np.minimum(np.floor(t * motion.fps + 0.5 + 1e-9).astype(np.int64), motion.num_frames - 1)


class _Panel:
    """One viewport: its motions, their drawing data, and the camera path."""

    def __init__(self, items: list[tuple[int, Figure3D, np.ndarray, str]], fps: float, count: int) -> None:
        self.items = items  # (colour index, figure, output->source frame map, label)
        first = items[0][1]
        self.up = first.up
        self.height = max(f.height for _, f, _, _ in items)
        self.floor = min(f.floor for _, f, _, _ in items)
        roots = np.mean([f.centre[idx] for _, f, idx, _ in items], axis=0)  # (count, 3)
        # the camera trails the body by about half a second, less in a short clip (a 0.8 s run must not leave it)
        sigma = max(min(0.5 * fps, count / 8.0), 1e-3)
        roots = gaussian_filter1d(roots, sigma=sigma, axis=0, mode="nearest") if count > 1 else roots
        self.targets = roots.copy()
        # aimed at mid-body over the floor, raised with a jump so that the head stays in (the view spans about
        # 0.7 heights above and below its aim)
        top = np.max([f.positions[idx][..., self.up].max(axis=-1) for _, f, idx, _ in items], axis=0)  # (count,)
        aim = np.maximum(self.floor + 0.45 * self.height, top - 0.55 * self.height)
        self.targets[:, self.up] = gaussian_filter1d(aim, sigma=sigma, mode="nearest") if count > 1 else aim
        up_vec = np.zeros(3)
        up_vec[self.up] = 1.0
        travel = view_direction(first)  # the way it travels, or faces where it stays in place
        side = np.cross(travel, up_vec)
        view = np.cos(np.radians(30)) * side + np.sin(np.radians(30)) * travel
        self.view_dir = view / np.linalg.norm(view)
        self.grid_step = nice_step(0.5 * self.height)
        self.distance = np.full(count, 2.3 * self.height)
        self.distance += self._back_to_fit(count, sigma)
        self.targets[:, self.up] += self._rise_to_fit(count, sigma)

    def _camera(self, k: int, size: tuple[int, int]) -> Camera:
        return follow_camera(self.targets[k], self.view_dir, self.up, distance=float(self.distance[k]),
                             elevation_deg=15.0, size=size)  # fmt: skip

    def _drawn_points(self, k: int) -> np.ndarray:
        """``(N, 3)`` every drawn joint of every figure at output frame ``k``."""
        return np.concatenate([f.positions[idx[k]][np.unique(f.bones)] for _, f, idx, _ in self.items])

    def _spread_needs(self, needed: np.ndarray, sigma: float) -> np.ndarray:
        """Per-frame needs spread over the frames around (a maximum, then the camera's Gaussian), never below each
        frame's own."""
        if len(needed) < 2 or not needed.any():
            return needed
        width = 2 * int(np.ceil(2 * sigma)) + 1
        spread = gaussian_filter1d(maximum_filter1d(needed, size=width, mode="nearest"), sigma=sigma, mode="nearest")
        return np.maximum(spread, needed)

    def _back_to_fit(self, count: int, sigma: float) -> np.ndarray:
        """``(count,)`` how far to move the camera back so that every drawn joint of every figure is inside the
        picture's sides, top and bottom (figures whose paths part, in an overlay, had left it: a Bandai walk beside
        a DeepMimic one was out of the picture in 31 of 195 frames). Moving back along the line of sight keeps a
        point's image coordinates ``x, y`` and adds to its depth ``z``, so the point fits when ``z + d >= focal
        max(|x|, |y|) / (half side - margin)``; measured on a square panel, spread as :meth:`_rise_to_fit`."""
        side, margin = 1000, 20.0
        needed = np.zeros(count)
        for k in range(count):
            points = self._drawn_points(k)
            if not len(points):
                continue
            cam = self._camera(k, (side, side))
            local = cam.to_camera(points)
            reach = cam.focal * np.abs(local[:, :2]).max(axis=-1) / (side / 2 - margin)
            needed[k] = max(0.0, float(np.max(reach - local[:, 2])))
        return self._spread_needs(needed, sigma)

    def _rise_to_fit(self, count: int, sigma: float) -> np.ndarray:
        """``(count,)`` how far to raise the aim so that no drawn joint leaves the top of the picture (a jump's
        raised hands: the smoothed aim lowers a short peak). Measured on a square panel, whose height the field
        of view spans at every aspect; spread over the frames around (a maximum, then the camera's Gaussian) and
        never below what each frame needs."""
        side, margin = 1000, 20.0  # pixels of the square, and of room to keep at the top
        needed = np.zeros(count)
        for k in range(count):
            cam = self._camera(k, (side, side))
            points = self._drawn_points(k)
            if not len(points):  # nothing drawn (a one-joint skeleton)
                continue
            local = cam.to_camera(points)
            over = margin - cam.project(local)[:, 1]  # pixels above the room (positive: too high)
            # raising the aim by d lifts the eye by d too: a point at depth z moves down d * focal * cos(tilt) / z
            lift = cam.focal * cam.basis()[1, self.up] / np.maximum(local[:, 2], cam.near)
            needed[k] = max(0.0, float(np.max(over / lift)))
        return self._spread_needs(needed, sigma)


def _draw_panel(draw: ImageDraw.ImageDraw, panel: _Panel, k: int, box: tuple[int, int, int, int], ss: int) -> None:
    """Draw output frame ``k`` of ``panel`` into the pixel box ``(x0, y0, w, h)`` (already supersampled)."""
    x0, y0, w, h = box
    cam = panel._camera(k, (w, h))
    offset = np.array([x0, y0], dtype=float)
    a, b = floor_grid(panel.targets[k], panel.up, panel.floor, panel.grid_step, 3.0 * panel.height)
    pa, pb, _, _ = cam.segments(a, b)
    for p, q in zip(pa + offset, pb + offset):
        draw.line([tuple(p), tuple(q)], fill=GRID, width=ss)
    radius_world = 0.022 * panel.height
    strokes = []  # (depth, p, q, width, rgb)
    for colour_index, fig, idx, _ in panel.items:
        pos = fig.positions[idx[k]]
        shadow = pos.copy()
        shadow[:, panel.up] = panel.floor
        sa, sb, _, _ = cam.segments(shadow[fig.bones[:, 0]], shadow[fig.bones[:, 1]])
        for p, q in zip(sa + offset, sb + offset):
            draw.line([tuple(p), tuple(q)], fill=SHADOW, width=max(ss, int(2 * ss)))
        pa, pb, depth, keep = cam.segments(pos[fig.bones[:, 0]], pos[fig.bones[:, 1]])
        base = color(colour_index)
        rgbs = {side: shade(base, amount) if amount else base for side, amount in SIDE_SHADES.items()}
        for p, q, d, s in zip(pa + offset, pb + offset, depth, fig.sides[keep]):
            width = max(ss, round(2 * radius_world * cam.focal / max(d, cam.near)))
            strokes.append((d, p, q, width, rgbs[int(s)]))
    for _, p, q, width, rgb in sorted(strokes, key=lambda s: -s[0]):
        draw.line([tuple(p), tuple(q)], fill=rgb, width=width)
        r = width / 2.0
        for c in (p, q):
            draw.ellipse([c[0] - r, c[1] - r, c[0] + r, c[1] + r], fill=rgb)


Font = ImageFont.ImageFont | ImageFont.FreeTypeFont


def _font(size: int) -> Font:
    try:
        return ImageFont.load_default(size=size)
    except (TypeError, OSError):  # Pillow without FreeType
        return ImageFont.load_default()


def _text_right(font: Font, text: str) -> float:
    """How far right of its origin ``text`` reaches in pixels: its advance or its ink, whichever is further."""
    return max(float(font.getlength(text)), float(font.getbbox(text)[2])) if text else 0.0


def fit_text(text: str, font: Font, width: float) -> str:
    """``text`` if it fits in ``width`` pixels, else its longest start that fits with an ellipsis after it
    (``"…"``; ``"..."`` in Pillow's bitmap font, which has no such glyph), else ``""``.

    Parameters
    ----------
    text:
        One line of text.
    font:
        The font it is drawn in (measured with ``getlength`` and ``getbbox``).
    width:
        Pixels available to the right of where the text starts.
    """
    if _text_right(font, text) <= width:
        return text
    ellipsis = "\u2026" if isinstance(font, ImageFont.FreeTypeFont) else "..."
    lo, hi = 0, len(text) - 1  # the longest start (in characters) that fits with the ellipsis: a binary search
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _text_right(font, text[:mid].rstrip() + ellipsis) <= width:
            lo = mid
        else:
            hi = mid - 1
    short = text[:lo].rstrip() + ellipsis
    return short if _text_right(font, short) <= width else ""


def overlay_frame(motions: Sequence[Motion]) -> tuple[list[Motion], list[str]]:
    """Motions to draw in one panel: unchanged where they share a length unit and an up direction, else each
    turned Y up and scaled to metres (the unit of each its ``metadata["units"]``, else guessed from its
    :attr:`~skelanim.core.motion.Motion.stature`, :func:`~skelanim.core.units.motion_unit`).

    Returns
    -------
    tuple
        The motions, and for each what it was (``"cm, +Z up"``) when they were changed, else an empty list.
    """
    units = [motion_unit(m.metadata.get("units"), m.stature) for m in motions]
    ups = [m.up_direction() for m in motions]
    if len(set(units)) <= 1 and len(set(ups)) <= 1:
        return list(motions), []
    out, was = [], []
    for motion, unit, (axis, sign) in zip(motions, units, ups, strict=True):
        turned = motion if (axis, sign) == (1, 1.0) else rotate(motion, up_to_y_matrix(axis, sign))
        metres = turned if unit == "m" else scale(turned, UNITS[unit])
        out.append(metres.copy(metadata={**metres.metadata, "units": "m"}))  # converted: the unit it is in now
        was.append(f"{unit}, {'+' if sign > 0 else '-'}{'XYZ'[axis]} up")
    return out, was


def render_frames(
    motions: Motion | Sequence[Motion],
    *,
    fps: float = 30.0,
    size: tuple[int, int] = (640, 480),
    overlay: bool = False,
    labels: Sequence[str] | None = None,
    progress: bool = False,
) -> Iterator[np.ndarray]:
    """Yield the video frames, each ``(H, W, 3)`` uint8 RGB (see the module docstring).

    Parameters
    ----------
    motions:
        One motion or several.
    fps:
        Output frame rate.
    size:
        ``(width, height)`` in pixels of the whole frame (split into panels side by side).
    overlay:
        All motions in one panel instead of one panel each (in one unit and up, :func:`overlay_frame`).
    labels:
        Names written in the panels (default: the file name, else ``motion 1``, ...).
    progress:
        Show a tqdm progress bar on stderr.
    """
    ms, names = labelled_motions(motions, labels, task="render")
    if overlay:
        ms = overlay_frame(ms)[0]
    fps = check_fps(fps)
    width, height = int(size[0]), int(size[1])
    count = frame_count(ms, fps)
    items = [(i, skeleton_figure(m), frame_indices(m, fps, count), names[i]) for i, m in enumerate(ms)]
    groups = [items] if overlay else [[it] for it in items]
    panels = [_Panel(g, fps, count) for g in groups]
    ss = SUPERSAMPLE
    edges = np.linspace(0, width * ss, len(panels) + 1).round().astype(int)
    font = _font(12 * ss)
    for k in tqdm(range(count), disable=not progress, unit="frame", desc="render", leave=False):
        image = Image.new("RGB", (width * ss, height * ss), BACKGROUND)
        draw = ImageDraw.Draw(image)
        for p, panel in enumerate(panels):
            box = (int(edges[p]), 0, int(edges[p + 1] - edges[p]), height * ss)
            _draw_panel(draw, panel, k, box, ss)
            if p:
                draw.line([(box[0], 0), (box[0], height * ss)], fill=DIVIDER, width=ss)
            for row, (colour_index, _, idx, label) in enumerate(panel.items):
                y = 6 * ss + row * 16 * ss
                if box[2] >= 20 * ss:  # the swatch, where the panel has room for it
                    draw.rectangle([box[0] + 6 * ss, y + 2 * ss, box[0] + 16 * ss, y + 12 * ss],
                                   fill=color(colour_index))  # fmt: skip
                # the frame number first, the label cut to the panel (a long name had hidden the next one's digits)
                text = fit_text(f"frame {int(idx[k])}  {label}", font, box[2] - 24 * ss)
                if text:
                    draw.text((box[0] + 20 * ss, y), text, fill=INK, font=font)
        clock = fit_text(f"t = {k / fps:.3f} s", font, int(edges[1]) - 10 * ss)
        if clock:
            draw.text((6 * ss, height * ss - 20 * ss), clock, fill=INK, font=font)
        if ss > 1:
            image = image.reduce(ss)
        yield np.asarray(image)


def _gif_steps(fps: float) -> Iterator[int]:
    """GIF durations (ms) one frame at a time, for a stream whose length is not known in advance: whole
    centiseconds whose running sum tracks ``(k + 1) / fps``, at least 1 cs a frame (:func:`gif_durations`)."""
    scale = 100.0 / fps
    previous = 0
    for k in itertools.count(1):
        end = int(np.round(k * scale))
        yield max(end - previous, 1) * 10
        previous = end


def _gif_header(palette: Image.Image, size: tuple[int, int]) -> bytes:
    """GIF89a header: logical screen of ``size``, ``palette``'s colours as the global colour table (256
    entries), and the looping (NETSCAPE2.0) extension, repeat forever."""
    colours = bytes(palette.getpalette("RGB") or b"")[: 3 * 256]
    colours += bytes(3 * 256 - len(colours))
    screen = size[0].to_bytes(2, "little") + size[1].to_bytes(2, "little") + bytes([0x80 | 0x07, 0, 0])
    loop = b"!\xff\x0bNETSCAPE2.0\x03\x01" + (0).to_bytes(2, "little") + b"\x00"
    return b"GIF89a" + screen + colours + loop


def _gif_palette(first: Image.Image) -> Image.Image:
    """A palette image of :func:`drawn_colours` exactly, then the first frame's other colours (its antialiased
    edges, by median cut), 255 colours at most."""
    known = drawn_colours()
    rest = first.quantize(colors=255 - len(known), method=Image.Quantize.MEDIANCUT).getpalette("RGB") or []
    colours = [*known, *(tuple(rest[i : i + 3]) for i in range(0, len(rest), 3))][:255]
    palette = Image.new("P", (1, 1))
    palette.putpalette([v for c in colours for v in c])
    return palette


def _write_gif(frames: Iterator[np.ndarray], path: Path, fps: float) -> None:
    """Write ``frames`` to ``path`` as a looping GIF, one frame at a time: only the previous frame is kept
    (each frame after the first stores the box where it differs from the one before), so memory does not grow
    with the length of the clip.

    One palette for all frames (:func:`_gif_palette`: the drawing colours, then the first frame's), no dithering:
    ten times faster than per-frame adaptive quantisation, and the drawings use few colours. A frame identical to the one before is kept (as a 1 x 1
    patch) so that the frame count and timing stay those of :func:`gif_durations`.
    """
    from PIL import GifImagePlugin

    palette: Image.Image | None = None
    clear: int | None = None  # a palette index no colour uses: transparent, over pixels a patch leaves unchanged
    previous: np.ndarray | None = None
    with open(path, "wb") as out:
        for frame, duration in zip(frames, _gif_steps(fps)):
            image = Image.fromarray(frame)
            if palette is None:
                palette = _gif_palette(image)
                used = len(palette.getpalette("RGB") or []) // 3
                clear = used if used < 256 else None
                out.write(_gif_header(palette, image.size))
            indexed = image.quantize(palette=palette, dither=Image.Dither.NONE)
            current = np.asarray(indexed)
            params: dict[str, int] = {"duration": duration}
            if previous is None:
                patch, corner = indexed, (0, 0)
            else:
                changed = current != previous
                rows, cols = np.flatnonzero(changed.any(axis=1)), np.flatnonzero(changed.any(axis=0))
                if not len(rows):
                    rows = cols = np.zeros(1, np.int64)
                box = np.s_[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1]
                corner = (int(cols[0]), int(rows[0]))
                block = current[box]
                if clear is not None:  # unchanged pixels transparent: longer runs, a smaller file
                    block = np.where(changed[box], block, np.uint8(clear))
                    params["transparency"] = clear
                patch = Image.fromarray(np.ascontiguousarray(block))  # "L": the same bytes as "P" to the encoder
            out.writelines(GifImagePlugin.getdata(patch, offset=corner, **params))
            previous = current
        out.write(b";")


def render_video(
    motions: Motion | Sequence[Motion],
    path: str | os.PathLike,
    *,
    fps: float = 30.0,
    size: tuple[int, int] = (640, 480),
    overlay: bool = False,
    labels: Sequence[str] | None = None,
    progress: bool = False,
) -> Path:
    """Render ``motions`` (see :func:`render_frames`) to ``path`` (``.mp4`` or ``.gif``), atomically.

    MP4 is H.264 (yuv420p), which needs an even width and height; a GIF plays at most :data:`MAX_GIF_FPS`
    frames per second (:func:`check_video_path`: a faster ``fps`` is a :class:`ShapeError`, before any drawing).
    Returns the path written.
    """
    fps = check_fps(fps)
    target = check_video_path(path, fps=fps, size=size)
    suffix = target.suffix.lower()
    frames = render_frames(motions, fps=fps, size=size, overlay=overlay, labels=labels, progress=progress)
    first = next(frames)  # bad motions or labels raise here, before an output file or an encoder is started
    frames = itertools.chain([first], frames)
    with atomic_path(target) as tmp:
        if suffix == ".mp4":
            write_mp4(frames, tmp, target, size, fps)
        else:
            _write_gif(frames, tmp, fps)
    return target
