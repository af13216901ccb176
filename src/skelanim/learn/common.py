"""Pieces shared by recognition, prediction and generation: normalisation buffers, FK on the rig, model
folders (``model.safetensors`` + ``config.json`` via :mod:`skelanim.nn.checkpoint`), the shipped defaults,
data splits and provenance.
"""

from __future__ import annotations

import inspect
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn
from tqdm import tqdm

from skelanim.core.skeleton import Skeleton
from skelanim.data.dataset import BANDAI_TEST_STYLES, BANDAI_VAL_STYLES, MotionDataset, with_synonyms
from skelanim.data.rig import Rig, require_up, rig_mismatch
from skelanim.errors import FormatError
from skelanim.nn.checkpoint import CONFIG_NAME, config_error, load_model_files, save_model_files
from skelanim.nn.distributed import is_main
from skelanim.nn.layers import ForwardKinematics
from skelanim.nn.train import TrainConfig

__all__ = ["Normalizer", "export_for_shipping", "file_balance_weights", "load_folder", "load_model", "load_weights",
           "pretrained_dir", "provenance", "require_rig_up", "resolved_options", "rig_fk", "set_threads",
           "skeleton_mismatch", "split_dataset", "spread_sample"]  # fmt: skip

#: Tensors kept in float32 by :func:`export_for_shipping` (statistics, not weights).
KEEP_FLOAT32 = ("norm.mean", "norm.std", "step_scale", "latent_mean", "latent_chol", "input_low", "input_high")


class Normalizer(nn.Module):
    """Feature standardisation with its statistics stored as (persistent) buffers, so they travel with the
    weights in ``model.safetensors``.

    Parameters
    ----------
    shape : tuple of int
        Shape of the statistics (broadcast against the features' trailing dims).
    """

    mean: Tensor  # buffers
    std: Tensor

    def __init__(self, shape: Sequence[int]) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(*shape))
        self.register_buffer("std", torch.ones(*shape))

    def set(self, mean: Tensor, std: Tensor) -> None:
        """Store statistics (reshaped to the buffers' shape)."""
        self.mean.copy_(mean.reshape(self.mean.shape))
        self.std.copy_(std.reshape(self.std.shape))

    def forward(self, x: Tensor) -> Tensor:
        """``(x - mean) / std``."""
        return (x - self.mean) / self.std

    def inverse(self, x: Tensor) -> Tensor:
        """``x * std + mean``."""
        return x * self.std + self.mean


def rig_fk(rig: Rig) -> ForwardKinematics:
    """FK over the rig's model joints in height units (:class:`skelanim.nn.ForwardKinematics`)."""
    return ForwardKinematics(rig.parents, rig.offsets)


def set_threads(threads: int | None) -> None:
    """Set torch's CPU threads when given."""
    if threads:
        torch.set_num_threads(int(threads))


def pretrained_dir(name: str) -> Path:
    """Folder of the shipped default model ``name`` (``recognize``, ``predict_rnn``, ``predict_gcn``, ``predict_mlp``, ``generate``)."""
    return Path(str(resources.files("skelanim.learn") / "pretrained" / name))


def spread_sample(items: Tensor, size: int) -> Tensor:
    """Up to ``size`` of ``items`` (first dim), evenly spread from the first to the last (a statistics sample)."""
    return items[torch.linspace(0, len(items) - 1, min(size, len(items))).long()]


def load_folder(
    folder: str | os.PathLike | None, default: str, fmt: str
) -> tuple[dict[str, Tensor], dict[str, Any], Path]:
    """Read a model folder (the shipped default when ``folder`` is ``None``) and check its format tag.

    Returns
    -------
    tuple
        ``(tensors, config, folder)``.

    Raises
    ------
    FormatError
        When missing, corrupt or of another kind of model.
    """
    path = pretrained_dir(default) if folder is None else Path(folder)
    tensors, config = load_model_files(path)
    if config.get("format") != fmt:
        raise FormatError(f"not a {fmt} model (config.json format is {config.get('format')!r})", path=path)
    return tensors, config, path


def skeleton_mismatch(model: str, trained: Skeleton, given: Skeleton) -> str:
    """The message for motion on another skeleton than a model's (:func:`~skelanim.data.rig.rig_mismatch` of ``"the
    {model}"``: ``"predictor"``, ``"recogniser"``, ...). "Works on", not "was trained on": the baselines of
    ``skelanim predict`` (constant velocity, ...) run on the predictors' rig and are not trained."""
    return rig_mismatch(f"the {model}", trained, given)


def require_rig_up(ds: MotionDataset, rig: Rig, model: str) -> None:
    """:func:`~skelanim.data.rig.require_up` of a dataset's clips against the ``model``'s rig (``skelanim
    recognize``/``predict``/``evaluate`` turn each motion they are given onto the rig's up instead)."""
    require_up(ds.clips, rig.up, f"the {model}'s")


def split_dataset(ds: MotionDataset, split: str, *, seed: int = 0) -> dict[str, MotionDataset | None]:
    """The named split of a dataset.

    ``"style"``: train on styles other than :data:`~skelanim.data.dataset.BANDAI_TEST_STYLES` and
    :data:`~skelanim.data.dataset.BANDAI_VAL_STYLES`, validate on the latter, test on the former.
    ``"style:S1,S2,..."``: the same with the named test styles (a fold of a cross-validation over styles;
    validation keeps :data:`~skelanim.data.dataset.BANDAI_VAL_STYLES` not named). ``"style:S1,.../V1,..."``
    also names the validation styles; ``"style:S1,.../"`` validates on none, so every other style trains (the
    final fit of a recipe chosen by cross-validation, for models that keep their last epoch).
    ``"file"``: :meth:`MotionDataset.split_by_file` stratified by content (20 % test, 10 % validation).
    ``"none"``: every clip trains and tests, none validates.
    """
    if split == "none":
        return {"train": ds, "val": None, "test": ds}
    unstyled = next((c.path for c in ds.clips if not c.labels.get("style")), None)
    if split.partition(":")[0] == "style" and unstyled is not None:
        raise ValueError(f"split {split!r} needs a style in every file name, and {unstyled} has none; "
                         "use --split file or none")  # fmt: skip
    if split == "style":
        return ds.split_by_style(test=BANDAI_TEST_STYLES, val=BANDAI_VAL_STYLES)
    if split.startswith("style:"):
        test_part, slash, val_part = split[len("style:") :].partition("/")
        test, val = ([s.strip() for s in part.split(",") if s.strip()] for part in (test_part, val_part))
        known = set(ds.labels("style"))
        unknown = [s for s in test + val if s not in known]
        if not test or unknown:
            raise ValueError(f"split {split!r}: no files of style {', '.join(unknown) or '(none named)'}; "
                             f"styles here: {', '.join(sorted(known))}")  # fmt: skip
        if both := sorted(with_synonyms(test) & with_synonyms(val)):  # one style spelt two ways counts as one
            raise ValueError(f"split {split!r}: style {', '.join(both)} cannot both test and validate")
        return ds.split_by_style(test=test, val=val if slash else [s for s in BANDAI_VAL_STYLES if s not in test])
    if split == "file":
        return ds.split_by_file(test_fraction=0.2, val_fraction=0.1, seed=seed)
    raise ValueError(f"unknown split {split!r}; expected 'style', 'style:S1,S2,...', 'file' or 'none'")


def note_short_clips(train_ds: MotionDataset, window: int, log: Any = None) -> None:
    """A note where training clips are shorter than a ``window``: each gives one window, its last frame held to the
    end (:meth:`MotionDataset.gather`), which a user of short takes had not been told (8 of Xia's 10 clips in a
    64-frame window, one 29 frames long and 35 frames of held pose)."""
    short = [c for c in train_ds.clips if c.num_frames < window]
    if not short:
        return
    note = (f"note: {len(short)} of {len(train_ds.clips)} training clips are shorter than the {window}-frame window "
            f"({short[0].name}: {short[0].num_frames} frames{', ...' if len(short) > 1 else ''}); each gives one window, "
            "its last pose held to the end")  # fmt: skip
    _note(note, log)


def keep_without_validation(loop: TrainConfig, validated: bool, log: Any = None) -> TrainConfig:
    """``loop`` as it is where there is validation data; without it, ``keep="last"``, with a note: an epoch cannot be
    chosen as "best" by a score of the training windows (what the task reports instead, ``train_subset_*``)."""
    if validated or loop.keep != "best":
        return loop
    note = ("note: no validation windows (split none, too few files to hold any out, held-out clips all shorter "
            "than a validation window, or, for a generator, none of a content and style it has a class for): the "
            "score is of training windows (train_subset_*) and the last epoch is kept")  # fmt: skip
    _note(note, log)
    return replace(loop, keep="last")


def _note(note: str, log: Any = None) -> None:
    """A note about the training data: to ``log``, else stderr (a note, not a result: it had gone to stdout, into a
    --json reader's input); under torchrun from process 0 only (every process had printed it)."""
    if not is_main():
        return
    if log is not None:
        log(note)
    else:
        tqdm.write(note, file=sys.stderr)


def provenance(command: str | None, files: Sequence[str], seed: int) -> dict[str, Any]:
    """What made a model: command, data, seed, date, machine."""
    return {"command": command, "data": [str(f) for f in files], "seed": seed,
            "date": time.strftime("%Y-%m-%d %H:%M:%S"), "torch": torch.__version__,
            "threads": torch.get_num_threads(), "machine": platform.machine()}  # fmt: skip


def training_files(config: dict[str, Any]) -> set[str]:
    """The names of the files a model (every member of an ensemble) was trained on, from its config's provenance;
    empty where none is recorded. Names without their folders: a copy of a training file in another folder is the
    same take (a folder had been part of the key, and copies of the Bandai files were scored as unseen)."""
    found: set[str] = set()

    def visit(record: Any) -> None:
        if isinstance(record, dict):
            found.update(Path(str(f)).name for f in record.get("data") or [])
            for member in record.get("members") or []:
                visit(member)

    visit(config.get("training"))
    return found


def export_for_shipping(src: str | os.PathLike, dest: str | os.PathLike, *, drop: Sequence[str] = ()) -> int:
    """Copy a model folder with float16 weights (statistics stay float32), leaving out tensors whose names
    start with a prefix in ``drop`` (e.g. a GAN's discriminator, which sampling never uses).

    Returns
    -------
    int
        Size in bytes of the written ``model.safetensors``.
    """
    tensors, config = load_model_files(src)
    unused = [p for p in drop if not any(k.startswith(p) for k in tensors)]
    if unused:  # a mistyped prefix would ship what was meant to be left out
        raise FormatError(f"no tensor's name starts with {unused[0]!r} (names start with "
                          f"{', '.join(sorted({k.split('.')[0] + '.' for k in tensors}))})", path=src)  # fmt: skip
    out = {k: (v.half() if v.is_floating_point() and not k.endswith(KEEP_FLOAT32) else v)
           for k, v in tensors.items() if not any(k.startswith(p) for p in drop)}  # fmt: skip
    config.pop("tensors", None)
    config["shipped"] = {"weights": "float16", "dropped": list(drop)}
    save_model_files(dest, out, config)
    return (Path(dest) / "model.safetensors").stat().st_size


def resolved_options(cls: type[Any], options: dict[str, Any] | None) -> dict[str, Any]:
    """``options`` completed with the keyword-only defaults of ``cls.__init__`` (tuples as lists), so a
    config records the architecture even if the defaults change later."""
    out = {name: p.default for name, p in inspect.signature(cls.__init__).parameters.items()
           if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is not inspect.Parameter.empty}  # fmt: skip
    out.update(options or {})
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in out.items()}


def file_balance_weights(clip: Tensor, num_files: int, exponent: float) -> Tensor:
    """Window weights ``∝ n_f^-exponent`` (``n_f``: windows of the window's file), mean 1.

    Parameters
    ----------
    clip : Tensor
        ``(W,)`` file index of each training window.
    num_files : int
        Files in the dataset.
    exponent : float
        0: every window weighs 1; 1: every file weighs the same.

    Returns
    -------
    Tensor
        ``(W,)`` float weights, mean 1.
    """
    per_file = torch.bincount(clip, minlength=num_files).float().clamp_min(1.0)
    weight = per_file.pow(-exponent)[clip]
    return weight / weight.mean()


def load_model(kind: Any, folder: str | os.PathLike | None, default: str, fmt: str, *,
               optional: Sequence[str] = ()) -> Any:
    """``kind.from_config`` of a model folder's config with its weights loaded (:func:`load_folder`,
    :func:`load_weights`), in eval mode; a config that cannot build the model is a :class:`FormatError` naming
    the entry (:func:`~skelanim.nn.checkpoint.config_error`)."""
    tensors, config, path = load_folder(folder, default, fmt)
    try:
        model = kind.from_config(config)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise config_error(err, path) from None
    except RuntimeError as err:  # torch refusing a layer the entries describe (a negative size): no traceback
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise FormatError(f"corrupt model config: it builds no network ({detail})", path=Path(path) / CONFIG_NAME) from None
    load_weights(model, tensors, path, optional=optional)
    return model.eval()


def load_weights(model: nn.Module, tensors: dict[str, Tensor], path: Path, *, optional: Sequence[str] = ()) -> None:
    """``model.load_state_dict(tensors)``, raising :class:`FormatError` (naming ``path``) on a mismatch;
    keys starting with a prefix in ``optional`` may be missing."""
    try:
        missing, unexpected = model.load_state_dict(tensors, strict=False)
    except RuntimeError as err:
        first = str(err).strip().splitlines()[1:2] or [str(err)]
        raise FormatError(
            f"weights do not fit the model described by config.json ({first[0].strip()})", path=path
        ) from None
    bad = [k for k in missing if not any(k.startswith(p) for p in optional)] + list(unexpected)
    if bad:
        raise FormatError(f"weights do not fit the model described by config.json ({', '.join(bad[:3])})", path=path)
