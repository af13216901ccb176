"""Deep ensembles of recognisers: separately trained models of one recipe combined into one model folder.

A recogniser trained on a few hundred windows depends much on its random initialisation: on the styles held
out in cross-validation two seeds of one recipe differ by up to 25 points of files on one fold (learn README).
Averaging the class probabilities of ``K`` such models (Lakshminarayanan et al. 2017) removes much of that
variance. :func:`combine_recognizers` checks that the models share everything but their weights (architecture,
rig, classes, window, input normalisation) and writes one :class:`~skelanim.learn.recognize.Recognizer` folder
with ``members = K`` (:class:`~skelanim.learn.stgcn.Members`): probabilities are the members' mean, the
features used for FID their concatenation, and ``config.json`` keeps each member's training record.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from skelanim.errors import FormatError
from skelanim.learn.recognize import Recognizer
from skelanim.nn.checkpoint import read_model_config, save_model_files

__all__ = ["combine_recognizers"]

#: Config keys that must agree between members (everything that defines the model but its weights).
SHARED_KEYS = ("format", "arch", "rig", "contents", "styles", "window", "fps", "arch_options", "path", "test_mirror")


def combine_recognizers(folders: Sequence[str | Path], out: str | Path, *, command: str | None = None) -> Recognizer:
    """Write the ensemble of the recognisers in ``folders`` to the model folder ``out``.

    Parameters
    ----------
    folders : sequence of path
        Two or more single-model recogniser folders of one recipe (same training data, other seeds).
    out : path
        Model folder to write (``model.safetensors`` + ``config.json``).
    command : str, optional
        The command line, recorded in ``config.json``.

    Returns
    -------
    Recognizer
        The combined model, in eval mode.

    Raises
    ------
    FormatError
        When a folder is not a single-model recogniser or differs from the first in anything but weights
        (the message names the folder and the first differing setting).
    """
    if len(folders) < 2:
        raise ValueError(f"an ensemble needs at least two model folders, got {len(folders)}")
    models = [Recognizer.load(folder) for folder in folders]
    configs = [read_model_config(Path(folder) / "config.json") for folder in folders]
    first, first_norm = models[0].config(), models[0].norm.state_dict()
    for folder, model in zip(folders, models):
        if model.members != 1:
            raise FormatError(f"already an ensemble of {model.members} members; combine single models", path=folder)
        config = model.config()
        for key in SHARED_KEYS:
            if config.get(key) != first.get(key):
                raise FormatError(f"{key!r} differs from {folders[0]}'s; members must share one recipe", path=folder)
        for name, stat in model.norm.state_dict().items():
            if not torch.equal(stat, first_norm[name]):
                raise FormatError(f"input normalisation ({name}) differs from {folders[0]}'s: members must be "
                                  "trained on the same data", path=folder)  # fmt: skip
    ensemble = Recognizer.from_config({**first, "members": len(models)})
    state = {f"norm.{k}": v for k, v in first_norm.items()}
    for i, model in enumerate(models):
        state.update({f"net.members.{i}.{k}": v for k, v in model.net.state_dict().items()})
    ensemble.load_state_dict(state)
    record: dict[str, Any] = {"combined": [str(f) for f in folders], "command": command,
                              "members": [c.get("training", {}) for c in configs]}  # fmt: skip
    save_model_files(out, ensemble.state_dict(), {**ensemble.config(), "training": record})
    return ensemble.eval()
