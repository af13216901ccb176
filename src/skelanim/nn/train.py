"""The shared training loop: seeded, resumable, DDP-aware, with per-epoch validation and best checkpoints.

A model package describes its problem as a :class:`Task` (how to build a batch, the loss, validation, and
what to write beside the weights); :func:`fit` does the rest:

* **Determinism.** Epoch ``e`` visits the samples in ``randperm(N)`` drawn from a generator seeded with
  ``(seed, e)``; batch ``s`` of epoch ``e`` on rank ``r`` gets its own generator seeded with
  ``(seed, e, s, r)`` for augmentation. Nothing depends on how often the loop was interrupted, so a run
  resumed after a kill follows the same trajectory as an uninterrupted one.
* **Checkpoints.** After each epoch the task validates; when its ``metric`` (lower is better) improves,
  the model folder (``model.safetensors`` + ``config.json``) is rewritten (after every epoch with
  ``keep="last"``, so the folder ends with the final weights). ``train_state.safetensors``
  (weights, optimizer, position in the data) is written at each epoch end and every ``save_every_s``
  seconds; ``resume=True`` continues from it. All writes are atomic, and the run holds a lock on the folder from
  start to end (:mod:`skelanim.nn.outdir`): a second run into it is refused, and one that fails before writing
  anything leaves no empty folder.
* **DDP.** Under ``torchrun`` (see :mod:`skelanim.nn.distributed`) the model is wrapped in
  ``DistributedDataParallel``; each rank takes its slice of every global batch; rank 0 validates, prints
  and writes. Models whose loss leaves some parameters without a gradient (a GAN's discriminator during a
  VAE stage) need DDP's ``find_unused_parameters``: :attr:`TrainConfig.find_unused_parameters` sets it, and
  by default one probe step on the first batch (model, buffers and RNG restored afterwards) finds out, agreed
  across ranks. The task's loss must call the model (the DDP wrapper), not its submodules, or gradients
  are not averaged: at the end every rank fingerprints its parameters and :func:`fit` raises if they differ.
* **Device.** :attr:`TrainConfig.device` (``"cpu"``, ``"cuda"``, ...) is where the model and each batch live; the
  batches are still built on the CPU from the seeded generators (:mod:`skelanim.nn.device`), and a task with a
  ``to_device(device)`` method is asked to move what its loss and validation hold. Under ``torchrun`` a bare
  ``"cuda"`` is each rank's own GPU (``LOCAL_RANK``). The model folder and the training state are written from
  CPU copies, so they load anywhere, and the model is back on the CPU when :func:`fit` returns. The training state
  holds the CPU's random state only: on a GPU, what the model draws itself in its forward (dropout masks) comes
  from the GPU's generator, so there a resumed run is not bit-identical to an uninterrupted one.
* **Schedule.** AdamW, linear warm-up then cosine decay over all planned steps down to 2 % of the peak rate
  (``0.02 + 0.98 * (1 + cos(pi * progress)) / 2``), gradient clipping.
* **Failures.** A gradient norm that is not finite (the same on every rank: DDP averaged the gradients), or a
  validation metric that is not, stops every rank with :class:`~skelanim.errors.TrainingError` before anything of
  that step is written: the folder keeps what was written before (the model folder as ``keep`` chose it, the
  training state of the last save), and a failed run that wrote nothing leaves no folder. A diverged run had ended
  with exit 0, NaN weights and a NaN best. A loss that is NaN with a zero gradient (a mean over no labels) trains on.
* **Weight averaging.** With :attr:`TrainConfig.ema` > 0 an exponential moving average of the weights and
  buffers (``torch.optim.swa_utils.AveragedModel``) follows the trained model; it is what validation sees
  and what the model folder holds, and it travels in the training state, so a resumed run averages on.
  The decay ramps up as in TensorFlow's ``ExponentialMovingAverage(num_updates=n)``: ``min(ema, (1 + n) /
  (10 + n))`` after ``n`` updates, so the average forgets the random initialisation at once; in runs shorter
  than about ``9 / (1 - ema)`` steps the ramp alone decides, and the average spans roughly the last tenth
  of the steps.
"""

from __future__ import annotations

import hashlib
import math
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import Tensor, nn
from torch.optim.swa_utils import AveragedModel
from tqdm import tqdm

from skelanim.errors import FormatError, SkelanimError, TrainingDataError, TrainingError
from skelanim.nn import distributed as ddp
from skelanim.nn.checkpoint import (
    CONFIG_NAME,
    STATE_NAME,
    UNFINISHED,
    WEIGHTS_NAME,
    check_finite_weights,
    check_optimizer_state,
    load_model_files,
    load_train_state,
    read_model_config,
    save_model_files,
    save_train_state,
    update_model_config,
)
from skelanim.nn.device import rank_device, to_device
from skelanim.nn.outdir import check_output_folders, check_same_kind, training_folder
from skelanim.nn.resume import RESUME_SAME, check_same_loop, check_same_settings, check_same_world, resume_settings

#: Seconds between redraws of the epoch's progress bar where stderr is a file or a pipe (a log, not a terminal).
LOG_BAR_INTERVAL = 30.0

__all__ = ["Task", "TrainConfig", "check_output_folders", "fit", "parameter_fingerprint", "seeded_generator",
           "unused_parameters"]  # fmt: skip


@dataclass
class TrainConfig:
    """Loop settings (the task owns everything about the data and the model).

    Attributes
    ----------
    epochs : int
        Planned epochs (the LR schedule spans them).
    batch_size : int
        Samples per step and rank.
    lr, weight_decay : float
        AdamW settings (peak learning rate).
    warmup_steps : int
        Linear warm-up length.
    grad_clip : float
        Max gradient norm (0 disables).
    seed : int
        Seeds model init (by the caller), data order and augmentation.
    save_every_s : float
        Also write the training state this often (seconds) within an epoch.
    max_steps : int or None
        Stop after this many steps in total (tests); the schedule still spans ``epochs``. Stopped inside an
        epoch, the run validates and writes the model folder if none is written yet (or ``keep="last"``), with
        ``training.stopped`` (the fractional epoch and the scores) in its config; ``resume`` continues it.
    progress : bool
        Show a tqdm bar (rank 0 only).
    find_unused_parameters : bool or None
        DDP's flag of that name; ``None`` finds out with one probe step (only under DDP).
    ema : float
        Decay per step of the weight average that is validated and saved (0 disables; e.g. 0.999).
    keep : str
        ``"best"`` (the epoch with the best validation metric) or ``"last"`` (the final weights) in the model
        folder; the validation history is recorded either way.
    device : str
        Where the model and batches live (a torch device name: ``"cpu"``, ``"cuda"``, ``"cuda:1"``; see
        :func:`skelanim.nn.device.resolve_device` for ``"auto"``). Not part of the run's trajectory: a run may be
        resumed on another device.
    validate_every : int
        Validate after every this many epochs and after the last (1: every epoch). The epochs between are
        recorded with their training terms only, and the model folder is written at validated epochs only
        (``"best"`` among them; with ``"last"`` the final epoch, which is always validated). For long runs whose
        validation is costly (a generator's FID).
    """

    epochs: int = 20
    batch_size: int = 256
    lr: float = 2e-3
    weight_decay: float = 1e-4
    warmup_steps: int = 200
    grad_clip: float = 1.0
    seed: int = 0
    save_every_s: float = 60.0
    max_steps: int | None = None
    progress: bool = True
    find_unused_parameters: bool | None = None
    ema: float = 0.0
    keep: str = "best"
    validate_every: int = 1
    device: str = "cpu"

    def __post_init__(self) -> None:
        if self.keep not in ("best", "last"):
            raise ValueError(f"keep must be 'best' or 'last', got {self.keep!r}")
        if self.validate_every < 1:
            raise ValueError(f"validate_every must be >= 1, got {self.validate_every}")


class Task(Protocol):
    """What :func:`fit` needs from a model package."""

    #: Name of the validation metric that picks the best checkpoint (lower is better).
    metric: str

    def num_samples(self) -> int:
        """Training samples ``N``."""

    def batch(self, indices: Tensor, generator: torch.Generator) -> dict[str, Tensor]:
        """Build (and augment, drawing only from ``generator``) the batch of samples ``indices``."""

    def loss(self, model: nn.Module, batch: dict[str, Tensor]) -> tuple[Tensor, dict[str, float]]:
        """Scalar loss to minimise and named parts to log."""

    def validate(self, model: nn.Module) -> dict[str, float]:
        """Validation metrics (must include :attr:`metric`)."""

    def model_config(self) -> dict[str, Any]:
        """JSON-serialisable description written to ``config.json`` beside the weights."""

    # Optional: ``to_device(self, device: torch.device) -> None`` moves the tensors the loss and validation use
    # (called once by :func:`fit` before training when the task has it).


#: ``finish(tensors, config) -> tensors`` of :func:`fit`: the kept weights to write, from those the folder holds.
Finish = Callable[[dict[str, Tensor], dict[str, Any]], dict[str, Tensor]]


def seeded_generator(*keys: int) -> torch.Generator:
    """A CPU generator seeded from integer ``keys`` (stable across runs and processes)."""
    seed = 0
    for key in keys:
        seed = (seed * 1_000_003 + int(key) + 1) % (2**63 - 1)
    return torch.Generator().manual_seed(seed)


def _lr_factor(step: int, total: int, warmup: int) -> float:
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return 0.02 + 0.98 * 0.5 * (1.0 + math.cos(math.pi * progress))


def ema_update(decay: float):
    """``multi_avg_fn`` for :class:`~torch.optim.swa_utils.AveragedModel`: an EMA whose decay ramps up.

    After ``n`` updates the average moves toward the model by ``max(1 - decay, 9 / (10 + n))`` (the warm-up
    of TensorFlow's ``ExponentialMovingAverage`` with ``num_updates``), so the first steps' weights are soon
    forgotten. Integer buffers (batch-norm step counters) are copied, and so are infinite values (a predictor's
    input range is +-inf until it is set: lerped, inf - inf had made the average's range NaN, which a clamp passes).
    """

    def update(averaged: list[Tensor], current: list[Tensor], num_averaged: Tensor) -> None:
        if not averaged[0].is_floating_point():
            for avg, cur in zip(averaged, current):
                avg.copy_(cur)
            return
        torch._foreach_lerp_(averaged, current, max(1.0 - decay, 9.0 / (10.0 + float(num_averaged))))
        finite = torch.stack([torch.isfinite(avg).all() for avg in averaged])  # one host sync on a GPU, not one each
        if not bool(finite.all()):
            for avg, cur in zip(averaged, current):
                avg.copy_(torch.where(torch.isfinite(avg), avg, cur))

    return update


AVERAGED_PREFIX = "averaged/"


def _unwrap(model: nn.Module) -> nn.Module:
    return model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model


def unused_parameters(model: nn.Module, task: Task, batch: dict[str, Tensor]) -> list[str]:
    """Names of trainable parameters that get no gradient from ``task.loss`` on ``batch``.

    One forward and backward pass of the plain ``model``; its gradients, buffers (batch-norm statistics)
    and the random state (the CPU's, and the GPU's where the model is on one) are restored afterwards, so
    training continues as if it had not run.
    """
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    grads = [p.grad for _, p in trainable]
    buffers = {n: b.clone() for n, b in model.named_buffers()}
    was_training = model.training
    gpus = [p.device for _, p in trainable if p.device.type == "cuda"][:1]
    with torch.random.fork_rng(devices=gpus):
        try:
            for _, p in trainable:
                p.grad = None
            model.train()
            loss, _ = task.loss(model, batch)
            loss.backward()
            return [n for n, p in trainable if p.grad is None]
        finally:
            for (_, p), g in zip(trainable, grads):
                p.grad = g
            with torch.no_grad():
                for n, b in model.named_buffers():
                    b.copy_(buffers[n])
            model.train(was_training)


def parameter_fingerprint(model: nn.Module) -> str:
    """SHA-256 of the parameters' bytes (names, dtypes, shapes and values; buffers left out)."""
    digest = hashlib.sha256()
    for name, p in _unwrap(model).named_parameters():
        digest.update(f"{name}:{p.dtype}:{tuple(p.shape)};".encode())
        digest.update(p.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def fit(
    model: nn.Module,
    task: Task,
    out_dir: str | Path,
    config: TrainConfig,
    *,
    resume: bool = False,
    log: Any = None,
    finish: Finish | None = None,
) -> dict[str, Any]:
    """Train ``model`` on ``task``; write the best model folder and a resumable state into ``out_dir``.

    Parameters
    ----------
    model : nn.Module
        Freshly initialised (seed it before building it) on the CPU; it is trained on ``config.device`` and is
        on the CPU again when this returns.
    task : Task
        Data, loss and validation.
    out_dir : path
        Model folder to write (created).
    config : TrainConfig
        Loop settings.
    resume : bool
        Continue from ``out_dir/train_state.safetensors``; without it a training state there is removed (it is of
        the run this one replaces) and a model of another kind there is refused.
    log : callable, optional
        ``log(str)`` for one line per epoch (default: ``tqdm.write`` on rank 0).
    finish : callable, optional
        ``finish(tensors, config)`` on rank 0 at the end, while the folder is still locked: given the weights and
        config the model folder holds, it returns the weights to write there instead (a predictor's input range,
        measured with the kept weights). The folder is not read again after :func:`fit` returns, so what another
        run writes there later cannot be mixed in.

    Returns
    -------
    dict
        ``{"best": {metric: value, ...}, "history": [per-epoch dicts], "steps": int, "seconds": float}``, and
        ``"stopped": {"step": int, "epoch": float}`` where the model folder holds the weights of a stop by
        ``max_steps`` inside an epoch (on rank 0).

    Raises
    ------
    FormatError
        When ``resume`` finds no training state, a corrupt one, or one of another run (model, loop or options).
    SkelanimError
        When another training is writing ``out_dir`` (rank 0 holds a lock on it for the whole run: see
        :func:`skelanim.nn.outdir.training_folder`, which also removes a folder this created that stays empty).
    """
    out_dir = Path(out_dir)
    ddp.setup()
    rank_device(torch.device(config.device))  # the GPU of this rank, current before the ranks agree on the folder
    with training_folder(out_dir, main=ddp.is_main()):
        try:
            return _fit(model, task, out_dir, config, resume=resume, log=log, finish=finish)
        except KeyboardInterrupt:  # Ctrl-C had ended the run with exit 130 and not a word of what was kept
            if ddp.is_main() and (out_dir / STATE_NAME).is_file():
                print(f"interrupted: {out_dir} holds the training state of the last save; the same command with "
                      "--resume continues from it", file=sys.stderr)  # fmt: skip
            raise


def _fit(model: nn.Module, task: Task, out_dir: Path, config: TrainConfig, *, resume: bool, log: Any,
         finish: Finish | None) -> dict[str, Any]:
    """:func:`fit` in its locked folder."""
    distributed = ddp.setup()
    main = ddp.is_main()
    world, rank = ddp.world_size(), ddp.rank()
    emit = log or (lambda line: tqdm.write(line))
    device = rank_device(torch.device(config.device))
    if distributed and device.type != "cuda" and ddp.backend() == "nccl":
        raise SkelanimError(f"NCCL (SKELANIM_DDP_BACKEND=nccl) reduces GPU tensors only; the model is on {device}: "
                            "train with --device cuda, or leave the backend to gloo")  # fmt: skip
    model.to(device)
    move_task = getattr(task, "to_device", None)
    if move_task is not None:
        move_task(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    n = task.num_samples()
    steps_per_epoch = n // (config.batch_size * world)
    if steps_per_epoch < 1:
        ranks = f" x {world} processes" if world > 1 else ""
        raise TrainingDataError(f"{n} training samples (windows, poses) are fewer than one batch of {config.batch_size}"
                                f"{ranks}: give more data or a smaller batch size (--batch-size)")  # fmt: skip
    total_steps = steps_per_epoch * config.epochs
    meta: dict[str, Any] = {"epoch": 0, "step_in_epoch": 0, "global_step": 0, "best": None, "history": [],
                            "seconds": 0.0}  # fmt: skip
    settings = resume_settings(task.model_config())
    # a model of another kind in the folder would be replaced by this run's, or its run resumed as this one's (every
    # rank checks)
    check_same_kind(out_dir, task.model_config().get("format"), resume=resume)
    if not resume and main:  # a replaced run's state: a later resume would go on from it, had this run stopped early
        (out_dir / STATE_NAME).unlink(missing_ok=True)
    averaged = None
    if config.ema > 0:
        averaged = AveragedModel(model, multi_avg_fn=ema_update(config.ema), use_buffers=True)
    if resume:
        state_path = out_dir / STATE_NAME
        model_state, optim_state, meta = load_train_state(state_path)
        check_same_loop(meta.get("loop"), config, state_path)
        check_same_world(meta.get("world_size"), world, state_path)
        try:
            model.load_state_dict({k: v for k, v in model_state.items() if not k.startswith(AVERAGED_PREFIX)})
        except RuntimeError:  # another architecture or size: torch lists every key
            raise FormatError("the training state is of another model (architecture or size options differ): "
                              "resume with the arguments it was started with", path=state_path) from None
        check_same_settings(meta.get("settings"), settings, state_path, main)  # shape-neutral options
        check_optimizer_state(optim_state, optimizer, meta["global_step"], state_path)
        try:
            optimizer.load_state_dict(optim_state)
            if averaged is not None:
                averaged.load_state_dict({k[len(AVERAGED_PREFIX) :]: v for k, v in model_state.items()
                                          if k.startswith(AVERAGED_PREFIX)})  # fmt: skip
        except (ValueError, KeyError, RuntimeError) as err:
            raise FormatError(f"corrupt training state: {err}".splitlines()[0], path=state_path) from None
        check_finite_weights([model, averaged], state_path)
    find_unused = config.find_unused_parameters
    if distributed:
        if find_unused is None:
            step = meta["step_in_epoch"]
            order = torch.randperm(n, generator=seeded_generator(config.seed, meta["epoch"]))
            start = (step * world + rank) * config.batch_size
            probe = to_device(task.batch(order[start : start + config.batch_size],
                                         seeded_generator(config.seed, meta["epoch"], step, rank)), device)  # fmt: skip
            unused = unused_parameters(model, task, probe)
            find_unused = ddp.any_rank(bool(unused))
            if main and find_unused:
                emit(f"DDP: find_unused_parameters on ({len(unused)} parameters without gradient, e.g. {unused[0]})")
        model = nn.parallel.DistributedDataParallel(model, device_ids=[device] if device.type == "cuda" else None,
                                                    find_unused_parameters=bool(find_unused))  # fmt: skip
    plain = _unwrap(model)
    evaluated = plain if averaged is None else averaged.module  # what validation sees and the folder holds
    started, last_save = time.perf_counter() - float(meta["seconds"]), time.perf_counter()
    wrote = [resume]  # whether the folder holds anything of this run's (or of the run it resumes)

    def save_state() -> None:
        meta["seconds"] = time.perf_counter() - started
        meta["loop"] = {k: getattr(config, k) for k in RESUME_SAME}
        meta["settings"] = settings
        meta["world_size"] = world
        wrote[0] = True
        if main:
            state = plain.state_dict()
            if averaged is not None:
                state.update({AVERAGED_PREFIX + k: v for k, v in averaged.state_dict().items()})
            save_train_state(out_dir / STATE_NAME, state, optimizer.state_dict(), meta)

    def write_model_folder(**training: Any) -> None:
        cfg = task.model_config()
        done = meta["epoch"] + meta["step_in_epoch"] / steps_per_epoch
        if done < config.epochs:  # until the run's end removes it: loading the folder says so (UNFINISHED)
            training = {UNFINISHED: {"epoch": round(done, 4), "epochs": config.epochs}, **training}
        cfg["training"] = {**cfg.get("training", {}), "loop": asdict(config), "best": meta["best"],
                           "history": meta["history"], "world_size": world, **training}  # fmt: skip
        save_model_files(out_dir, evaluated.state_dict(), cfg)
        wrote[0] = True

    forked = [device] if device.type == "cuda" else []  # the random generators a validation outside the plan restores

    def kept_note() -> str:
        return "it keeps the files written before (model folder and training state)" if wrote[0] else "nothing was written"

    def check_finite_metric(record: dict[str, Any], metric: str, epoch_done: float) -> None:
        value = record.get(metric)
        if isinstance(value, (int, float)) and not math.isfinite(value):
            raise TrainingError(f"the validation {metric} is {value:g} at epoch {epoch_done:g}: the model's outputs are "
                                f"not finite (try a lower --lr); {kept_note()}", path=out_dir)  # fmt: skip

    stop: dict[str, Any] = {}  # where save_partial_epoch stopped: the step and epoch of the folder's weights

    def save_partial_epoch(epochs_done: float) -> None:
        """Validate (rank 0; every rank gets the record) and write the model folder when ``max_steps`` ends the run
        inside an epoch that no folder holds yet, or holds only as an earlier stop inside it (or ``keep="last"``);
        the run stays resumable from its step."""
        record: dict[str, Any] = {"epoch": round(epochs_done, 4)}
        if main:
            model.eval()
            evaluated.eval()
            with torch.no_grad(), torch.random.fork_rng(devices=forked):  # an uninterrupted run does not validate here
                record.update(task.validate(evaluated))
        record = ddp.broadcast_object(record)  # so that a non-finite score stops every rank, not rank 0 alone
        check_finite_metric(record, task.metric, record["epoch"])
        if meta["best"] is None or meta.get("best_partial"):  # provisional: the end of the epoch replaces it
            # whatever its score, as it would have done unstopped (so does a later stop inside it: a resumed run
            # given more --max-steps had kept the first stop's weights)
            meta["best"] = {k: v for k, v in record.items() if isinstance(v, (int, float))}
            meta["best_partial"] = True
        if main:
            write_model_folder(stopped=record)
            stop.update(step=meta["global_step"], epoch=record["epoch"])
            emit(f"stopped by max_steps at step {meta['global_step']} (epoch {record['epoch']:.4g}): wrote the model folder")

    def stop_now() -> bool:
        return config.max_steps is not None and meta["global_step"] >= config.max_steps

    while meta["epoch"] < config.epochs and not stop_now():
        epoch = meta["epoch"]
        order = torch.randperm(n, generator=seeded_generator(config.seed, epoch))
        model.train()
        # a bar redrawn at most every 0.1 s on a terminal, every LOG_BAR_INTERVAL s into a file or pipe (one line of
        # about 100 bytes per step had gone into a `> train.log`: 68 kB for 660 steps)
        bar = tqdm(total=steps_per_epoch, initial=meta["step_in_epoch"], desc=f"epoch {epoch + 1}/{config.epochs}",
                   disable=not (main and config.progress), leave=False, dynamic_ncols=True,
                   **({} if sys.stderr.isatty() else {"mininterval": LOG_BAR_INTERVAL, "maxinterval": LOG_BAR_INTERVAL}))  # fmt: skip
        # the epoch's running sums of the logged terms: carried in the state, so that an epoch resumed mid-way is
        # logged over all its steps (it had been over those after the resume alone; under DDP the state holds
        # rank 0's sums, which every rank then starts from)
        sums: dict[str, float] = dict(meta.get("epoch_sums") or {}) if meta["step_in_epoch"] else {}
        count = int(meta.get("epoch_count") or 0) if meta["step_in_epoch"] else 0
        while meta["step_in_epoch"] < steps_per_epoch and not stop_now():
            step = meta["step_in_epoch"]
            start = (step * world + rank) * config.batch_size
            batch = to_device(
                task.batch(order[start : start + config.batch_size], seeded_generator(config.seed, epoch, step, rank)),
                device,
            )
            for group in optimizer.param_groups:
                group["lr"] = config.lr * _lr_factor(meta["global_step"], total_steps, config.warmup_steps)
            loss, parts = task.loss(model, batch)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            # the norm of the gradients every rank shares (DDP averaged them), so all ranks stop together or none; a
            # loss that is NaN with a zero gradient (a mean over no labels) trains on, as it did
            norm = float(nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip if config.grad_clip > 0 else math.inf))
            if not math.isfinite(norm):
                raise TrainingError(f"the gradient norm is {norm:g} at step {meta['global_step'] + 1} (epoch {epoch + 1}; "
                                    f"training loss {float(loss.detach()):g}): the run diverged (try a lower --lr); "
                                    f"{kept_note()}", path=out_dir)  # fmt: skip
            optimizer.step()
            if averaged is not None:
                averaged.update_parameters(plain)
            meta["step_in_epoch"] += 1
            meta["global_step"] += 1
            count += 1
            for key, value in {"loss": float(loss.detach()), **parts}.items():
                sums[key] = sums.get(key, 0.0) + value
            meta["epoch_sums"], meta["epoch_count"] = sums, count
            bar.set_postfix(loss=f"{float(loss.detach()):.4f}", refresh=False)  # drawn by update, at its rate
            bar.update(1)
            if time.perf_counter() - last_save > config.save_every_s:
                save_state()
                last_save = time.perf_counter()
        bar.close()
        if meta["step_in_epoch"] < steps_per_epoch:  # stopped by max_steps inside the epoch
            if config.keep == "last" or meta["best"] is None or meta.get("best_partial"):  # no folder of a whole
                # epoch of this run's yet: a stale one (another run's, in the same folder, or this run's earlier stop
                # inside the epoch) must not stay behind a message that this run wrote it
                save_partial_epoch(epoch + meta["step_in_epoch"] / steps_per_epoch)
            break
        train = {k: v / max(count, 1) for k, v in sums.items()}
        if distributed:  # mean over ranks of each logged training term
            every = ddp.gather_objects(train)
            train = {k: sum(d[k] for d in every if k in d) / sum(k in d for d in every) for k in every[0]}
        record: dict[str, Any] = {"epoch": epoch + 1, **{f"train_{k}": v for k, v in train.items()}}
        validated = (epoch + 1) % config.validate_every == 0 or epoch + 1 == config.epochs
        if validated:
            model.eval()
            evaluated.eval()
            if main:
                with torch.no_grad():
                    record.update(task.validate(evaluated))
        record = ddp.broadcast_object(record)  # every rank keeps the same history and best (and waits here)
        meta["epoch"] += 1
        meta["step_in_epoch"] = 0
        meta["epoch_sums"], meta["epoch_count"] = {}, 0
        record["seconds"] = time.perf_counter() - started
        meta["history"].append(record)
        if validated:
            check_finite_metric(record, task.metric, epoch + 1)
        improved = validated and (meta["best"] is None or bool(meta.get("best_partial"))
                                  # a best scored by another measure (a resumed state saved before the task's
                                  # score was renamed: a generator's train_subset_* had been val_*) is replaced, as
                                  # is a NaN best of a state saved before the finite check
                                  or task.metric not in meta["best"]
                                  or not math.isfinite(float(meta["best"][task.metric]))
                                  or float(record[task.metric]) < meta["best"][task.metric])  # fmt: skip
        if improved:
            meta["best"] = {k: v for k, v in record.items() if isinstance(v, (int, float))}
            meta["best_partial"] = False
        if main:
            if improved or (validated and config.keep == "last"):
                write_model_folder()
            shown = "  ".join(f"{k} {v:.4g}" for k, v in record.items() if isinstance(v, float))
            emit(f"epoch {epoch + 1}/{config.epochs}  {shown}" + ("  *best*" if improved else ""))
        save_state()
        last_save = time.perf_counter()
    if not stop_now() or meta["step_in_epoch"]:
        save_state()
    if main and (out_dir / WEIGHTS_NAME).exists():  # the folder's config gets the epochs after the one it holds
        with warnings.catch_warnings():  # this run's own folder: whether it is unfinished is settled here
            warnings.simplefilter("ignore")
            tensors, kept = load_model_files(out_dir) if finish else ({}, read_model_config(out_dir / CONFIG_NAME))
        training = kept.get("training")
        longer = isinstance(training, dict) and len(training.get("history") or []) < len(meta["history"])
        if isinstance(training, dict) and longer:
            kept = {**kept, "training": {**training, "history": meta["history"]}}
        finished = meta["epoch"] >= config.epochs and isinstance(training, dict) and UNFINISHED in training
        if finished:  # the run's last epoch done: the folder's weights are no longer an unfinished run's
            kept = {**kept, "training": {k: v for k, v in kept["training"].items() if k != UNFINISHED}}
        if finish is not None:  # still locked: the folder holds this run's files
            save_model_files(out_dir, finish(tensors, kept), kept)
        elif longer or finished:
            update_model_config(out_dir, kept)
        held = training.get("stopped") if isinstance(training, dict) else None  # weights of a stop inside an epoch
        if not stop and isinstance(held, dict) and isinstance(held.get("epoch"), (int, float)):  # an earlier call's
            stop.update(step=round(held["epoch"] * steps_per_epoch), epoch=held["epoch"])
    ddp.barrier()
    fingerprint = parameter_fingerprint(plain)
    if distributed:
        prints = ddp.gather_objects(fingerprint)
        if len(set(prints)) != 1:
            raise RuntimeError(f"DDP ranks ended with different weights (parameter SHA-256 per rank: {prints}); "
                               "does the task's loss call the model itself rather than its submodules?")  # fmt: skip
        if main:
            emit(f"DDP: {world} ranks hold identical weights (parameter SHA-256 {fingerprint[:16]})")
    plain.to("cpu")  # the averaged copy (with ema) is this function's own and goes with it
    result = {"best": meta["best"], "history": meta["history"], "steps": meta["global_step"],
              "seconds": time.perf_counter() - started, "world_size": world, "weights_sha256": fingerprint,
              "find_unused_parameters": find_unused, **({"stopped": stop} if stop else {}),
              **({UNFINISHED: {"epoch": round(meta["epoch"] + meta["step_in_epoch"] / steps_per_epoch, 4),
                               "epochs": config.epochs}} if meta["epoch"] < config.epochs else {})}  # fmt: skip
    return result
