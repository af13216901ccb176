"""Checkpoints as safetensors + JSON, written atomically; never pickles.

A **model folder** holds ``model.safetensors`` (the weights and persistent buffers) and ``config.json``
(everything needed to rebuild the module: architecture, skeleton, metrics, provenance). ``model.safetensors``
is written first, then ``config.json``; each is written to a temporary file and renamed. ``config.json`` records
the SHA-256 of the weights file (``weights_file_sha256``), so the loader refuses new weights beside the previous
config (a kill between the two renames); folders written before it was recorded load unchecked.

A **training state** (for ``--resume``) is one file, ``train_state.safetensors``: the model's tensors under
``model/``, the optimizer's under ``optim/<param index>/<name>``, the torch RNG under ``rng/torch``, and a
JSON string (epoch, step, best metric, history, optimizer hyper-parameters) in the safetensors metadata.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import shutil
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_bytes
from safetensors.torch import load_file, safe_open, save_file
from torch import nn

from skelanim.errors import FormatError, SkelanimError
from skelanim.io.atomic import atomic_open, atomic_path

__all__ = [
    "CONFIG_NAME", "DIGEST_KEY", "STATE_NAME", "UNFINISHED", "WEIGHTS_NAME", "check_finite_weights", "check_optimizer_state", "config_error",
    "load_model_files", "load_train_state", "read_model_config", "read_train_meta", "save_model_files", "save_train_state",
    "update_model_config",
]  # fmt: skip

WEIGHTS_NAME = "model.safetensors"
CONFIG_NAME = "config.json"
STATE_NAME = "train_state.safetensors"
#: The entry of ``config.json`` holding the SHA-256 (hex) of ``model.safetensors``'s bytes.
DIGEST_KEY = "weights_file_sha256"
#: The entry of a model's ``training`` record while its run has not done its epochs (interrupted, stopped by
#: ``max_steps``): ``{"epoch": done, "epochs": planned}``; :func:`load_model_files` warns of it.
UNFINISHED = "unfinished"


def _file_sha256(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _contiguous(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.detach().cpu().contiguous() for k, v in tensors.items()}


def save_model_files(folder: str | os.PathLike, tensors: dict[str, torch.Tensor], config: dict[str, Any]) -> None:
    """Write ``model.safetensors`` and ``config.json`` into ``folder`` (created if needed), atomically.

    Parameters
    ----------
    folder : path
        The model folder.
    tensors : dict of str to Tensor
        Weights and buffers (a ``state_dict``).
    config : dict
        JSON-serialisable description; ``config["tensors"]`` is set to the tensor names and shapes and
        ``config["weights_file_sha256"]`` to the weights file's digest, so the loader can tell a mismatched pair.
    """
    folder = Path(folder)
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    tensors = _contiguous(tensors)
    config = {**config, "tensors": {k: list(v.shape) for k, v in sorted(tensors.items())}}
    try:
        with atomic_path(folder / WEIGHTS_NAME) as tmp:
            try:
                save_file(tensors, str(tmp))
            except SafetensorError as err:  # e.g. a full disk: an OS error naming the file, as other writers give
                full = "No space left" in str(err)
                raise OSError(errno.ENOSPC if full else errno.EIO, f"cannot write the weights: {err}",
                              str(folder / WEIGHTS_NAME)) from None  # fmt: skip
            config[DIGEST_KEY] = _file_sha256(tmp)
        with atomic_open(folder / CONFIG_NAME) as handle:
            json.dump(config, handle, indent=1)
            handle.write("\n")
    except BaseException:
        if created:  # leave no empty or half-written model folder behind
            shutil.rmtree(folder, ignore_errors=True)
        raise


def update_model_config(folder: str | os.PathLike, config: dict[str, Any]) -> None:
    """Rewrite the ``config.json`` of a model folder written by :func:`save_model_files` (atomically), its
    weights untouched: ``config`` must keep their ``"tensors"`` and ``"weights_file_sha256"`` entries."""
    path = Path(folder) / CONFIG_NAME
    held = read_model_config(path)
    if any(held.get(key) != config.get(key) for key in ("tensors", DIGEST_KEY)):
        raise ValueError(f"{path}: the new config does not describe the folder's weights")
    with atomic_open(path) as handle:
        json.dump(config, handle, indent=1)
        handle.write("\n")


def config_error(err: Exception, folder: str | os.PathLike) -> FormatError:
    """A model folder whose config or weights could not build the model, as one line naming what: a missing
    key of ``config.json``, a value of the wrong kind, or weights that do not fit."""
    path = Path(folder)
    if isinstance(err, KeyError):
        return FormatError(f"corrupt model config: no {err.args[0]!r} entry", path=path / CONFIG_NAME)
    if isinstance(err, SkelanimError):  # e.g. a skeleton entry that builds no skeleton: the library's own words
        return FormatError(f"corrupt model config: {err.message}", path=path / CONFIG_NAME)
    if isinstance(err, (TypeError, ValueError, AttributeError)):
        return FormatError(f"corrupt model config: an entry of the wrong kind ({err})".splitlines()[0],
                           path=path / CONFIG_NAME)  # fmt: skip
    # torch's load_state_dict: "Error(s) in loading state_dict for X:" then the first mismatch on the next line
    lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    detail = lines[1] if len(lines) > 1 else (lines[0] if lines else type(err).__name__)
    return FormatError(f"weights do not fit the model its config describes ({detail})", path=path)


#: Top-level ``config.json`` entries of the model kinds that are rates or lengths (a positive number) and frame or
#: member counts (a positive whole number): a 0 had ended in a ZeroDivisionError or an empty stack deep inside.
POSITIVE_ENTRIES = ("fps", "train_fps", "height")
COUNT_ENTRIES = ("window", "observed", "horizon", "length", "members")
#: The largest count taken (400 s at 25 fps): a predictor's ``observed`` of 100,000 had run for minutes on a 6 s
#: clip without a word, padding it to a window of an hour.
MAX_COUNT = 10_000


def read_model_config(path: str | os.PathLike) -> dict[str, Any]:
    """A model's ``config.json`` as a dict; :class:`FormatError` when it is not a JSON object, or when one of
    :data:`POSITIVE_ENTRIES` is not a positive number or one of :data:`COUNT_ENTRIES` not a whole number from 1 to
    :data:`MAX_COUNT`."""
    path = Path(path)
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise FormatError(f"corrupt model config: {err}", path=path) from None
    if not isinstance(config, dict):
        raise FormatError("corrupt model config: not a JSON object", path=path)
    for key in POSITIVE_ENTRIES + COUNT_ENTRIES:
        if key not in config:
            continue
        value = config[key]
        number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        count = key in COUNT_ENTRIES
        if not number or value <= 0 or (count and (value != int(value) or value > MAX_COUNT)):
            kind = f"a whole number from 1 to {MAX_COUNT:,}" if count else "a positive number"
            raise FormatError(f"corrupt model config: {key!r} must be {kind}, found {value!r}", path=path)
    return config


def _stage_hint(folder: Path) -> str:
    """Where a folder holds no model but its ``vae/`` does: a generator run stopped in its first stage."""
    if (folder / "vae" / CONFIG_NAME).is_file():
        return f"; {folder / 'vae'} holds the VAE stage of a generator run stopped before its GAN stage"
    return ""


def load_model_files(folder: str | os.PathLike) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """Read a model folder written by :func:`save_model_files`.

    Parameters
    ----------
    folder : path
        The model folder.

    Returns
    -------
    tuple
        ``(tensors, config)``.

    Raises
    ------
    FormatError
        When the folder or a file is missing, unreadable or corrupt, or the two files disagree: tensor names or
        shapes other than ``config.json`` lists, or a weights file other than the one whose digest it records
        (damaged, replaced, or a write interrupted between the two files).
    """
    folder = Path(folder)
    expected = f"expected a model folder with {WEIGHTS_NAME} and {CONFIG_NAME}"
    if not folder.is_dir():
        what = "a file, not a model folder" if folder.exists() else "no such model folder"
        raise FormatError(f"{what} ({expected})", path=folder)
    for name in (WEIGHTS_NAME, CONFIG_NAME):
        if not (folder / name).is_file():
            raise FormatError(f"{name} is missing ({expected}){_stage_hint(folder)}", path=folder)
    config = read_model_config(folder / CONFIG_NAME)
    try:  # the bytes read once: the tensors and the digest come from the same file, even if it is replaced meanwhile
        data = (folder / WEIGHTS_NAME).read_bytes()
        tensors = load_bytes(data)
    except (SafetensorError, OSError, ValueError, RuntimeError) as err:
        raise FormatError(f"corrupt weights file: {err}", path=folder / WEIGHTS_NAME) from None
    shapes = {k: list(v.shape) for k, v in sorted(tensors.items())}
    if "tensors" in config and config["tensors"] != shapes:
        raise FormatError(f"weights do not match {CONFIG_NAME} (tensor names or shapes differ)", path=folder)
    recorded = config.get(DIGEST_KEY)
    if recorded is not None and recorded != hashlib.sha256(data).hexdigest():
        raise FormatError(f"{WEIGHTS_NAME}'s SHA-256 is not the one {CONFIG_NAME} records: the file was damaged or "
                          "replaced, or a write was interrupted between the two files", path=folder)  # fmt: skip
    training = config.get("training")
    runs = [training] if isinstance(training, dict) else []
    if isinstance(training, dict) and isinstance(training.get("members"), list):  # an ensemble (combine): its members
        runs += [m for m in training["members"] if isinstance(m, dict)]
    for number, run in enumerate(runs):  # an interrupted or --max-steps run's folder had been used as if finished
        left = run.get(UNFINISHED)
        if isinstance(left, dict):
            whose = f"member {number - 1} is" if number else "these are"
            warnings.warn(f"{folder}: {whose} the weights of an unfinished training run (epoch {left.get('epoch')} of "
                          f"{left.get('epochs')}); in its training folder, the command that trained it with --resume "
                          "finishes it", stacklevel=2)  # fmt: skip
    return tensors, config


def save_train_state(
    path: str | os.PathLike,
    model_state: dict[str, torch.Tensor],
    optimizer_state: dict[str, Any],
    meta: dict[str, Any],
) -> None:
    """Write a resumable training state to one safetensors file, atomically.

    Parameters
    ----------
    path : path
        Target file (usually ``<out>/train_state.safetensors``).
    model_state : dict
        The model's ``state_dict``.
    optimizer_state : dict
        The optimizer's ``state_dict`` (tensors and JSON-able scalars).
    meta : dict
        JSON-serialisable loop state (epoch, step, best metric, history, ...).
    """
    tensors = {f"model/{k}": v for k, v in model_state.items()}
    scalars: dict[str, dict[str, Any]] = {}
    for index, entry in optimizer_state["state"].items():
        for name, value in entry.items():
            if isinstance(value, torch.Tensor):
                tensors[f"optim/{index}/{name}"] = value
            else:
                scalars.setdefault(str(index), {})[name] = value
    tensors["rng/torch"] = torch.get_rng_state()
    info = {"meta": meta, "param_groups": optimizer_state["param_groups"], "optim_scalars": scalars}
    with atomic_path(path) as tmp:
        save_file(_contiguous(tensors), str(tmp), metadata={"state": json.dumps(info)})


def _corrupt(what: str, path: Path) -> FormatError:
    return FormatError(f"corrupt training state: {what}".splitlines()[0], path=path)


def _state_info(path: Path) -> dict[str, Any]:
    """The JSON metadata of a training state (``meta``, ``param_groups``, ``optim_scalars``): an object whose
    ``meta`` is an object (its entries are checked by :func:`_check_info`)."""
    try:
        with safe_open(str(path), framework="pt") as handle:
            info = json.loads((handle.metadata() or {})["state"])
    except KeyError:
        raise _corrupt("no 'state' metadata (the loop's position and the optimizer's settings)", path) from None
    except (SafetensorError, OSError, ValueError, RuntimeError) as err:
        raise _corrupt(str(err), path) from None
    if not isinstance(info, dict):
        raise _corrupt(f"its metadata is a JSON {type(info).__name__}, not an object", path)
    if not isinstance(info.get("meta"), dict):
        raise _corrupt("its metadata has no 'meta' object (the loop's position)", path)
    return info


def read_train_meta(path: str | os.PathLike) -> dict[str, Any]:
    """The loop state of a training state file (epoch, step, best, per-epoch history), without loading tensors."""
    path = Path(path)
    if not path.is_file():
        raise FormatError("no training state", path=path)
    return dict(_state_info(path)["meta"])


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


#: Entries of a training state's ``meta`` and what each must be: a count (an integer >= 0), a number, a list, an
#: object; ``None`` allowed where the kind ends in ``?``. :data:`_META_WRITTEN` are always written.
_META_KINDS = {"epoch": "count", "step_in_epoch": "count", "global_step": "count", "seconds": "number",
               "history": "list", "best": "object?", "epoch_sums": "object?", "epoch_count": "count?",
               "loop": "object?", "settings": "object?"}  # fmt: skip
_META_WRITTEN = frozenset({"epoch", "step_in_epoch", "global_step", "seconds", "history", "best"})
_KIND_TESTS = {"count": _is_count, "number": _is_number, "list": lambda v: isinstance(v, list),
               "object": lambda v: isinstance(v, dict)}  # fmt: skip


def _check_info(info: dict[str, Any], path: Path) -> None:
    """Refuse a training state's metadata whose entries are missing or of the wrong kind (they had ended in a
    traceback, or in a loop that went on from a nonsense position)."""
    meta = info["meta"]
    for key, kind in _META_KINDS.items():
        if key not in meta:
            if key in _META_WRITTEN:
                raise _corrupt(f"meta has no {key!r} entry", path)
            continue
        value, optional = meta[key], kind.endswith("?")
        if not ((optional and value is None) or _KIND_TESTS[kind.rstrip("?")](value)):
            raise _corrupt(f"meta.{key} is {json.dumps(value)[:40]}, not a{'n' * (kind[0] == 'o')} {kind.rstrip('?')}",
                           path)  # fmt: skip
    if not all(isinstance(r, dict) for r in meta["history"]):
        raise _corrupt("meta.history holds an entry that is not an object", path)
    if not all(_is_number(v) for v in (meta.get("epoch_sums") or {}).values()):
        raise _corrupt("meta.epoch_sums holds a value that is not a number", path)
    groups = info.get("param_groups")
    if not isinstance(groups, list) or not all(
        isinstance(g, dict) and isinstance(g.get("params"), list) and all(_is_count(i) for i in g["params"])
        for g in groups
    ):
        raise _corrupt("no 'param_groups' list of objects with 'params' lists of indices (optimizer groups)", path)
    scalars = info.get("optim_scalars")
    if not isinstance(scalars, dict) or not all(k.isdigit() and isinstance(v, dict) for k, v in scalars.items()):
        raise _corrupt("no 'optim_scalars' object of objects by parameter index (the optimizer's numbers)", path)


#: What AdamW (the optimizer of :func:`skelanim.nn.train.fit`) keeps for each parameter it has stepped.
ADAM_STATE = frozenset({"step", "exp_avg", "exp_avg_sq"})


def _like(saved: Any, value: Any) -> bool:
    """Whether a saved optimizer hyper-parameter is of the kind of the optimizer's own ``value``: numbers and
    sequences of numbers (``betas``) are checked, flags and the like pass (torch fills in the missing)."""
    if _is_number(value):
        return _is_number(saved)
    if isinstance(value, (list, tuple)) and all(map(_is_number, value)):
        return isinstance(saved, (list, tuple)) and len(saved) == len(value) and all(map(_is_number, saved))
    return True


def _entry_fits(name: str, value: Any, param: torch.Tensor) -> bool:
    """Whether one optimizer entry of ``param`` has its shape (``step``: one number)."""
    if isinstance(value, torch.Tensor):
        return value.numel() == 1 if name == "step" else value.shape == param.shape
    return name != "step" or _is_number(value)


def check_optimizer_state(state: dict[str, Any], optimizer: torch.optim.Optimizer, steps: int, path: Path) -> None:
    """Refuse an optimizer state (from :func:`load_train_state`) that does not fit ``optimizer``, before it is loaded.

    Refused: parameter groups of other sizes or with hyper-parameters of the wrong kind, entries of parameters the
    groups lack or without AdamW's ``step``, ``exp_avg`` and ``exp_avg_sq``, tensors of another shape than their
    parameter, and no entry at all after ``steps`` > 0 steps (such a resume had gone on with fresh moments). A
    parameter without an entry passes: one that has had no gradient yet (a discriminator during a VAE stage) has none.

    Raises
    ------
    FormatError
        Naming ``path`` and what is wrong.
    """
    saved, current = state["param_groups"], optimizer.param_groups
    sizes = [len(g["params"]) for g in saved], [len(g["params"]) for g in current]
    if sizes[0] != sizes[1]:
        raise _corrupt(f"its optimizer groups hold {sizes[0]} parameters, the model's {sizes[1]}", path)
    for group, now in zip(saved, current):
        for key, value in now.items():
            if key != "params" and key in group and not _like(group[key], value):
                raise _corrupt(f"the optimizer's {key} is {json.dumps(group[key])[:40]}, not like {value}", path)
    params = {i: p for group, now in zip(saved, current) for i, p in zip(group["params"], now["params"])}
    entries = state["state"]
    if steps > 0 and not entries:
        raise _corrupt(f"no optimizer state (the Adam moments) after {steps} steps", path)
    for index, entry in entries.items():
        if index not in params:
            raise _corrupt(f"optimizer state of parameter {index}, which its groups do not hold", path)
        lacks = ", ".join(sorted(ADAM_STATE - set(entry)))
        if lacks:
            raise _corrupt(f"parameter {index}'s optimizer state lacks {lacks}", path)
        for name, value in entry.items():
            if not _entry_fits(name, value, params[index]):
                shape = list(value.shape) if isinstance(value, torch.Tensor) else json.dumps(value)[:40]
                raise _corrupt(f"optimizer entry optim/{index}/{name} is {shape}, its parameter "
                               f"{list(params[index].shape)}", path)  # fmt: skip


def check_finite_weights(modules: Sequence[nn.Module | None], path: Path) -> None:
    """Refuse loaded parameters of ``modules`` (``None`` entries skipped) that hold NaN or infinite values. Buffers
    are left alone: one may hold an infinite bound not yet measured (a predictor's input range), which the weight
    average (:func:`skelanim.nn.train.ema_update`) even turns into NaN."""
    for module in modules:
        if module is None:
            continue
        bad = [n for n, p in module.named_parameters() if not bool(torch.isfinite(p).all())]
        if bad:
            raise _corrupt(f"the weights hold NaN or infinite values ({bad[0]})", path)


def load_train_state(path: str | os.PathLike) -> tuple[dict[str, torch.Tensor], dict[str, Any], dict[str, Any]]:
    """Read a training state written by :func:`save_train_state` (and restore the torch RNG).

    Parameters
    ----------
    path : path
        The ``train_state.safetensors`` file.

    Returns
    -------
    tuple
        ``(model_state, optimizer_state, meta)``.

    Raises
    ------
    FormatError
        When the file is missing or corrupt: unreadable, metadata missing or of the wrong kind (see
        :data:`_META_KINDS`), no random-number state or one torch refuses. :func:`check_optimizer_state` and
        :func:`check_finite_weights` check the rest once the model is known.
    """
    path = Path(path)
    if not path.is_file() and (path.parent / CONFIG_NAME).is_file():  # a run stopped before it saved a state
        raise FormatError("no training state to resume from: the run that wrote the model here stopped before it "
                          "saved one, so it cannot be continued; --overwrite trains anew into this folder, or choose "
                          "another output folder", path=path)  # fmt: skip
    if not path.is_file():
        raise FormatError("no training state to resume from (train without --resume first)", path=path)
    info = _state_info(path)
    _check_info(info, path)
    try:
        tensors = load_file(str(path))
    except (SafetensorError, OSError, KeyError, ValueError, RuntimeError) as err:
        raise _corrupt(str(err), path) from None
    model_state = {k[len("model/") :]: v for k, v in tensors.items() if k.startswith("model/")}
    state: dict[int, dict[str, Any]] = {}
    for key, value in tensors.items():
        if key.startswith("optim/"):
            _, index, name = (key.split("/", 2) + ["", ""])[:3]
            if not index.isdigit() or not name:
                raise _corrupt(f"a tensor named {key!r} (expected optim/<parameter index>/<name>)", path)
            state.setdefault(int(index), {})[name] = value
    for index, entry in info["optim_scalars"].items():
        state.setdefault(int(index), {}).update(entry)
    if "rng/torch" not in tensors:
        raise _corrupt("no random-number state (rng/torch)", path)
    try:
        torch.set_rng_state(tensors["rng/torch"])
    except (RuntimeError, TypeError, ValueError) as err:
        raise _corrupt(f"its random-number state (rng/torch) does not fit this torch: {err}", path) from None
    return model_state, {"state": state, "param_groups": info["param_groups"]}, info["meta"]
