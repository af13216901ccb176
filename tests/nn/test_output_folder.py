"""The output folder of a training: locked while a run writes it, its two model files checked to be of one write,
advice that leads out of an interrupted run, and no empty folder left by a run that failed before writing."""

from __future__ import annotations

import fcntl
import json
import os
import shutil

import pytest
import torch
from torch import nn
from toy_task import ToyTask  # tests/helpers

from skelanim.errors import FormatError, SkelanimError
from skelanim.nn import train as train_module
from skelanim.nn.checkpoint import CONFIG_NAME, STATE_NAME, WEIGHTS_NAME, load_model_files
from skelanim.nn.outdir import LOCK_NAME, folder_lock
from skelanim.nn.train import TrainConfig, check_output_folders, fit

#: The entry of ``config.json`` recording the SHA-256 of ``model.safetensors`` (part of the folder's format).
DIGEST_KEY = "weights_file_sha256"

CFG = TrainConfig(epochs=2, batch_size=32, lr=1e-2, warmup_steps=5, progress=False)


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))


def _quiet(line: str) -> None:
    pass


def _files(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def test_a_second_training_into_a_folder_another_is_writing_is_refused_and_touches_nothing(tmp_path):
    """Two trainings into one ``--out`` at once had both ended with exit 0, sometimes leaving one's weights with the
    other's config; the second is now refused at once, one line naming the folder, the first's files untouched."""
    out = tmp_path / "run"
    fit(_model(), ToyTask(), out, TrainConfig(**{**CFG.__dict__, "max_steps": 20}), log=_quiet)
    assert not (out / LOCK_NAME).exists()  # released and removed at the end
    before = _files(out)
    with open(out / LOCK_NAME, "w") as held:  # the lock another process's fit holds
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        for resume in (False, True):
            with pytest.raises(SkelanimError) as caught:
                fit(_model(), ToyTask(), out, CFG, resume=resume, log=_quiet)
            assert str(caught.value) == f"{out}: another training is writing this folder: wait for it to end, or " \
                                        "choose another output folder"  # fmt: skip
            assert len(str(caught.value).splitlines()) == 1
        assert {k: v for k, v in _files(out).items() if k != LOCK_NAME} == before  # its state not removed either
    result = fit(_model(), ToyTask(), out, CFG, resume=True, log=_quiet)  # free again: the run goes on
    assert result["steps"] == 32 and not (out / LOCK_NAME).exists()


def test_the_lock_is_held_for_the_whole_run(tmp_path, monkeypatch):
    """The lock is taken before the folder is touched and held until the last write (the model folder's final
    config), so nothing another run writes can be mixed in."""
    seen: list[bool] = []
    real = train_module.save_train_state

    def probe(*args, **kwargs):
        with pytest.raises(SkelanimError, match="another training is writing"), folder_lock(tmp_path):
            pass
        seen.append(True)
        return real(*args, **kwargs)

    monkeypatch.setattr(train_module, "save_train_state", probe)
    fit(_model(), ToyTask(), tmp_path, CFG, log=_quiet)
    assert seen and not (tmp_path / LOCK_NAME).exists()
    with folder_lock(tmp_path):  # free after the run
        assert (tmp_path / LOCK_NAME).is_file()


def test_a_lock_file_left_by_a_killed_run_refuses_nothing(tmp_path):
    """A run killed outright leaves its (empty, hidden) lock file, whose lock the kernel released: the folder checks
    do not take it for model content and the next run takes it over."""
    (tmp_path / LOCK_NAME).write_bytes(b"")
    check_output_folders(tmp_path, resume=False, overwrite=False)
    fit(_model(), ToyTask(), tmp_path, CFG, log=_quiet)
    assert not (tmp_path / LOCK_NAME).exists() and (tmp_path / WEIGHTS_NAME).is_file()


class FailingTask(ToyTask):
    """Toy task whose first training step raises ``error``."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error

    def loss(self, model, batch):
        raise self.error


@pytest.mark.parametrize("error", [KeyboardInterrupt(), RuntimeError("out of memory")])
def test_a_run_ended_in_its_first_step_leaves_no_empty_folder(tmp_path, error):
    """Ctrl-C in the first epoch had left the output folder fit created, empty; now the folders it created go
    (parents too), one that existed before stays, and one with files in it stays."""
    out = tmp_path / "new" / "run"
    with pytest.raises(type(error)):
        fit(_model(), FailingTask(error), out, CFG, log=_quiet)
    assert list(tmp_path.iterdir()) == []
    existing = tmp_path / "existing"
    existing.mkdir()
    with pytest.raises(type(error)):
        fit(_model(), FailingTask(error), existing, CFG, log=_quiet)
    assert existing.is_dir() and list(existing.iterdir()) == []
    with pytest.raises(FormatError, match="no training state"):  # a refused resume into a new folder: gone too
        fit(_model(), ToyTask(), out, CFG, resume=True, log=_quiet)
    assert not (tmp_path / "new").exists()


def test_weights_of_another_write_beside_the_config_are_refused(tmp_path):
    """A kill between the renames of ``model.safetensors`` and ``config.json`` left new weights beside the previous
    config, and the loader accepted them (the shapes agree); the config now records the weights file's SHA-256."""
    fit(_model(), ToyTask(), tmp_path / "one", TrainConfig(**{**CFG.__dict__, "epochs": 1}), log=_quiet)
    fit(_model(), ToyTask(), tmp_path / "two", CFG, log=_quiet)
    mixed = tmp_path / "mixed"
    shutil.copytree(tmp_path / "two", mixed)
    shutil.copy(tmp_path / "one" / WEIGHTS_NAME, mixed / WEIGHTS_NAME)  # epoch 1's weights, epoch 2's config
    with pytest.raises(FormatError) as caught:
        load_model_files(mixed)
    assert str(caught.value) == f"{mixed}: model.safetensors's SHA-256 is not the one config.json records: the file " \
                                "was damaged or replaced, or a write was interrupted between the two files"  # fmt: skip
    for name in ("one", "two"):
        tensors, config = load_model_files(tmp_path / name)  # normal folders load (the history update kept it)
        assert len(config[DIGEST_KEY]) == 64
    config = json.loads((mixed / CONFIG_NAME).read_text())
    del config[DIGEST_KEY]  # a folder written before the digest was recorded (the shipped models) still loads
    (mixed / CONFIG_NAME).write_text(json.dumps(config))
    tensors, _ = load_model_files(mixed)
    assert set(tensors) == set(load_model_files(tmp_path / "one")[0])


def test_a_model_folder_written_before_digests_loads_without_one(tmp_path):
    """Most shipped models (and users' older folders) predate the weights digest: their config has none, and
    they load; a shipped one written since carries it, and it matches."""
    import shutil

    from skelanim.learn.common import pretrained_dir

    folder = tmp_path / "old"
    shutil.copytree(pretrained_dir("predict_mlp"), folder)
    config = json.loads((folder / CONFIG_NAME).read_text())
    assert config.pop(DIGEST_KEY, None) is not None  # shipped 2026-12-06, after digests came in
    (folder / CONFIG_NAME).write_text(json.dumps(config))
    tensors, loaded = load_model_files(folder)
    assert DIGEST_KEY not in loaded and tensors
    assert set(tensors) == set(load_model_files(pretrained_dir("predict_mlp"))[0])
    assert DIGEST_KEY not in load_model_files(pretrained_dir("predict_gcn"))[1]


def test_after_a_stop_between_the_model_and_the_state_write_each_message_names_the_way_out(tmp_path, monkeypatch):
    """Ctrl-C after the model folder was written and before the training state: ``--resume`` said "train without
    --resume first" and a plain run "--resume continues an interrupted run", so the advice went round in a circle;
    both now name ``--overwrite``, which works, and neither sends the user to the other."""

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(train_module, "save_train_state", interrupted)
    with pytest.raises(KeyboardInterrupt):
        fit(_model(), ToyTask(), tmp_path, CFG, log=_quiet)
    monkeypatch.undo()
    assert (tmp_path / CONFIG_NAME).is_file() and not (tmp_path / STATE_NAME).exists()
    with pytest.raises(FormatError) as resumed:
        fit(_model(), ToyTask(), tmp_path, CFG, resume=True, log=_quiet)
    said = str(resumed.value)
    assert said.startswith(f"{tmp_path / STATE_NAME}: no training state to resume from") and "--overwrite" in said
    assert "without --resume" not in said
    with pytest.raises(FormatError) as plain:
        check_output_folders(tmp_path, resume=False, overwrite=False)
    said = str(plain.value)
    assert "--overwrite replaces it" in said and "--resume continues" not in said and "cannot continue" in said
    check_output_folders(tmp_path, resume=False, overwrite=True)  # the way out works
    fit(_model(), ToyTask(), tmp_path, CFG, log=_quiet)
    assert (tmp_path / STATE_NAME).is_file()
    with pytest.raises(FormatError, match="--resume continues an interrupted run, --overwrite replaces it"):
        check_output_folders(tmp_path, resume=False, overwrite=False)  # with a state, --resume is the advice


def test_no_state_and_no_model_still_says_to_train_first(tmp_path):
    os.makedirs(tmp_path / "empty")
    with pytest.raises(FormatError, match=r"no training state to resume from \(train without --resume first\)"):
        fit(_model(), ToyTask(), tmp_path / "empty", CFG, resume=True, log=_quiet)


def test_ctrl_c_says_what_was_kept_and_how_to_go_on(tmp_path, capsys):
    """Ctrl-C in the second epoch: the run ends with the interrupt as before, and says that the folder holds the
    training state and ``--resume`` continues (it had ended with exit 130 and not a word); ``resume=True`` does."""

    class Interrupting(ToyTask):
        calls = 0

        def validate(self, model):
            type(self).calls += 1
            if type(self).calls == 2:
                raise KeyboardInterrupt
            return super().validate(model)

    with pytest.raises(KeyboardInterrupt):
        fit(_model(), Interrupting(), tmp_path, CFG, log=_quiet)
    err = capsys.readouterr().err
    assert f"interrupted: {tmp_path} holds the training state of the last save" in err and "--resume" in err
    assert (tmp_path / STATE_NAME).is_file()
    fit(_model(), ToyTask(), tmp_path, CFG, resume=True, log=_quiet)
    assert (tmp_path / WEIGHTS_NAME).is_file()
