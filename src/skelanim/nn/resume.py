"""What a resumed training run must share with the run it continues (:func:`skelanim.nn.train.fit`, ``resume=True``):
the loop settings that shape its trajectory, the task and architecture options its config records, and the number
of processes; other data passes with a note."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tqdm import tqdm

from skelanim.errors import FormatError

__all__ = ["RESUME_DATA", "RESUME_PROVENANCE", "RESUME_SAME", "check_same_loop", "check_same_settings",
           "check_same_start", "check_same_world", "resume_settings"]  # fmt: skip


#: Loop settings a resumed run must share with the run it continues (they shape its trajectory).
RESUME_SAME = ("epochs", "batch_size", "lr", "weight_decay", "warmup_steps", "grad_clip", "seed", "ema")


def check_same_loop(saved: dict[str, Any] | None, config: Any, path: Path) -> None:
    """Refuse to resume with loop settings other than the saved ones (a state saved before they were recorded
    passes)."""
    if saved is None:
        return
    changed = [f"{k} {saved[k]} -> {getattr(config, k)}" for k in RESUME_SAME if k in saved and saved[k] != getattr(config, k)]
    if changed:
        raise FormatError(f"resume with the arguments the run was started with ({', '.join(changed)})", path=path)


#: Entries of a model config's ``training`` record that say what made the run, not how it trains: a resumed
#: run records its own (``init`` too: a resume's weights come from its state, however ``--init`` is spelt).
RESUME_PROVENANCE = ("command", "date", "torch", "threads", "machine", "seed", "loop", "best", "history", "world_size",
                     "stopped", "vae_history", "init")  # fmt: skip
#: Entries that describe the data (files, their measured rig and counts): a resume on other data gets a note.
RESUME_DATA = ("rig", "skeleton", "height", "training.data", "training.validation", "training.train_files",
               "training.val_files", "training.train_frames", "training.val_frames", "training.families",
               "training.bone_stretch", "training.max_frames_per_file")  # fmt: skip


def resume_settings(config: dict[str, Any]) -> dict[str, Any]:
    """A model config (:meth:`Task.model_config`) as ``{dotted key: JSON value}`` of what a resumed run must share
    with the run it continues (task and architecture options; the data too, checked more leniently), leaving out
    :data:`RESUME_PROVENANCE`."""
    flat: dict[str, Any] = {}

    def visit(prefix: str, value: Any) -> None:
        if isinstance(value, dict) and prefix not in RESUME_DATA:
            for k, v in value.items():
                key = f"{prefix}.{k}" if prefix else str(k)
                if not (prefix.partition(".")[0] == "training" and k in RESUME_PROVENANCE):
                    visit(key, v)
        else:
            flat[prefix] = json.loads(json.dumps(value, default=str))  # tuples as lists, as the saved state has them

    visit("", config)
    return flat


def check_same_settings(saved: dict[str, Any] | None, settings: dict[str, Any], path: Path, emit_note: bool) -> None:
    """Refuse to resume with other task or architecture options than the saved ones (``--mirror``, ``--centre``,
    ... had been taken without a word, the config then recording options the weights were partly trained
    without); other data passes with a note on stderr. A state saved before they were recorded passes."""
    if saved is None:
        return

    def shown(value: Any) -> str:
        text = json.dumps(value)
        return text if len(text) <= 40 else text[:37] + "..."

    changed = [k for k in sorted(set(saved) | set(settings)) if json.dumps(saved.get(k)) != json.dumps(settings.get(k))]
    options = [k for k in changed if k not in RESUME_DATA]
    if options:
        said = "; ".join(f"{k.removeprefix('training.')} {shown(saved.get(k))} -> {shown(settings.get(k))}"
                         for k in options[:3])  # fmt: skip
        more = f" and {len(options) - 3} more" if len(options) > 3 else ""
        raise FormatError(f"resume with the options the run was started with ({said}{more})", path=path)
    if changed and emit_note:
        tqdm.write(f"note: {path.parent}: the run resumes on other data than it was started with "
                   f"({', '.join(k.removeprefix('training.') for k in changed)} differ)", file=sys.stderr)


def check_same_world(saved: int | None, world: int, path: Path) -> None:
    """Refuse to resume on another number of processes than the run was started on: it sets the steps per epoch and
    each rank's slice of a batch (a state saved before it was recorded passes)."""
    if saved is not None and saved != world:
        raise FormatError(f"resume with the {saved} process(es) the run was started with, not {world} "
                          "(torchrun --nproc-per-node)", path=path)  # fmt: skip


def check_same_start(folder: Path, init: str) -> None:
    """Refuse to resume, with ``--init init``, the run whose model folder ``folder`` records another start
    (``training.init.folder``, or none: trained from scratch): the state's weights win either way, and the resumed
    run would record a start it did not use. A folder without a model yet passes."""
    from skelanim.nn.checkpoint import CONFIG_NAME, read_model_config

    if not (folder / CONFIG_NAME).is_file():
        return
    training = read_model_config(folder / CONFIG_NAME).get("training")
    started = training.get("init") if isinstance(training, dict) else None
    recorded = started.get("folder") if isinstance(started, dict) else None
    if recorded != init:
        raise FormatError(f"the run resumed here started {f'from {recorded}' if recorded else 'from scratch'}, not "
                          f"from --init {init}: resume it with the options it was started with", path=folder)  # fmt: skip
