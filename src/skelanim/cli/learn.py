"""``skelanim learn generate train|fit-prior|eval``, ``learn curves|ship``, ``skelanim generate`` and
``skelanim evaluate``: thin wrappers over :mod:`skelanim.learn` and :mod:`skelanim.metrics` (the shared options and
helpers are :mod:`skelanim.cli.learn_common`'s)."""

from __future__ import annotations

from pathlib import Path

import typer

from skelanim.cli import app
from skelanim.cli.learn_common import (
    DATA_HELP,
    FPS_OPTION,
    KEEP_HELP,
    LABELS_OPTION,
    MAX_SEED,
    SPLIT_HELP,
    apply_threads,
    batch_size_option,
    check_content,
    check_init,
    check_init_data,
    check_keep,
    check_lr,
    check_model_folder,
    check_plot,
    check_split,
    check_style,
    command_line,
    device_option,
    echo_json,
    fid_reference,
    generate_app,
    generation_plan,
    generator_options,
    learn_app,
    load_dataset,
    note_trained_on,
    one_of,
    overwrite_option,
    progress_option,
    remove_earlier_model_files,
    report_training,
    resume_option,
    run_device_option,
    split_parts,
    threads_option,
    train_config,
)
from skelanim.io.atomic import removed_if_empty


# ---------------------------------------------------------------------------------------------- recognize
@generate_app.command("train")
def generate_train(
    data: list[str] = typer.Option(..., "--data", help=DATA_HELP),
    labels: str = LABELS_OPTION,
    out: Path = typer.Option(..., "--out", "-o", help="Model folder to write (the VAE stage goes to OUT/vae)."),
    split: str = typer.Option("file", "--split", help=SPLIT_HELP, callback=check_split),
    recognizer: Path | None = typer.Option(
        None, "--recognizer", help="Recogniser for the validation FID (default: the shipped one)."
    ),
    vae_epochs: int = typer.Option(14, "--vae-epochs", min=1),
    vae_validate_every: int = typer.Option(
        1, "--vae-validate-every", min=1, help="VAE stage: validate (the sample FID, ~4 s) every N epochs and after "
        "the last; the GAN stage validates every epoch.",
    ),
    gan_epochs: int = typer.Option(4, "--gan-epochs", min=0),
    window: int = typer.Option(64, "--window", min=8, help="Frames per window (a multiple of 8)."),
    stride: int = typer.Option(8, "--stride", min=1),
    batch_size: int = batch_size_option(64),
    lr: float = typer.Option(1e-3, "--lr", callback=check_lr),
    gan_lr: float = typer.Option(2e-4, "--gan-lr", callback=check_lr),
    beta: float = typer.Option(2e-3, "--beta", min=0.0, help="Weight of the KL term (above the free bits)."),
    free_bits: float = typer.Option(0.25, "--free-bits", min=0.0, help="KL floor per latent dimension (nats)."),
    vel: float = typer.Option(2.0, "--vel", min=0.0, help="Weight of the L1 of FK position changes (limb motion)."),
    z_every: bool | None = typer.Option(
        None, "--z-every/--z-first", help="Convolutional decoder: feed z to every layer (default) or the first only."
    ),
    decoder: str = typer.Option("conv", "--decoder", help="VAE decoder: 'conv' or 'transformer' (ACTOR-style)."),
    padding: str | None = typer.Option(
        None, "--padding", help="Convolutional decoder's padding: 'zeros' (default) or 'replicate'."
    ),
    adversarial: float = typer.Option(0.02, "--adversarial", min=0.0, help="GAN stage: weight of the adversarial loss."),
    speed: float = typer.Option(
        0.0, "--speed-match", min=0.0, help="GAN stage: weight of matching the real per-joint limb speed."
    ),
    speed_frames: float = typer.Option(
        0.0, "--speed-match-frames", min=0.0, help="GAN stage: weight of matching it frame by frame (no fast ends)."
    ),
    recognition: float = typer.Option(
        0.0, "--recognition", min=0.0, help="GAN stage: weight of the frozen recogniser's cross-entropy on samples."
    ),
    contact_match: float = typer.Option(
        0.0, "--contact-match", min=0.0, help="GAN stage: weight of matching the real foot-contact share frame by frame."
    ),
    sample_skate: float = typer.Option(
        0.0, "--sample-skate", min=0.0, help="GAN stage: weight of the samples' own foot skating (hover-prone alone)."
    ),
    keep: str = typer.Option("best", "--keep", help=KEEP_HELP, callback=check_keep),
    init: Path | None = typer.Option(
        None, "--init", help="Start the GAN stage from this generator folder (skips the VAE stage)."
    ),
    fps: float = FPS_OPTION,
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED),
    max_steps: int | None = typer.Option(None, "--max-steps", min=1),
    threads: int | None = threads_option(),
    device: str = device_option(),
    resume: bool = resume_option(),
    overwrite: bool = overwrite_option(),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
) -> None:
    """Train the conditional VAE, then refine it with the temporal GAN."""
    from skelanim.learn.generate_train import train_generator
    from skelanim.learn.recognize import Recognizer
    from skelanim.nn import distributed
    from skelanim.nn.checkpoint import CONFIG_NAME, STATE_NAME, load_train_state
    from skelanim.nn.train import check_output_folders

    options = generator_options(window, decoder, padding, z_every)  # before the data, as the other options
    start = check_init(init, gan_epochs, window, fps, options)
    if resume:  # refused as fit refuses the other trainings (train_generator starts a stage without a state afresh)
        from skelanim.learn.generate import FORMAT
        from skelanim.nn.outdir import check_same_kind

        check_same_kind(out, FORMAT, resume=True)  # before a VAE stage is trained into another kind's folder
        stages = (out, out / "vae")
        stopped = [f for f in stages if (f / CONFIG_NAME).is_file() and not (f / STATE_NAME).is_file()]
        if stopped or not any((f / STATE_NAME).is_file() for f in stages):
            # nn.checkpoint's own refusal of a missing state: a model alone is a run stopped before it saved one
            # (--overwrite trains anew), no model either is nothing to resume (train without --resume first)
            load_train_state((stopped or [out])[0] / STATE_NAME)
    check_output_folders(out, out / "vae", resume=resume, overwrite=overwrite)
    with removed_if_empty(out, out / "vae"):  # a run that fails before writing anything leaves no empty folder
        rig = start.rig if start is not None else None  # the --init generator's: it reads joints as its own
        parts = split_parts(load_dataset(data, fps, threads, progress, labels=labels, need=("content",), rig=rig,
                                         owner="the generator", hint=" (--init)"), split, seed)  # fmt: skip
        if start is not None and init is not None:
            check_init_data(start, init, parts["train"])
        rec, reference = fid_reference(Recognizer.load(recognizer), recognizer is None, recognition, parts["train"],
                                       window, stride)  # fmt: skip
        result = train_generator(parts["train"], out, length=window, stride=stride, embed=rec.embed_arrays if reference is not None else None, reference=reference,
                                 vae_loop=train_config(vae_epochs, batch_size, lr, seed, max_steps, progress, 100, validate_every=vae_validate_every, device=device),
                                 gan_loop=train_config(gan_epochs, batch_size, gan_lr, seed, max_steps, progress, 20, keep=keep, device=device) if gan_epochs else None,
                                 weights={"beta": beta, "free_bits": free_bits, "w_vel": vel, "adversarial": adversarial,
                                          "w_speed": speed, "w_speed_frames": speed_frames, "w_contact": contact_match, "w_fake_skate": sample_skate,
                                          "recognition": recognition}, options=options,
                                 recognizer=rec, init=init, resume=resume, command=command_line(), labels=labels,
                                 val_ds=parts["val"])  # fmt: skip
    last = result["gan"] or result["vae"]
    if gan_epochs and not result["vae_finished"] and distributed.is_main():  # once under torchrun
        typer.echo("note: the VAE stage stopped before its last epoch (--max-steps); --resume finishes it, then "
                   "runs the GAN stage", err=True)  # fmt: skip
    report_training(
        out if result["gan"] or not gan_epochs else out / "vae",
        {**last, "parameters": result["parameters"]},
        next((k for k in ("val_fid", "train_subset_fid", "val_rec") if last.get("best", {}).get(k) is not None),
             "train_subset_rec"),
    )


@generate_app.command("fit-prior")
def generate_fit_prior(
    model: Path | None = typer.Argument(
        None, help="Generator folder (e.g. one trained before the fitted prior); or give it with -m/--model."
    ),
    model_option: Path | None = typer.Option(None, "--model", "-m", help="MODEL, named as the other commands name it."),
    data: list[str] = typer.Option(..., "--data", help=DATA_HELP),
    labels: str = LABELS_OPTION,
    out: Path = typer.Option(..., "--out", "-o", help="Folder to write (may be MODEL itself)."),
    split: str = typer.Option("file", "--split", help=SPLIT_HELP + " The train part is used.", callback=check_split),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED, help="Seed of the split (the one given to train)."),
    threads: int | None = threads_option(),
    overwrite: bool = overwrite_option(),
    progress: bool = progress_option(),
) -> None:
    """Fit each content's latent prior to the aggregate posterior of the training windows (what train does
    after each stage) and write the model with it."""
    from skelanim.learn.generate import Generator
    from skelanim.learn.generate_train import GenerateTask, refit_latent

    model = one_of(model, model_option, "MODEL", "-m/--model", "the generator folder")
    into_model = out.resolve() == model.resolve()
    if not into_model:  # another model there had been replaced without a word
        check_model_folder(out, overwrite, "--out")
    gen = Generator.load(model)
    # another skeleton or unit had been fitted, or a traceback
    loaded = load_dataset(data, gen.fps, threads, progress, labels=labels, need=("content",), rig=gen.rig,
                          owner="the generator")
    parts = split_parts(loaded, split, seed)
    refit_latent(model, GenerateTask(gen, parts["train"], stride=8), out)
    if not into_model:
        remove_earlier_model_files(out)
    typer.echo(f"wrote {out} (latent prior of {len(gen.contents.names)} contents fitted)")


@generate_app.command("eval")
def generate_eval(
    data: list[str] = typer.Option(..., "--data", help=DATA_HELP),
    labels: str = LABELS_OPTION,
    model: Path | None = typer.Option(None, "--model", "-m", help="Generator folder (default: the shipped one)."),
    recognizer: Path | None = typer.Option(None, "--recognizer", help="Recogniser folder (default: the shipped one)."),
    split: str = typer.Option(
        "file", "--split", help=SPLIT_HELP + " Train part = real set A, test part = B.", callback=check_split
    ),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED, help="Seed of the samples and of the split (the one given to train)."),
    threads: int | None = threads_option(),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    device: str = run_device_option(),
) -> None:
    """FID (generated vs held-out real, against real vs real), recognition, diversity, foot skating, pose outliers."""
    from skelanim.learn.generate import Generator
    from skelanim.learn.generate_eval import evaluate_generation
    from skelanim.learn.recognize import Recognizer

    if split.strip().lower() == "none":  # B would be A: fid_real 0 and every pose an outlier, whatever the model
        raise typer.BadParameter("generation is scored against real set A (train part) and real set B (test part): "
                                 "'none' makes them the same files; use 'file' (the default) or a style split",
                                 param_hint="--split")  # fmt: skip
    gen, rec = Generator.load(model).to(device), Recognizer.load(recognizer).to(device)
    if not rec.rig.skeleton.same_topology(gen.rig.skeleton):
        raise typer.BadParameter(f"the {'shipped ' if recognizer is None else ''}recogniser is for another skeleton than the "
                                 "generator's: name one trained on its data (skelanim learn recognize train)",
                                 param_hint="--recognizer")  # fmt: skip
    loaded = load_dataset(data, gen.fps, threads, not as_json, labels=labels, need=("content",), rig=gen.rig,
                          owner="the generator")
    parts = split_parts(loaded, split, seed)
    if parts["test"] is None:
        raise typer.BadParameter("the split leaves no test files", param_hint="--split")
    note_trained_on({"model": model}, parts["test"], {"model": "generate"})
    res = evaluate_generation(gen, rec.embed_arrays, parts["train"], parts["test"], seed=seed)
    # the same keys both ways (--json had left out the checks the README quotes from it: limb speed, contact share)
    keys = ("fid", "fid_real", "recognised", "diversity", "foot_skating", "foot_skating_real", "pose_outliers",
            "diversity_real", "limb_speed", "limb_speed_real", "contact_share", "contact_share_real", "samples",
            "real_windows")  # fmt: skip
    if as_json:
        echo_json({k: res[k] for k in keys})
        return
    for k in keys:
        typer.echo(f"{k:>18}: {res[k]:.4g}" if isinstance(res[k], float) else f"{k:>18}: {res[k]}")


@learn_app.command("curves")
def curves(
    folder: Path = typer.Argument(..., help="A model folder written by any training command (or a shipped one)."),
    out: Path = typer.Option(..., "-o", "--out", help="Output image; the suffix picks the format (.png, .pdf, .svg)."),
    member: int = typer.Option(0, "--member", min=0, help="For an ensemble (combine): which member's run."),
) -> None:
    """Plot a training run's per-epoch curves (training terms, validation scores; best epoch marked)."""
    from skelanim.viz.charts import plot_training_history, training_run
    from skelanim.viz.plots import save_figure

    check_plot(out)
    run = training_run(folder, member=member)  # config.json read once: the history and what --keep kept
    history, best = run.history, run.best_epoch
    save_figure(plot_training_history(history, best_epoch=best, title=str(folder), stages=run.stages), out)
    last = history[-1].get("epoch") if run.keeps_last else None
    kept = "" if best is None else f", best {best:g}" if last is None else f", best score at {best:g}; the weights are epoch {last}'s (--keep last)"
    ends = [first - 1 for first, _ in run.stages[1:]] + [int(history[-1]["epoch"])] if run.stages else []
    staged = "".join(f"{', ' if i else ': '}{name} {first}-{end}"
                     for i, ((first, name), end) in enumerate(zip(run.stages, ends, strict=True)))
    planned = f" of {run.planned_epochs} (an unfinished run: --resume finishes it)" if run.planned_epochs else ""
    typer.echo(f"wrote {out} ({len(history)} epochs{planned}{staged}{kept})")


@learn_app.command("ship")
def ship(
    src: Path = typer.Argument(..., help="A trained model folder."),
    dest: Path | None = typer.Argument(
        None, help="Folder to write (e.g. src/skelanim/learn/pretrained/NAME in a checkout, to ship it with the "
        "package); or give it with -o/--out."
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="DEST, named as the other commands name it."),
    drop: list[str] | None = typer.Option(None, "--drop", help="Leave out tensors with this name prefix (repeat)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace the model DEST holds (without it, refused)."),
) -> None:
    """Copy a model folder for shipping: float16 weights, statistics in float32, optional parts dropped."""
    from skelanim.cli.files import check_not_an_input
    from skelanim.learn.common import export_for_shipping

    hint = "DEST" if dest is not None else "--out"
    dest = one_of(dest, out, "DEST", "-o/--out", "the folder to write")
    check_not_an_input(dest, src)  # the trained weights would become their float16 copy
    check_model_folder(dest, overwrite, hint)
    size = export_for_shipping(src, dest, drop=drop or ())
    remove_earlier_model_files(dest)
    typer.echo(f"wrote {dest} ({size / 1e6:.2f} MB of weights)")


# ---------------------------------------------------------------------------------------------- top level
def keep_earlier_files(out: Path, names: list[str], overwrite: bool) -> None:
    """Refuse (before any work) to replace files of ``names`` that ``out`` holds, unless ``overwrite``: a second
    ``generate`` with another seed into the same folder had replaced the first set without a word."""
    earlier = [name for name in names if (out / name).exists()]
    if earlier and not overwrite:
        more = f" and {len(earlier) - 1} more" if len(earlier) > 1 else ""
        raise typer.BadParameter(f"{out} already holds {earlier[0]}{more} (an earlier run's?); --overwrite replaces "
                                 "them, or write to another folder", param_hint="-o/--out")  # fmt: skip


@app.command("generate")
def generate_cmd(
    content: str | None = typer.Option(
        None, "--content", help="Content class (walk, run, bow, ...), or a plan of contents and seconds played in "
        "turn, e.g. walk:4,run:3,walk:2.", callback=check_content,
    ),
    style: str | None = typer.Option(
        None, "--style", help="Style class (happy, angry, ...; default: normal, which a generator "
        "without that style asks you to name; left out for a generator trained without styles).", callback=check_style
    ),
    n: int = typer.Option(4, "-n", min=1, max=1_000_000, help="Motions to write."),
    out: Path = typer.Option(..., "-o", "--out", help="Folder for the BVH files."),
    model: Path | None = typer.Option(None, "--model", "-m", help="Generator folder (default: the shipped one)."),
    interpolate: list[Path] | None = typer.Option(
        None, "--interpolate", help="Two motion files: interpolate between them (give twice)."
    ),
    seed: int | None = typer.Option(None, "--seed", min=0, max=MAX_SEED, help="Seed of the latent samples (default 0)."),
    temperature: float | None = typer.Option(None, "--temperature", min=0.0, max=100.0,
                                             help="Spread of the latent samples (default 1: the prior's)."),
    seconds: float | None = typer.Option(
        None, "--seconds", help="Length of each motion (default: the model's window, 2.56 s); longer "
        "motion chains windows by latent optimisation (skelanim.learn.generate_long).",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace BVH files of these names that OUT holds "
                                   "(an earlier run's; without it they are kept and nothing is generated)."),
    ground: bool = typer.Option(True, "--ground/--no-ground", help="Put each motion on the floor of the training "
                                "captures, moved along the up axis as a whole (skelanim.learn.generate."
                                "settle_on_floor); --no-ground: as decoded."),
    device: str = run_device_option(),
    threads: int | None = threads_option(),
    progress: bool = progress_option(),
) -> None:
    """Write N generated BVH files of a content and style (or N steps between two clips with --interpolate)."""
    import torch

    import skelanim
    from skelanim.cli.files import check_not_an_input
    from skelanim.data.labels import LabelError, known_labels, label_parser
    from skelanim.io.atomic import atomic_paths
    from skelanim.learn.common import skeleton_mismatch
    from skelanim.learn.generate import Generator, settle_on_floor
    from skelanim.learn.generate_long import sample_plan

    apply_threads(threads)
    gen = Generator.load(model).to(device)
    styleless = gen.styles.names == ("",)  # trained on names without a style (a content-only --labels pattern)
    if styleless and style is not None:
        raise typer.BadParameter("the generator was trained without styles: leave --style out", param_hint="--style")
    for given, option in ((seconds, "--seconds"), (seed, "--seed"), (temperature, "--temperature")):
        if interpolate and given is not None:  # the path between two clips is drawn from neither
            raise typer.BadParameter(f"{option} applies to sampling, not to --interpolate", param_hint=option)
    seed = 0 if seed is None else seed
    temperature = 1.0 if temperature is None else temperature
    if interpolate:
        if len(interpolate) != 2:
            raise typer.BadParameter("give --interpolate exactly twice (two files)", param_hint="--interpolate")
        motions = [skelanim.load(p) for p in interpolate]
        parse = label_parser(gen.labels) if gen.labels is not None else None  # the scheme it was trained with
        labels = []
        for p, motion in zip(interpolate, motions):
            try:
                lab = parse(p) if parse is not None else known_labels(p)
            except LabelError:  # a name the scheme does not match: the known ones, else --content and --style
                lab = known_labels(p)
            if not gen.rig.skeleton.same_rig(motion.skeleton):
                raise skelanim.errors.SkeletonError(skeleton_mismatch("generator", gen.rig.skeleton, motion.skeleton), path=p)
            # the command line wins
            chosen = (lab.get("content") if content is None else content,
                      "" if styleless else lab.get("style") if style is None else style)
            if None in chosen:
                missing = " and ".join(k for k, v in zip(("--content", "--style"), chosen, strict=True) if v is None)
                raise LabelError("the file name carries no content and style labels (dataset-N_CONTENT_STYLE_TAKE); "
                                 f"give {missing}", path=p)  # fmt: skip
            for value, from_cli, vocabulary, flag in ((chosen[0], content, gen.contents.names, "--content"),
                                                      (chosen[1], style, gen.styles.names, "--style")):  # fmt: skip
                if from_cli is None and value not in vocabulary:  # read by another scheme than the generator's
                    raise LabelError(f"{flag[2:]} {value!r} read from the file name is not one of the generator's "
                                     f"({', '.join(vocabulary[:6])}{', ...' if len(vocabulary) > 6 else ''}); give "
                                     f"{flag}", path=p)  # fmt: skip
            labels.append((str(chosen[0]), str(chosen[1])))
        names = [f"interp_{i:02d}.bvh" for i in range(n)]
        for name in names:  # an input among the outputs would be replaced by a step between the two
            check_not_an_input(out / name, *interpolate)
        keep_earlier_files(out, names, overwrite)
        results = gen.interpolate(motions[0], motions[1], labels[0], labels[1], n)
    else:
        if content is None:
            raise typer.BadParameter("--content is required (or use --interpolate)", param_hint="--content")
        if style is None and not styleless and "normal" not in gen.styles.names:  # "normal" is Bandai's, not every model's
            raise typer.BadParameter(f"this generator has no style 'normal', the default; give one of "
                                     f"{', '.join(gen.styles.names)}", param_hint="--style")  # fmt: skip
        style = "" if styleless else "normal" if style is None else style
        plan = generation_plan(content, seconds, gen.fps, gen.length)
        names = [f"{'-'.join(c for c, _ in plan)}_{style or 'nostyle'}_{i:02d}.bvh" for i in range(n)]
        keep_earlier_files(out, names, overwrite)
        x = sample_plan(
            gen, [(c, style, frames) for c, frames in plan], n=n, generator=torch.Generator().manual_seed(seed),
            temperature=temperature, progress=progress,
        )
        results = gen.to_motions(x)
    if ground:
        results = [settle_on_floor(motion, gen.rig)[0] for motion in results]
    with removed_if_empty(out), atomic_paths([out / name for name in names]) as temporary:  # all the files or none
        for motion, path in zip(results, temporary, strict=True):
            skelanim.save(motion, path)
    typer.echo(f"wrote {len(results)} BVH files ({results[0].num_frames} frames at {gen.fps:g} fps) to {out}")
