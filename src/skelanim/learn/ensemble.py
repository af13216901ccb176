"""Deep ensembles: separately trained models of one recipe combined into one model folder.

A model trained on a few hundred windows depends much on its random initialisation: on the styles held out in
cross-validation two seeds of one recogniser recipe differ by up to 25 points of files on one fold, and two
seeds of the prediction GRU by 0.1-0.4 % of height at 1 s (learn README). Averaging ``K`` such models
(Lakshminarayanan et al. 2017) removes much of that variance.

* :func:`combine_recognizers` writes one :class:`~skelanim.learn.recognize.Recognizer` folder with
  ``members = K`` (:class:`~skelanim.learn.stgcn.Members`): probabilities are the members' mean, the features
  used for FID their concatenation.
* :func:`combine_predictors` writes one :class:`~skelanim.learn.predict.Predictor` folder with ``members = K``
  (:class:`~skelanim.learn.predictors.MemberMean`): the predicted frame vectors are the members' mean.

Both check that the models share everything but their network weights (rig, window, input statistics; for
predictors also the architecture) and keep each member's training record in ``config.json``. Recogniser
members may differ in their architecture options (e.g. one that centres its pose channels, ``centre``); the
differences are stored as the ensemble's ``member_options``. A folder that holds an ensemble counts member by
member, so a shipped ensemble can grow; input statistics must agree to float rounding.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import torch

from skelanim.errors import FormatError
from skelanim.learn.predict import Predictor
from skelanim.learn.recognize import Recognizer
from skelanim.nn.checkpoint import read_model_config, save_model_files

__all__ = ["combine_predictors", "combine_recognizers", "single_members"]

#: Config keys that must agree between recogniser members (what defines the model but its weights and the
#: members' architecture options, which may differ: ``member_options``).
SHARED_KEYS = ("format", "arch", "rig", "contents", "styles", "window", "fps", "path", "test_mirror", "test_speeds",
               "rotations", "label_spaces")
#: The same for predictors.
PREDICTOR_SHARED_KEYS = ("format", "arch", "rig", "observed", "horizon", "fps", "arch_options", "amplitude_reference",
                         "test_mirror", "amplitude_votes")


Model = TypeVar("Model", Recognizer, Predictor)


def combine_recognizers(folders: Sequence[str | Path], out: str | Path, *, command: str | None = None,
                        test_speeds: Sequence[float] | None = None) -> Recognizer:  # fmt: skip
    """Write the ensemble of the recognisers in ``folders`` to the model folder ``out``.

    Parameters
    ----------
    folders : sequence of path
        Two or more single-model recogniser folders trained on the same data (other seeds, or other
        architecture options, which become ``member_options``).
    out : path
        Model folder to write (``model.safetensors`` + ``config.json``).
    command : str, optional
        The command line, recorded in ``config.json``.
    test_speeds : sequence of float, optional
        The ensemble's :class:`~skelanim.learn.recognize.Recognizer` ``test_speeds`` (default: the members').

    Returns
    -------
    Recognizer
        The combined model, in eval mode.

    Raises
    ------
    FormatError
        When a folder is not a single-model recogniser or differs from the first in anything but weights and
        architecture options (the message names the folder and the first differing setting).
    """
    settings = {"test_speeds": [float(v) for v in test_speeds]} if test_speeds else {}
    return _combine(Recognizer, SHARED_KEYS, folders, out, command, settings)


def combine_predictors(folders: Sequence[str | Path], out: str | Path, *, command: str | None = None) -> Predictor:
    """Write the ensemble of the predictors in ``folders`` (one recipe, other seeds) to the model folder ``out``.

    Parameters, return value and errors as :func:`combine_recognizers`, for
    :class:`~skelanim.learn.predict.Predictor` folders; besides the input normalisation, the members must share
    the output step scale (both are statistics of the training data).
    """
    return _combine(Predictor, PREDICTOR_SHARED_KEYS, folders, out, command)


def _combine(kind: type[Model], shared_keys: Sequence[str], folders: Sequence[str | Path], out: str | Path,
             command: str | None, settings: dict[str, Any] | None = None) -> Model:  # fmt: skip
    """Check that ``folders`` hold models of ``kind`` (single ones or ensembles, whose members count one by one)
    that differ only in ``net.*`` weights (statistics agree to float rounding, as when computed on another
    machine; the first folder's are kept), then write the model with ``members = K`` whose ``net.members.i.*``
    are theirs (and the config ``settings``)."""
    if len(folders) < 2:
        raise ValueError(f"an ensemble needs at least two model folders, got {len(folders)}")
    models, records, sources = [], [], []
    for folder in folders:
        training = read_model_config(Path(folder) / "config.json").get("training", {})
        members = single_members(kind, kind.load(folder), training)
        models += [model for model, _ in members]
        records += [record for _, record in members]
        sources += [folder] * len(members)
    first = models[0].config()
    statistics = {k: v for k, v in models[0].state_dict().items() if not k.startswith("net.")}
    for folder, model in zip(sources, models):
        config = model.config()
        for key in sorted(shared_keys, key=lambda k: k != "fps"):  # a rate also changes the rig: name the rate
            if config.get(key) != first.get(key):
                values = (config.get(key), first.get(key))
                said = f" ({values[0]} against {values[1]})" if all(isinstance(v, (int, float, str)) for v in values) else ""
                raise FormatError(f"{key!r} differs from {folders[0]}'s{said}; members must share one recipe",
                                  path=folder)  # fmt: skip
        for name, stat in model.state_dict().items():
            if name in statistics and not torch.allclose(stat, statistics[name], rtol=1e-5, atol=1e-6):
                raise FormatError(f"training-data statistics ({name}) differ from {folders[0]}'s: members must "
                                  "be trained on the same data", path=folder)  # fmt: skip
    config = {**first, "members": len(models), **(settings or {})}
    if "arch_options" not in shared_keys:  # members built alike but for these options
        overrides = [{k: v for k, v in m.config()["arch_options"].items() if first["arch_options"].get(k) != v}
                     for m in models]  # fmt: skip
        config["member_options"] = overrides if any(overrides) else None
    ensemble = kind.from_config(config)
    state = dict(statistics)
    for i, model in enumerate(models):
        state.update({f"net.members.{i}.{k}": v for k, v in model.net.state_dict().items()})
    ensemble.load_state_dict(state)
    record: dict[str, Any] = {"combined": [str(f) for f in folders], "command": command,
                              "members": records}  # fmt: skip
    save_model_files(out, ensemble.state_dict(), {**ensemble.config(), "training": record})
    return ensemble.eval()


def single_members(kind: type[Model], model: Model, training: dict[str, Any]) -> list[tuple[Model, dict[str, Any]]]:
    """``model`` as single models with their training records: itself, or each member of an ensemble (built
    with its own architecture options, its ``net.members.i.*`` weights and the ensemble's statistics)."""
    if model.members == 1:
        return [(model, training)]
    config = model.config()
    overrides = config.get("member_options") or [{}] * model.members
    records = training.get("members") or [{}] * model.members
    state = model.state_dict()
    singles = []
    for i in range(model.members):
        single = kind.from_config({**config, "members": 1, "member_options": None,
                                   "arch_options": {**config["arch_options"], **overrides[i]}})  # fmt: skip
        prefix = f"net.members.{i}."
        single.load_state_dict({**{k: v for k, v in state.items() if not k.startswith("net.")},
                                **{"net." + k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}})  # fmt: skip
        singles.append((single, records[i]))
    return singles
