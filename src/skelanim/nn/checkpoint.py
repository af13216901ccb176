"""Checkpoints as safetensors + JSON, written atomically; never pickles.

A **model folder** holds ``model.safetensors`` (the weights and persistent buffers) and ``config.json``
(everything needed to rebuild the module: architecture, skeleton, metrics, provenance). ``model.safetensors``
is written first, then ``config.json``; each is written to a temporary file and renamed, so a kill leaves
either the previous pair or the new one (the loader checks that they agree).

A **training state** (for ``--resume``) is one file, ``train_state.safetensors``: the model's tensors under
``model/``, the optimizer's under ``optim/<param index>/<name>``, the torch RNG under ``rng/torch``, and a
JSON string (epoch, step, best metric, history, optimizer hyper-parameters) in the safetensors metadata.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, safe_open, save_file

from skelanim.errors import FormatError
from skelanim.io.atomic import atomic_open, atomic_path

__all__ = [
    "CONFIG_NAME", "STATE_NAME", "WEIGHTS_NAME", "config_error", "load_model_files", "load_train_state", "read_model_config",
    "read_train_meta", "save_model_files", "save_train_state", "update_model_config",
]  # fmt: skip

WEIGHTS_NAME = "model.safetensors"
CONFIG_NAME = "config.json"
STATE_NAME = "train_state.safetensors"


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
        JSON-serialisable description; ``config["tensors"]`` is set to the tensor names and shapes so the
        loader can tell a mismatched pair.
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
        with atomic_open(folder / CONFIG_NAME) as handle:
            json.dump(config, handle, indent=1)
            handle.write("\n")
    except BaseException:
        if created:  # leave no empty or half-written model folder behind
            shutil.rmtree(folder, ignore_errors=True)
        raise


def update_model_config(folder: str | os.PathLike, config: dict[str, Any]) -> None:
    """Rewrite the ``config.json`` of a model folder written by :func:`save_model_files` (atomically), its
    weights untouched: ``config`` must keep their ``"tensors"`` entry."""
    path = Path(folder) / CONFIG_NAME
    if read_model_config(path).get("tensors") != config.get("tensors"):
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
    if isinstance(err, (TypeError, ValueError, AttributeError)):
        return FormatError(f"corrupt model config: an entry of the wrong kind ({err})".splitlines()[0],
                           path=path / CONFIG_NAME)  # fmt: skip
    return FormatError(f"weights do not fit the model its config describes ({err})".splitlines()[0], path=path)


def read_model_config(path: str | os.PathLike) -> dict[str, Any]:
    """A model's ``config.json`` as a dict; :class:`FormatError` when it is not a JSON object."""
    path = Path(path)
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise FormatError(f"corrupt model config: {err}", path=path) from None
    if not isinstance(config, dict):
        raise FormatError("corrupt model config: not a JSON object", path=path)
    return config


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
        When the folder or a file is missing, unreadable or corrupt, or the two files disagree.
    """
    folder = Path(folder)
    expected = f"expected a model folder with {WEIGHTS_NAME} and {CONFIG_NAME}"
    if not folder.is_dir():
        raise FormatError(f"no such model folder ({expected})", path=folder)
    for name in (WEIGHTS_NAME, CONFIG_NAME):
        if not (folder / name).is_file():
            raise FormatError(f"{name} is missing ({expected})", path=folder)
    config = read_model_config(folder / CONFIG_NAME)
    try:
        tensors = load_file(str(folder / WEIGHTS_NAME))
    except (SafetensorError, OSError, ValueError, RuntimeError) as err:
        raise FormatError(f"corrupt weights file: {err}", path=folder / WEIGHTS_NAME) from None
    shapes = {k: list(v.shape) for k, v in sorted(tensors.items())}
    if "tensors" in config and config["tensors"] != shapes:
        raise FormatError(f"weights do not match {CONFIG_NAME} (tensor names or shapes differ)", path=folder)
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


def _state_info(path: Path) -> dict[str, Any]:
    """The JSON metadata of a training state (``meta``, ``param_groups``, ``optim_scalars``)."""
    try:
        with safe_open(str(path), framework="pt") as handle:
            return json.loads((handle.metadata() or {})["state"])
    except (SafetensorError, OSError, KeyError, ValueError, RuntimeError) as err:
        raise FormatError(f"corrupt training state: {err}", path=path) from None


def read_train_meta(path: str | os.PathLike) -> dict[str, Any]:
    """The loop state of a training state file (epoch, step, best, per-epoch history), without loading tensors."""
    path = Path(path)
    if not path.is_file():
        raise FormatError("no training state", path=path)
    return dict(_state_info(path)["meta"])


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
        When the file is missing or corrupt.
    """
    path = Path(path)
    if not path.is_file():
        raise FormatError("no training state to resume from (train without --resume first)", path=path)
    info = _state_info(path)
    try:
        tensors = load_file(str(path))
    except (SafetensorError, OSError, KeyError, ValueError, RuntimeError) as err:
        raise FormatError(f"corrupt training state: {err}", path=path) from None
    model_state = {k[len("model/") :]: v for k, v in tensors.items() if k.startswith("model/")}
    state: dict[int, dict[str, Any]] = {}
    for key, value in tensors.items():
        if key.startswith("optim/"):
            _, index, name = key.split("/", 2)
            state.setdefault(int(index), {})[name] = value
    for index, entry in info["optim_scalars"].items():
        state.setdefault(int(index), {}).update(entry)
    if "rng/torch" in tensors:
        torch.set_rng_state(tensors["rng/torch"])
    return model_state, {"state": state, "param_groups": info["param_groups"]}, info["meta"]
