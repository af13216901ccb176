"""Static figures of motions (matplotlib, Agg canvas, no pyplot state): joint trajectories, joint angles,
the foot-contact timeline, a strip of poses, and the gait report.

Every ``plot_*`` function takes one motion or a list (several motions are compared in one figure: the
same rows, one colour per motion) and returns a :class:`matplotlib.figure.Figure`; :func:`save_figure`
writes it atomically. Joint rows are given by name (the same names must exist in every motion) or, by
default, chosen per motion by role (feet, knees), so that different skeletons can be compared.

Angles
------
``angle="flexion"`` (default): the angle between the bone arriving at the joint and the bone leaving
it (:func:`skelanim.viz._draw.joint_flexion`): 0 for a straight limb, e.g. knee or elbow flexion.
``angle="rotation"``: the magnitude of the joint's local rotation relative to its rest pose
(:func:`skelanim.viz._draw.local_rotation_angle`), defined for every joint including root and leaves.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from skelanim.core.motion import Motion
from skelanim.core.units import signed_axis_name, up_to_y_matrix
from skelanim.errors import ShapeError, SkeletonError, UnsupportedFormatError
from skelanim.io.atomic import atomic_path
from skelanim.io.gltf import export_scale
from skelanim.metrics.gait import SPEED_FRACTION as GAIT_SPEED_FRACTION
from skelanim.metrics.gait import GaitError, GaitReport, find_legs
from skelanim.ops.contacts import DEFAULT_SPEED_FRACTION, find_feet, foot_contacts
from skelanim.viz._draw import (
    joint_flexion,
    labelled_motions,
    local_rotation_angle,
    resolve_joints,
    skeleton_figure,
    unit_color,
    view_direction,
)

__all__ = [
    "KINDS", "OPTION_KINDS", "check_figure_path", "kinds_text", "plot_angles", "plot_contacts", "plot_gait_report",
    "plot_motions", "plot_poses", "plot_trajectories", "save_figure", "unused_option",
]  # fmt: skip

Kind = Literal["trajectories", "angles", "contacts", "poses"]
KINDS: tuple[str, ...] = ("trajectories", "angles", "contacts", "poses")
#: The kinds that use each option of :func:`plot_motions` (giving it with another kind is an error).
OPTION_KINDS: dict[str, tuple[str, ...]] = {
    "joints": ("trajectories", "angles", "contacts"), "angle": ("angles",), "count": ("poses",),
}  # fmt: skip
AXES = "XYZ"
Rows = list[tuple[str, list[int]]]
Defaults = list[tuple[str, int]]


def _rows(
    motions: list[Motion], labels: list[str], joints: Sequence[str | int] | None, default: Callable[[Motion], Defaults]
) -> Rows:
    """Rows ``(label, [joint index in each motion])``: named joints (checked in every motion) or defaults."""
    if joints:
        per_motion = []
        for m, label in zip(motions, labels):
            try:
                per_motion.append(resolve_joints(m.skeleton, list(joints)))
            except SkeletonError as err:
                _name_motion(err, m, label, len(motions) > 1)
                raise
        first = motions[0].skeleton.names
        return [(first[idx] if isinstance(j, (int, np.integer)) else str(j), [pm[k] for pm in per_motion])
                for k, (j, idx) in enumerate(zip(joints, per_motion[0]))]
    defaults = [dict(default(m)) for m in motions]
    keys = [k for k in defaults[0] if all(k in d for d in defaults)]
    if not keys:
        raise SkeletonError("the motions have no joints in common to plot by default; pass joints")
    return [(k, [d[k] for d in defaults]) for k in keys]


def _name_motion(err: SkeletonError, motion: Motion, label: str, several: bool) -> None:
    """Name the motion an error is about: its file where a reader recorded one (a label alone, a file's stem, is
    ambiguous between folders), else its label when there are several motions."""
    path = motion.metadata.get("path")
    if err.path is None and path:
        err.path = str(path)
    elif several:
        err.where = err.where or label


def _default_trajectory_joints(m: Motion) -> Defaults:
    rows: Defaults = [("root", m.skeleton.pelvis)]  # the hips, not a carrier above them (Bandai's joint_Root)
    try:
        lf, rf = find_feet(m.skeleton)[:2]
        rows += [("left foot", lf), ("right foot", rf)]
    except SkeletonError:
        pass
    return rows


_ELBOW = re.compile(r"elbow|forearm|lowerarm", re.IGNORECASE)


def _default_angle_joints(m: Motion) -> Defaults:
    rows: Defaults = []
    try:
        legs = find_legs(m.skeleton)
        rows += [(f"{side} knee", leg.knee) for side, leg in legs.items()]
    except GaitError:  # no legs: the elbows or inner joints below
        rows = []
    for k, (left, right) in enumerate(p for p in m.skeleton.left_right_pairs() if _ELBOW.search(m.skeleton.names[p[0]])):
        if k == 0:
            rows += [("left elbow", left), ("right elbow", right)]
    if not rows:
        inner = [j for j in range(1, m.skeleton.num_joints) if m.skeleton.children(j)][:4]
        rows = [(m.skeleton.names[j], j) for j in inner]
    return rows


def kinds_text(kinds: Sequence[str]) -> str:
    """``"a"``, ``"a and b"``, ``"a, b and c"``: kinds named in a sentence."""
    return " and ".join([", ".join(kinds[:-1]), kinds[-1]] if len(kinds) > 1 else list(kinds))


def unused_option(kind: str, given: dict[str, bool]) -> tuple[str, tuple[str, ...]] | None:
    """The first option of :data:`OPTION_KINDS` that ``given`` says was given (``{"joints": True, ...}``) and
    ``kind`` does not use, with the kinds that use it; ``None`` if every given option is used."""
    for option, used_by in OPTION_KINDS.items():
        if given.get(option) and kind not in used_by:
            return option, used_by
    return None


def _marker(m: Motion) -> str | None:
    """A dot for each sample of a one-frame motion, whose line of one point draws nothing; else no marker."""
    return "o" if m.num_frames == 1 else None


def _axis_title(a: int, up: tuple[int, float] | None) -> str:
    """``"Y (up)"`` for the up axis ``(axis, sign)`` pointing up, ``"Y (down; up is −Y)"`` when the file's up is
    the axis's negative direction, the bare axis name for the others."""
    if up is None or a != up[0]:
        return AXES[a]
    return f"{AXES[a]} (up)" if up[1] > 0 else f"{AXES[a]} (down; up is \u2212{AXES[a]})"


def _new_figure(nrows: int, ncols: int, *, width: float, row_height: float, sharex: bool = False) -> tuple[Figure, np.ndarray]:
    fig = Figure(figsize=(width, max(2.2, row_height * nrows) + 0.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = np.asarray(fig.subplots(nrows, ncols, squeeze=False, sharex=sharex))
    return fig, axes


def plot_trajectories(
    motions: Motion | Sequence[Motion],
    joints: Sequence[str | int] | None = None,
    *,
    labels: Sequence[str] | None = None,
) -> Figure:
    """World X/Y/Z of joints over time: one row per joint, one column per axis, one line per motion.

    Parameters
    ----------
    motions:
        One motion or several to compare.
    joints:
        Joint names (or indices); default the root and the two feet. The root is the body's
        (:attr:`Skeleton.pelvis <skelanim.Skeleton.pelvis>`): the hips, not a joint above them that carries the
        body (Bandai-Namco's static ``joint_Root``, the production rig's ``RL_BoneRoot`` on the floor).
    labels:
        Legend names, one per motion.
    """
    ms, names = labelled_motions(motions, labels)
    rows = _rows(ms, names, joints, _default_trajectory_joints)
    fig, axes = _new_figure(len(rows), 3, width=12, row_height=2.0, sharex=True)
    frames = [(m.up_direction(), export_scale(m)) for m in ms]  # ((axis, sign), (metres per unit, unit))
    shared = len({(d, round(f, 12)) for d, (f, _) in frames}) == 1
    up, unit = (frames[0][0], frames[0][1][1] or "file units") if shared else ((1, 1.0), "m")
    for i, (m, name) in enumerate(zip(ms, names)):
        pos = m.positions().numpy()
        if not shared:  # files that differ in up axis or unit: all turned Y-up, in metres
            (axis, sign), (factor, _) = frames[i]
            pos = pos @ up_to_y_matrix(axis, sign).numpy().T * factor
        t = np.arange(m.num_frames) / m.fps
        for r, (row_label, idx) in enumerate(rows):
            for a in range(3):
                ax = axes[r, a]
                ax.plot(t, pos[:, idx[i], a], color=unit_color(i), lw=1.3, label=name, marker=_marker(m))
                ax.set_title(f"{row_label}: {_axis_title(a, up)}", fontsize=9)
    for ax in axes[:, 0]:
        ax.set_ylabel(unit, fontsize=8)
    if not shared:
        fig.suptitle("the files differ in up axis or unit: all turned Y-up, in metres", fontsize=9)
    for ax in axes[-1]:
        ax.set_xlabel("time (s)")
    axes[0, 0].legend(fontsize=8, loc="best")
    return fig


def plot_angles(
    motions: Motion | Sequence[Motion],
    joints: Sequence[str | int] | None = None,
    *,
    labels: Sequence[str] | None = None,
    angle: Literal["flexion", "rotation"] = "flexion",
) -> Figure:
    """Joint angles in degrees over time, one row per joint, one line per motion (see the module
    docstring for ``angle``). Default joints: the knees (and elbows) found by name."""
    if angle not in ("flexion", "rotation"):
        raise ShapeError(f"angle must be 'flexion' or 'rotation', got {angle!r}")
    ms, names = labelled_motions(motions, labels)
    rows = _rows(ms, names, joints, _default_angle_joints)
    fig, axes = _new_figure(len(rows), 1, width=9, row_height=1.9, sharex=True)
    for i, (m, name) in enumerate(zip(ms, names)):
        idx = [r[1][i] for r in rows]
        if angle == "flexion":
            values = joint_flexion(m, idx)
        else:
            values = local_rotation_angle(m, idx)
        t = np.arange(m.num_frames) / m.fps
        for r, (row_label, _) in enumerate(rows):
            axes[r, 0].plot(t, values[:, r], color=unit_color(i), lw=1.3, label=name, marker=_marker(m))
            axes[r, 0].set_ylabel(f"{row_label}\n{angle} (deg)", fontsize=8)
    axes[-1, 0].set_xlabel("time (s)")
    axes[0, 0].legend(fontsize=8, loc="best")
    return fig


def _contact_rows(ax: Axes, t0: float, dt: float, contacts: np.ndarray, names: list[str], rgb: tuple[float, ...]) -> None:
    """Horizontal bars for the True runs of each column of ``contacts`` ``(F, K)``."""
    for k in range(contacts.shape[1]):
        c = np.concatenate([[0], contacts[:, k].astype(np.int8), [0]])
        d = np.diff(c)
        spans = [(t0 + s * dt, (e - s) * dt) for s, e in zip(np.flatnonzero(d == 1), np.flatnonzero(d == -1))]
        ax.broken_barh(spans, (k - 0.35, 0.7), facecolors=rgb)
    ax.set_yticks(range(contacts.shape[1]), names, fontsize=8)
    ax.set_ylim(-0.6, contacts.shape[1] - 0.4)


def _contact_joints(ms: list[Motion], labels: list[str], joints: Sequence[str | int] | None) -> list[list[int]]:
    """``K`` joint indices per motion: ``joints`` (names or indices, checked in every motion) or the feet found by
    name (:func:`~skelanim.ops.contacts.find_feet`); an error names the motion when there are several."""
    found = []
    for m, label in zip(ms, labels):
        try:
            found.append(resolve_joints(m.skeleton, list(joints)) if joints else find_feet(m.skeleton))
        except SkeletonError as err:
            _name_motion(err, m, label, len(ms) > 1)
            raise
    return found


def plot_contacts(
    motions: Motion | Sequence[Motion],
    joints: Sequence[str | int] | None = None,
    *,
    labels: Sequence[str] | None = None,
    contacts: Sequence[np.ndarray] | None = None,
) -> Figure:
    """Foot-contact timeline: one panel per motion, one bar row per foot joint (``joints``, else found by name with
    :func:`skelanim.ops.contacts.find_feet`), bars where :func:`~skelanim.ops.contacts.foot_contacts` is True: a
    joint planted, low and still (what retargeting pins and foot skating measures), stricter than the stance of
    ``skelanim gait`` (:data:`~skelanim.metrics.gait.SPEED_FRACTION`), which runs from heel strike to toe-off:
    the title says so (a walk's ankles showed no double support here against gait's, an audit found). Up is the
    motion's signed :meth:`~skelanim.Motion.up_direction` (an upside-down source's feet are found on its floor).

    ``joints`` names (or indexes) the ``K`` joints to label, the same in every motion, for a skeleton whose feet
    are not found by name. ``contacts`` may give precomputed ``(F, K)`` labels per motion (then rows are named
    ``foot k``, or after ``joints`` when given: one per column).
    """
    ms, names = labelled_motions(motions, labels)
    chosen = _contact_joints(ms, names, joints) if contacts is None or joints else None
    fig, axes = _new_figure(len(ms), 1, width=10, row_height=1.4, sharex=True)
    for i, (m, name) in enumerate(zip(ms, names)):
        if contacts is not None:
            c = np.asarray(contacts[i], dtype=bool).reshape(m.num_frames, -1)
            rows = [f"foot {k}" for k in range(c.shape[1])]
            if chosen is not None:
                if len(chosen[i]) != c.shape[1]:
                    raise ShapeError(f"{len(chosen[i])} joints name the rows of {c.shape[1]} contact columns"
                                     + (f" ({name})" if len(ms) > 1 else ""))  # fmt: skip
                rows = [m.skeleton.names[j] for j in chosen[i]]
        else:
            assert chosen is not None
            up = signed_axis_name(*m.up_direction())  # "-y" for a Y-down file: its floor is at the top
            c = np.asarray(foot_contacts(m, joints=chosen[i], up_axis=up))
            rows = [m.skeleton.names[j] for j in chosen[i]]
        _contact_rows(axes[i, 0], 0.0, 1.0 / m.fps, c, rows, unit_color(i))
        axes[i, 0].set_title(f"{name}: foot contacts" + ("" if contacts is not None else
                             f" (planted: low and under {DEFAULT_SPEED_FRACTION:g} heights/s; gait's stance allows "
                             f"{GAIT_SPEED_FRACTION:g})"), fontsize=9)  # fmt: skip
    # the clips' whole span (frames' span F / fps, the longest clip's): matplotlib had fitted the axis to the bars, so
    # a clip with one contact frame read as in contact throughout and one with none spanned -0.04 to 0.04 s
    axes[-1, 0].set_xlim(0.0, max(m.num_frames / m.fps for m in ms))
    axes[-1, 0].set_xlabel("time (s)")
    return fig


def plot_poses(
    motions: Motion | Sequence[Motion],
    *,
    count: int = 8,
    labels: Sequence[str] | None = None,
) -> Figure:
    """A strip of ``count`` stick figures at evenly spaced frames per motion (one row per motion), in
    side view: orthographic projection onto the plane of the up axis and the main direction of travel.
    Each pose is centred on its own root; left limbs lighter, right limbs darker; a skeleton without bones (one
    joint) is drawn as dots."""
    if count < 1:
        raise ShapeError(f"count must be at least 1, got {count}")
    ms, names = labelled_motions(motions, labels)
    fig, axes = _new_figure(len(ms), 1, width=min(2.0 + 1.3 * count, 20), row_height=2.6)
    for i, (m, name) in enumerate(zip(ms, names)):
        ax = axes[i, 0]
        fig3d = skeleton_figure(m)
        direction = view_direction(fig3d)
        frames = np.unique(np.linspace(0, m.num_frames - 1, count).round().astype(int))
        # a static dummy root far from the body (Bandai's joint_Root) is not drawn; with no bone (one joint) every
        # joint is, as a dot
        drawn = np.unique(fig3d.bones) if len(fig3d.bones) else np.arange(fig3d.positions.shape[1])
        along = [(fig3d.positions[f][drawn] - fig3d.centre[f]) @ direction for f in frames]  # each pose about its root
        behind = max(0.4 * fig3d.height, -min(float(x.min()) for x in along))
        ahead = max(0.4 * fig3d.height, max(float(x.max()) for x in along))
        gap = 0.05 * fig3d.height
        slot = behind + ahead + gap  # a long stride widens every slot instead of reaching into its neighbour's
        for k, f in enumerate(frames):
            p = fig3d.positions[f]
            x = (p - fig3d.centre[f]) @ direction + k * slot
            y = p[:, fig3d.up] - fig3d.floor
            segs = np.stack([np.stack([x[fig3d.bones[:, 0]], y[fig3d.bones[:, 0]]], -1),
                             np.stack([x[fig3d.bones[:, 1]], y[fig3d.bones[:, 1]]], -1)], axis=1)
            cols = [unit_color(i, 0.45) if s > 0 else unit_color(i, -0.3) if s < 0 else unit_color(i) for s in fig3d.sides]
            ax.add_collection(LineCollection(list(segs), colors=cols, linewidths=2.0, capstyle="round"))
            if not len(fig3d.bones):
                ax.plot(x[drawn], y[drawn], "o", color=unit_color(i), ms=5)
            ax.text(k * slot, -0.08 * fig3d.height, f"{f / m.fps:.2f} s", ha="center", va="top", fontsize=7)
        ax.axhline(0.0, color="0.6", lw=0.8)
        ax.set_xlim(-behind - gap / 2, (len(frames) - 1) * slot + ahead + gap / 2)
        top = float((fig3d.positions[frames][..., fig3d.up] - fig3d.floor).max())  # a jump's head stays in
        ax.set_ylim(-0.2 * fig3d.height, max(1.15 * fig3d.height, top + 0.05 * fig3d.height))
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(name, fontsize=9)
    return fig


def plot_motions(
    motions: Motion | Sequence[Motion],
    kind: Kind = "trajectories",
    joints: Sequence[str | int] | None = None,
    *,
    labels: Sequence[str] | None = None,
    angle: Literal["flexion", "rotation"] | None = None,
    count: int | None = None,
) -> Figure:
    """Dispatch to the ``plot_<kind>`` function.

    ``joints`` is used by trajectories, angles and contacts, ``angle`` (default ``"flexion"``) by angles and ``count``
    (default 8) by poses (:data:`OPTION_KINDS`): one given to a kind that does not use it is a :class:`ShapeError`
    rather than ignored.
    """
    if kind not in KINDS:
        raise ShapeError(f"unknown plot kind {kind!r}; expected one of {', '.join(KINDS)}")
    unused = unused_option(kind, {"joints": joints is not None, "angle": angle is not None, "count": count is not None})
    if unused is not None:
        raise ShapeError(f"{unused[0]} is not used by plot kind {kind!r}; only by {kinds_text(unused[1])}")
    if kind == "trajectories":
        return plot_trajectories(motions, joints, labels=labels)
    if kind == "angles":
        return plot_angles(motions, joints, labels=labels, angle=angle or "flexion")
    if kind == "contacts":
        return plot_contacts(motions, joints, labels=labels)
    return plot_poses(motions, count=8 if count is None else count, labels=labels)


def plot_gait_report(report: GaitReport, *, label: str | None = None) -> Figure:
    """Knee and hip flexion over the gait cycle (mean +- sd over all cycles, and per side), the contact
    timeline with heel strikes and the summary numbers."""
    fig, axes = _new_figure(2, 2, width=11, row_height=3.2)
    pct = np.linspace(0, 100, 101)
    for ax, name in ((axes[0, 0], "knee_flexion"), (axes[0, 1], "hip_flexion")):
        mean, sd = report.curve(name)
        ax.fill_between(pct, mean - sd, mean + sd, color="0.8", label="mean ± sd")
        ax.plot(pct, mean, color="k", lw=2, label=f"mean ({report.num_cycles} cycles)")
        for k, side in enumerate(("left", "right")):
            side_mean, _ = report.curve(name, side)
            if np.isfinite(side_mean).all():
                ax.plot(pct, side_mean, color=unit_color(k), lw=1.2, ls="--", label=side)
        ax.set_xlabel("gait cycle (%)")
        ax.set_ylabel(f"{name.replace('_', ' ')} (deg)")
        ax.set_xlim(0, 100)
        ax.legend(fontsize=7)
    ax = axes[1, 0]
    dt = 1.0 / report.fps
    for k, side in enumerate(("left", "right")):
        c = report.contacts[:, k].astype(np.int8)
        d = np.diff(np.concatenate([[0], c, [0]]))
        spans = [(s * dt, (e - s) * dt) for s, e in zip(np.flatnonzero(d == 1), np.flatnonzero(d == -1))]
        ax.broken_barh(spans, (k - 0.35, 0.7), facecolors=unit_color(k))
        ax.plot(report.heel_strikes[side] * dt, np.full(len(report.heel_strikes[side]), k), "k|", ms=14)
    ax.set_yticks([0, 1], ["left", "right"])
    ax.set_ylim(-0.6, 1.6)
    ax.set_xlabel("time (s)  (| = heel strike)")
    ax.set_title("foot contact", fontsize=9)
    ax = axes[1, 1]
    ax.axis("off")
    facts = report.to_dict()
    units = report.units or facts["units_guess"]  # the file's, else guessed from the height (as the CLI says)
    metric = "" if units == "m" else f" = {facts['stride_length_m']:.2f} m"
    lines = [
        f"cycles: {report.num_cycles}",
        f"cadence: {report.cadence:.1f} steps/min",
        f"stride time: {report.stride_time:.3f} s",
        f"stride length: {report.stride_length:.3g} {units}{metric} ({facts['stride_length_per_height']:.2f} heights)",
        f"step width: {report.step_width:.3g} {units}",
        f"walking speed: {report.walking_speed:.3g} {units}/s ({facts['walking_speed_per_height']:.2f} heights/s)",
        f"stance / swing: {report.stance_fraction:.0%} / {1 - report.stance_fraction:.0%}",
    ]
    ax.text(0.0, 1.0, "\n".join(lines), va="top", family="monospace", fontsize=9, transform=ax.transAxes)
    if label:
        fig.suptitle(label, fontsize=10)
    return fig


def check_figure_path(path: str | os.PathLike) -> Path:
    """``path`` if its suffix names a format figures can be written in (png, pdf, svg, jpg, ...), so a command
    can refuse a bad output name before the work that makes the figure; else :class:`UnsupportedFormatError`."""
    target = Path(path)
    suffix = target.suffix.lower().lstrip(".")
    supported = FigureCanvasAgg.get_supported_filetypes()
    if suffix not in supported:
        raise UnsupportedFormatError(
            f"cannot write a figure as {suffix or '(no suffix)'!r}; expected one of {', '.join(sorted(supported))}",
            path=target,
        )
    return target


#: The least resolution :func:`save_figure` takes: below about 8 dots per inch matplotlib's font renderer fails on
#: the labels (FreeType's "invalid ppem value") after the figure is drawn.
MIN_DPI = 10


def save_figure(fig: Figure, path: str | os.PathLike, *, dpi: int = 100) -> Path:
    """Write ``fig`` to ``path`` atomically; the suffix picks the format (png, pdf, svg, jpg, ...); ``dpi`` at least
    :data:`MIN_DPI`."""
    target = check_figure_path(path)
    if not (isinstance(dpi, (int, float, np.integer, np.floating)) and np.isfinite(dpi) and dpi >= MIN_DPI):
        raise ShapeError(f"dpi must be a number of at least {MIN_DPI}, got {dpi!r}", path=target)
    if FigureCanvasAgg is not type(fig.canvas):
        FigureCanvasAgg(fig)
    with atomic_path(target) as tmp:
        fig.savefig(tmp, dpi=dpi, format=target.suffix.lower().lstrip("."))
    return target
