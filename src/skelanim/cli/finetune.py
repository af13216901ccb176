"""``--init`` of ``learn recognize train`` and ``learn predict train``: fine-tuning a model folder or a shipped
default (:mod:`skelanim.learn.finetune`); the options the model keeps are refused when given."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import typer

INIT_HELP = ("Fine-tune this model folder, or 'shipped' (the shipped default of --arch; a folder of that name: ./shipped): "
             "its architecture, frame rate, "
             "input statistics and test-time settings are kept; an ensemble is fine-tuned member by member into "
             "OUT/members/N and combined into OUT.")  # fmt: skip


def init_option() -> Any:
    """The ``--init`` option of the recogniser and predictor trainings."""
    return typer.Option(None, "--init", help=INIT_HELP)


def given(ctx: typer.Context, name: str) -> bool:
    """Whether the command line (or the environment) gave the parameter ``name``, rather than its default (the
    source's name: typer 0.29 carries its own copy of click's ``ParameterSource``)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name != "DEFAULT"


def begin_finetuning(ctx: typer.Context, kind: Any, init: str, arch: str, default: str, kept: Sequence[str],
                     fps: float, out: Path) -> tuple[Any, float]:  # fmt: skip
    """Read the ``--init`` folder (or the shipped ``default``) before any data: refuse the options in ``kept``
    (parameter names: the model's own settings) where given, and an ``--arch`` other than the folder's.

    Returns
    -------
    (InitModel, float)
        The init's networks (:func:`~skelanim.learn.finetune.read_init`) and the frame rate to read the data at:
        the model's (``--fps`` is refused where given otherwise).
    """
    from skelanim.learn.finetune import SHIPPED, check_init_fps, read_init

    if init != SHIPPED and Path(init).resolve() == out.resolve():
        raise typer.BadParameter("is the output folder: fine-tune into another one (--resume continues a fine-tuning "
                                 "run with the --init it was started with)", param_hint="--init")  # fmt: skip

    for param in ctx.command.params:
        if param.name in kept and given(ctx, param.name):
            flag = param.opts[0]
            raise typer.BadParameter("is the model's own setting, kept when fine-tuning (--init): leave it out",
                                     param_hint=flag)  # fmt: skip
    start = read_init(kind, init, default)
    theirs = start.config["arch"]
    if given(ctx, "arch") and arch != theirs:
        raise typer.BadParameter(f"{arch!r}, but the --init model is {theirs!r}: leave --arch out", param_hint="--arch")
    return start, check_init_fps(start, fps, given(ctx, "fps"))


def member_folders(out: Path, start: Any) -> list[Path]:
    """The folders an ensemble's members are fine-tuned into (none for a single model)."""
    return [out / "members" / str(i) for i in range(len(start.members))] if len(start.members) > 1 else []


def finetune(start: Any, out: Path, loop: Any, resume: bool, train_one: Callable[..., dict[str, Any]],
             combine: Callable[[list[Path], Path], Any], metric: str) -> None:  # fmt: skip
    """Fine-tune ``start``'s networks (:func:`~skelanim.learn.finetune.finetune_members`) with a summary line per
    network (:func:`~skelanim.cli.learn_common.report_training`) and one for the combined ensemble."""
    from skelanim.cli.learn_common import report_training
    from skelanim.learn.finetune import finetune_members

    def report(folder: Path, result: dict[str, Any]) -> None:
        report_training(folder, result, metric)

    result = finetune_members(start, out, loop, resume, train_one, combine, report)
    if "members" in result:
        typer.echo(f"wrote {out}: the {len(result['members'])} fine-tuned members combined")
    else:
        report_training(out, result, metric)
