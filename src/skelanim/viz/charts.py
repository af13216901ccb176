"""Figures of learning results (matplotlib, Agg canvas, no pyplot state): prediction errors against the
horizon, confusion matrices of a recogniser, and the per-epoch curves of any training run.

Each ``plot_*`` function returns a :class:`matplotlib.figure.Figure`; write it with
:func:`skelanim.viz.plots.save_figure` (atomic; the suffix picks the format).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from skelanim.errors import FormatError
from skelanim.nn.checkpoint import CONFIG_NAME, STATE_NAME, UNFINISHED, read_model_config, read_train_meta
from skelanim.viz._draw import unit_color

__all__ = ["TrainingRun", "confusion_matrix", "plot_confusion", "plot_horizon_errors",
           "plot_training_history", "training_history", "training_run"]

#: Panels of :func:`plot_horizon_errors`: result key, axis label, scale applied to the values.
HORIZON_PANELS = (
    ("mpjpe", "MPJPE, root-relative (% of height)", 100.0),
    ("mpjpe_pose", "MPJPE, pose only (% of height)", 100.0),
    ("mpjpe_global", "MPJPE with root motion (% of height)", 100.0),
    ("angle_deg", "mean angle error (degrees)", 1.0),
)


def plot_horizon_errors(result: Mapping[str, Any], *, title: str | None = None) -> Figure:
    """Errors against the prediction horizon, one line per method.

    Parameters
    ----------
    result : mapping
        ``{"horizons_ms": [H], "methods": {name: {"mpjpe": [H], "mpjpe_pose": [H], "mpjpe_global": [H],
        "angle_deg": [H]}}}``,
        as :func:`skelanim.learn.predict_eval.evaluate_prediction` returns (position errors as fractions of height;
        plotted in %). Panels whose key no method has are left out.
    title : str, optional
        Figure title.
    """
    horizons = [float(h) for h in result["horizons_ms"]]
    methods: Mapping[str, Mapping[str, Sequence[float]]] = result["methods"]
    panels = [p for p in HORIZON_PANELS if any(p[0] in v for v in methods.values())]
    if not panels or not methods:
        raise ValueError("no errors to plot: the result has no methods with mpjpe, mpjpe_global or angle_deg")
    fig = Figure(figsize=(4.2 * len(panels), 3.4), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (key, label, scale) in zip(axes, panels, strict=True):
        for i, (name, scores) in enumerate(methods.items()):
            if key in scores:
                ax.plot(horizons, np.asarray(scores[key], dtype=float) * scale, marker="o", ms=3, color=unit_color(i), label=name)
        ax.set_xlabel("horizon (ms)")
        ax.set_ylabel(label)
        ax.set_xticks(horizons)
        ax.tick_params(axis="x", labelrotation=45)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def confusion_matrix(truth: Sequence[str], predicted: Sequence[str], labels: Sequence[str] | None = None
                     ) -> tuple[np.ndarray, list[str]]:  # fmt: skip
    """Counts ``C[i, j]`` of items of true class ``labels[i]`` predicted as ``labels[j]``.

    Parameters
    ----------
    truth, predicted : sequence of str
        ``(N,)`` class names.
    labels : sequence of str, optional
        Row and column order (default: the sorted names that occur in either).

    Returns
    -------
    tuple
        ``(K, K)`` int array and the ``K`` labels.
    """
    if len(truth) != len(predicted):
        raise ValueError(f"{len(truth)} true labels but {len(predicted)} predictions")
    names = list(labels) if labels is not None else sorted(set(truth) | set(predicted))
    index = {n: i for i, n in enumerate(names)}
    missing = sorted((set(truth) | set(predicted)) - set(index))
    if missing:
        raise ValueError(f"labels not in the given order: {', '.join(missing)}")
    counts = np.zeros((len(names), len(names)), dtype=np.int64)
    np.add.at(counts, ([index[t] for t in truth], [index[p] for p in predicted]), 1)
    return counts, names


def plot_confusion(panels: Mapping[str, tuple[Sequence[str], Sequence[str]]], *, title: str | None = None) -> Figure:
    """Confusion matrices side by side (rows: true class, columns: predicted), coloured by the share of the row
    and annotated with counts; every panel uses the same class order.

    Parameters
    ----------
    panels : mapping of str to (truth, predicted)
        E.g. ``{"files": (true, predicted), "windows": (true, predicted)}``.
    title : str, optional
        Figure title.
    """
    if not panels:
        raise ValueError("no confusion matrix to plot")
    labels = sorted({n for truth, pred in panels.values() for n in (*truth, *pred)})
    size = 1.2 + 0.32 * len(labels)
    fig = Figure(figsize=(size * len(panels) + 1.0, size + 0.6), layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    image = None
    for ax, (name, (truth, pred)) in zip(axes, panels.items(), strict=True):
        counts, _ = confusion_matrix(truth, pred, labels)
        share = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
        image = ax.imshow(share, cmap="Blues", vmin=0.0, vmax=1.0)
        for i, j in zip(*np.nonzero(counts), strict=True):
            ax.text(j, i, str(counts[i, j]), ha="center", va="center", fontsize=7,
                    color="white" if share[i, j] > 0.6 else "black")  # fmt: skip
        correct = int(np.trace(counts))
        ax.set_title(f"{name}: {correct}/{int(counts.sum())} right", fontsize=9)
        ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=7)
        ax.set_yticks(range(len(labels)), labels, fontsize=7)
        ax.set_xlabel("predicted")
        ax.set_ylabel("true")
    assert image is not None  # panels is not empty
    fig.colorbar(image, ax=list(axes), shrink=0.8, label="share of the true class")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


@dataclass(frozen=True)
class TrainingRun:
    """A training run as its model folder records it (:func:`training_run`).

    Attributes
    ----------
    history : list of dict
        Per-epoch records (``{"epoch": n, "train_loss": ..., "val_...": ..., "seconds": ...}``).
    best_epoch : float or None
        The best-scoring epoch, where the run says (a fraction where a run stopped by ``max_steps`` inside an
        epoch kept that point: 0.5).
    keeps_last : bool
        Whether the folder holds the last epoch's weights (``--keep last``) rather than the best epoch's;
        ``False`` where no ``config.json`` says.
    stages : list of (int, str)
        Where each stage of a run of several begins, as ``(first epoch, name)``: a generator's VAE stage, then its
        GAN stage, numbered on (the GAN's epoch 1 is the VAE's last plus one); empty for a run of one stage.
    planned_epochs : int or None
        The epochs the run was started for, where its folder's weights are those of an unfinished run (interrupted
        or stopped by ``max_steps``: :data:`~skelanim.nn.checkpoint.UNFINISHED`); ``None`` for a finished run.
    """

    history: list[dict[str, Any]]
    best_epoch: float | None
    keeps_last: bool
    stages: list[tuple[int, str]] = field(default_factory=list)
    planned_epochs: int | None = None


def training_run(folder: str | Path, *, member: int = 0) -> TrainingRun:
    """A training run's per-epoch records, its best epoch and which epoch's weights it kept, ``config.json``
    read once.

    Reads the full history from the run's ``train_state.safetensors`` when it is there (every epoch run), else
    from ``config.json`` (the epochs up to the best one, as shipped models keep it). An ensemble made by
    ``combine`` keeps each member's training record: ``member`` picks one (0-based).
    """
    folder = Path(folder)
    config_path, state = folder / CONFIG_NAME, folder / STATE_NAME
    if not config_path.is_file() and not state.is_file():
        stage = f"; {folder / 'vae'} holds a generator's VAE stage" if (folder / "vae" / CONFIG_NAME).is_file() else ""
        raise FormatError(f"neither {CONFIG_NAME} nor {STATE_NAME}: not a model or training folder{stage}",
                          path=folder)  # fmt: skip
    history: list[dict[str, Any]] = []
    best = None
    keeps_last = False
    training: dict[str, Any] = {}
    if config_path.is_file():
        training = _training_record(folder, member)
        history, best = list(training.get("history") or []), (training.get("best") or {}).get("epoch")
        keeps_last = _keeps_last(training)
    if state.is_file():
        meta = read_train_meta(state)
        history = list(meta.get("history") or history)
        best = (meta.get("best") or {}).get("epoch", best)
    stages: list[tuple[int, str]] = []
    vae = list(training.get("vae_history") or []) if config_path.is_file() and training.get("stage") == "gan" else []
    if vae and history:  # a generator's two stages (learn generate train): the VAE's epochs, then the GAN's numbered
        # on from the VAE's last (only the GAN stage had been drawn: 2 points of the shipped 182-epoch run)
        shift = int(vae[-1]["epoch"])
        history = vae + [{**r, "epoch": int(r["epoch"]) + shift} for r in history]
        best = None if best is None else float(best) + shift
        stages = [(int(vae[0]["epoch"]), "VAE"), (shift + 1, "GAN")]
    if not history:
        raise FormatError("no finished epoch in this training run yet", path=folder)
    left = training.get(UNFINISHED)
    planned = int(left["epochs"]) if isinstance(left, dict) and isinstance(left.get("epochs"), int) else None
    if planned is not None and stages:  # a generator's GAN stage: its epochs are numbered on from the VAE's
        planned += stages[1][0] - 1
    return TrainingRun(history, float(best) if best is not None else None, keeps_last, stages, planned)


def training_history(folder: str | Path, *, member: int = 0) -> tuple[list[dict[str, Any]], float | None]:
    """Per-epoch records of a training run and its best epoch (:func:`training_run`'s ``history`` and
    ``best_epoch``).

    Returns
    -------
    tuple
        The records (``{"epoch": n, "train_loss": ..., "val_...": ..., "seconds": ...}``) and the best epoch.
    """
    run = training_run(folder, member=member)
    return run.history, run.best_epoch


def _training_record(folder: Path, member: int) -> dict[str, Any]:
    """The ``training`` record of a model folder's ``config.json``: for an ensemble made by ``combine``, member
    ``member``'s own (0-based)."""
    training = read_model_config(folder / CONFIG_NAME).get("training") or {}
    members = training.get("members") or []
    if not training.get("history") and members:  # an ensemble: one member's own run
        if not 0 <= member < len(members):
            raise FormatError(f"member {member} asked for; this ensemble has members 0 to {len(members) - 1}",
                              path=folder)  # fmt: skip
        training = members[member]
    return training


def _keeps_last(training: Mapping[str, Any]) -> bool:
    return (training.get("loop") or {}).get("keep") == "last"


def plot_training_history(history: Sequence[Mapping[str, Any]], *, best_epoch: float | None = None,
                          title: str | None = None, stages: Sequence[tuple[int, str]] = ()) -> Figure:  # fmt: skip
    """Training curves: one panel per logged quantity (training terms and validation scores) against the
    epoch, the best epoch marked.

    Parameters
    ----------
    history : sequence of mapping
        Per-epoch records with an ``"epoch"`` key (:func:`training_history`); ``seconds`` is not plotted.
    best_epoch : float, optional
        Drawn as a vertical line in every panel.
    title : str, optional
        Figure title.
    stages : sequence of (int, str)
        Where each stage of a run of several begins (:attr:`TrainingRun.stages`): a dotted line before each stage
        but the first, its name beside it.
    """
    # every quantity of any epoch, in order of first appearance (a run that validates every few epochs has its
    # validation metrics in some records only)
    numeric = (k for r in history for k, v in r.items() if k not in ("epoch", "seconds") and isinstance(v, (int, float)))
    keys = list(dict.fromkeys(numeric))
    if not keys:
        raise ValueError("the history has no numeric quantity besides epoch and seconds")
    epochs = [int(r["epoch"]) for r in history]
    cols = min(4, len(keys))
    rows = -(-len(keys) // cols)
    fig = Figure(figsize=(3.3 * cols, 2.5 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for i, (ax, key) in enumerate(zip(axes, keys, strict=False)):
        points = [(e, float(r[key])) for e, r in zip(epochs, history, strict=True) if key in r]  # epochs that have it
        ax.plot(*zip(*points, strict=True), marker="o", ms=2.5, color=unit_color(0 if key.startswith("train_") else 1))
        ax.set_title(key, fontsize=9)
        ax.grid(alpha=0.3)
        if best_epoch is not None:
            ax.axvline(best_epoch, color="0.5", ls="--", lw=1)
        for first, name in stages[1:]:
            ax.axvline(first - 0.5, color="0.3", ls=":", lw=1)
            ax.text(first - 0.5, 0.98, f" {name}", transform=ax.get_xaxis_transform(), fontsize=7, va="top")
        if i >= len(keys) - cols:
            ax.set_xlabel("epoch")
    for ax in axes[len(keys) :]:
        ax.set_visible(False)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig
