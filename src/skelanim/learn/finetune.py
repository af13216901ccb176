"""Fine-tuning (``--init``): a recogniser or predictor trained further, on other data or for longer, starting from
the weights of a model folder, the shipped defaults among them.

The model stays the init's: its architecture, frame rate, window and rig, its input normalisation (the
statistics of the data it was first trained on, which its weights are tied to: recomputed on the new data they
would move every input the network sees), and a predictor's calibration (amplitude reference and votes, input
range, test-time mirror). A recogniser takes the classes of the new data: the rows of its content and style
heads for classes the init knows start from the init's rows, those of new classes fresh, and classes the data
lacks are dropped (training could not keep them). An ensemble is fine-tuned member by member, each from its own
weights with seed ``seed + i`` into ``OUT/members/i``, and combined into ``OUT``
(:mod:`skelanim.learn.ensemble`), as its members were trained apart.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from skelanim.data.dataset import MotionDataset
from skelanim.data.rig import require_rig, require_same_rig
from skelanim.errors import FormatError
from skelanim.learn.common import pretrained_dir
from skelanim.learn.ensemble import single_members
from skelanim.learn.predict import Predictor
from skelanim.learn.recognize import Recognizer
from skelanim.nn.checkpoint import CONFIG_NAME, STATE_NAME, WEIGHTS_NAME, read_model_config
from skelanim.nn.resume import check_same_start
from skelanim.nn.train import TrainConfig

__all__ = ["SHIPPED", "InitModel", "adapt_recognizer", "clear_members", "finetune_members", "read_init", "require_fits"]

#: ``--init shipped``: the shipped default of the kind (and architecture) being trained.
SHIPPED = "shipped"

#: The training record's entries of the calibrations made after training (``learn predict calibrate``).
CALIBRATION_RECORDS = ("amplitude_calibration", "earlier_calibrations")

Model = TypeVar("Model", Recognizer, Predictor)


class InitModel:
    """The model folder a fine-tuning starts from, as single networks.

    Attributes
    ----------
    folder : str
        The folder as given (``"shipped"`` for a shipped default).
    config : dict
        Its ``config.json`` without the training record.
    members : list
        ``(model, record)`` per network (one for a single model): the network with the folder's statistics and
        float32 weights (a shipped folder's are float16), and its training record.
    calibrations : dict
        The records of the calibrations the folder's model went through after training (``amplitude_calibration``
        and ``earlier_calibrations`` of ``learn predict calibrate``; empty for none): a fine-tuned model keeps
        their results, so its record names them.
    """

    def __init__(self, folder: str, config: dict[str, Any], members: list[tuple[Any, dict[str, Any]]],
                 calibrations: dict[str, Any] | None = None) -> None:  # fmt: skip
        self.folder, self.config, self.members = folder, config, members
        self.calibrations = dict(calibrations or {})

    def record(self, index: int) -> dict[str, Any]:
        """What a fine-tuned network's ``config.json`` says it started from: the folder, the member, the command
        and seed of the init's own training, and the calibrations whose results it keeps."""
        training = self.members[index][1]
        return {"folder": self.folder, "member": index if len(self.members) > 1 else None,
                "command": training.get("command"), "seed": training.get("seed"), **self.calibrations}  # fmt: skip


def read_init(kind: type[Model], init: str | Path, default: str) -> InitModel:
    """Load the ``--init`` folder ``init`` (``"shipped"``: the shipped ``default``) of models of ``kind``.

    Raises
    ------
    FormatError
        When the folder is not a model of ``kind`` (one line naming it); an unfinished run's loads with its warning.
    """
    folder = None if str(init) == SHIPPED else Path(init)
    model = kind.load(folder, default=default)
    training = read_model_config((folder or pretrained_dir(default)) / CONFIG_NAME).get("training")
    training = training if isinstance(training, dict) else {}
    calibrations = {key: training[key] for key in CALIBRATION_RECORDS if key in training}
    return InitModel(str(init), model.config(), single_members(kind, model, training), calibrations)


def require_fits(init: Predictor | Recognizer, train_ds: MotionDataset, owner: str) -> None:
    """Refuse a fine-tuning's network and data that do not fit (``ValueError`` or ``SkeletonError``, one line): an
    ensemble (:func:`finetune_members` splits it), clips not on its skeleton, a dataset on another rig (it reads
    windows in its own rig's joints and height units), another frame rate."""
    if init.members > 1:
        raise ValueError(f"init must be one network, not an ensemble of {init.members} (finetune_members splits it)")
    require_rig(train_ds.clips, init.rig.skeleton, owner)
    require_same_rig(train_ds.rig, init.rig, owner)
    if abs(init.fps - train_ds.fps) > 1e-9:
        raise ValueError(f"the data is at {train_ds.fps:g} fps, {owner} at {init.fps:g}")


def check_init_fps(init: InitModel, fps: float, given: bool) -> float:
    """The frame rate a fine-tuning reads its data at: the init's; ``fps`` given otherwise is refused."""
    rate = float(init.config["fps"])
    if given and abs(fps - rate) > 1e-9:
        raise FormatError(
            f"the model works at {rate:g} fps, not the {fps:g} asked for: leave --fps out", path=init.folder
        )
    return rate


def adapt_recognizer(init: Recognizer, contents: Sequence[str], styles: Sequence[str],
                     label_spaces: Mapping[str, Sequence[str]] | None) -> Recognizer:  # fmt: skip
    """A copy of the single-network recogniser ``init`` for the classes ``contents`` and ``styles``: every weight
    and statistic the init's, the heads' rows of classes it knows its rows, those of other classes as a fresh
    ``nn.Linear`` draws them (seed torch before calling)."""
    config = {**init.config(), "contents": list(contents), "styles": list(styles), "label_spaces": label_spaces}
    model = Recognizer.from_config(config)
    old = init.state_dict()
    state = model.state_dict()
    rows = {"content_head.": (init.contents.names, contents), "style_head.": (init.styles.names, styles)}
    for key, value in state.items():
        head = next((h for h in rows if key.startswith("net." + h)), None)
        if head is None:
            state[key] = old[key]
            continue
        if key not in old:  # the init has no style head
            continue
        known, wanted = rows[head]
        for i, name in enumerate(wanted):
            if name in known:
                value[i] = old[key][known.index(name)]
    model.load_state_dict(state)
    return model


def finetune_members(init: InitModel, out: Path, loop: TrainConfig, resume: bool,
                     train_one: Callable[[Any, Path, TrainConfig, bool, dict[str, Any]], dict[str, Any]],
                     combine: Callable[[list[Path], Path], Any],
                     report: Callable[[Path, dict[str, Any]], None] | None = None) -> dict[str, Any]:  # fmt: skip
    """Fine-tune each network of ``init`` with ``train_one(model, folder, loop, resume, init_record)``: a single
    model into ``out``; an ensemble's member ``i`` into ``out/members/i`` with seed ``loop.seed + i`` (resumed where
    that folder holds a training state and ``resume`` is asked), then ``combine(folders, out)``.

    Returns
    -------
    dict
        ``train_one``'s result for a single model; for an ensemble ``{"members": [results], "folders": [paths]}``.
    """
    if not resume:  # a new run into OUT: what an earlier run left there goes, or a later --resume would mix it in
        clear_members(out)
        (out / STATE_NAME).unlink(missing_ok=True)
    else:  # the run resumed started from this init (its state's weights win; the record would name another start)
        check_same_start(out / "members" / "0" if len(init.members) > 1 else out, init.folder)
    if len(init.members) == 1:
        return train_one(init.members[0][0], out, loop, resume, init.record(0))
    if resume and not (out / "members" / "0" / STATE_NAME).is_file():  # as a single model's resume refuses
        raise FormatError("no fine-tuned member to resume (members/0 holds no training state): run without "
                          "--resume", path=out)  # fmt: skip
    results, folders = [], []
    for i, (member, _) in enumerate(init.members):
        folder = out / "members" / str(i)
        again = resume and (folder / STATE_NAME).is_file()
        results.append(train_one(member, folder, replace(loop, seed=loop.seed + i), again, init.record(i)))
        if report is not None:
            report(folder, results[-1])
        folders.append(folder)
    (out / STATE_NAME).unlink(missing_ok=True)  # a single model's run there (a resume would go on from it over this)
    combine(folders, out)
    return {"members": results, "folders": folders}


def clear_members(out: Path) -> None:
    """Remove the member folders an ensemble's fine-tuning wrote into ``out/members`` (their model files and
    training states; a folder left with other files stays)."""
    for folder in sorted((out / "members").glob("*")) if (out / "members").is_dir() else []:
        for name in (WEIGHTS_NAME, CONFIG_NAME, STATE_NAME):
            (folder / name).unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            folder.rmdir()
    with contextlib.suppress(OSError):
        (out / "members").rmdir()
