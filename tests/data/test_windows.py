"""WindowDataset: a MotionDataset's windows as a torch Dataset, checked against MotionDataset.gather itself."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader

from skelanim.data import MotionDataset, WindowDataset


def test_batches_of_a_data_loader_are_gather_s_windows(few_dataset) -> None:
    """In order, a DataLoader's batches are ``gather`` of the same windows; item labels are each clip's class index;
    a short clip gets one window, its last frame held (as ``windows``/``gather`` do)."""
    windows = WindowDataset(few_dataset, 32, 16, labels=("content", "style"))
    starts = few_dataset.windows(32, 16)
    assert torch.equal(windows.starts, starts) and len(windows) == len(starts)
    batch = next(iter(DataLoader(windows, batch_size=5)))
    want = few_dataset.gather(starts[:5], 32)
    for key, value in want.items():
        assert torch.equal(batch[key], value), key
    contents = few_dataset.labels("content")
    names = [contents[int(c)] for c in starts[:5, 0]]
    assert [windows.vocabularies["content"].names[int(i)] for i in batch["content"]] == names
    assert torch.equal(batch["clip"], starts[:5, 0]) and torch.equal(batch["start"], starts[:5, 1])
    short = [i for i, c in enumerate(few_dataset.clips) if c.num_frames < 32]
    assert short and int((starts[:, 0] == short[0]).sum()) == 1  # the 20-frame dash
    assert torch.equal(windows[-1]["rot"], few_dataset.gather(starts[-1:], 32)["rot"][0])
    with pytest.raises(IndexError):
        windows[len(windows)]


def test_shuffled_batches_are_the_same_with_worker_processes(few_dataset) -> None:
    """A seeded shuffle gives the same batches read in the main process and in two workers (the dataset pickles)."""
    windows = WindowDataset(few_dataset, 24, keys=("pelvis", "contacts"))

    def batches(workers: int) -> list[torch.Tensor]:
        loader = DataLoader(windows, batch_size=8, shuffle=True, num_workers=workers,
                            generator=torch.Generator().manual_seed(3))  # fmt: skip
        return [b["pelvis"] for b in loader]

    here, there = batches(0), batches(2)
    assert len(here) == len(there) and all(torch.equal(a, b) for a, b in zip(here, there, strict=True))


def test_a_motion_dataset_given_to_a_data_loader_says_what_to_use(few_dataset) -> None:
    """It has a length (its clips) but no samples: DataLoader took it and failed at the first batch with 'not
    subscriptable'; now the error names WindowDataset."""
    with pytest.raises(TypeError, match="WindowDataset"):
        next(iter(DataLoader(few_dataset, batch_size=2)))
    assert isinstance(few_dataset, MotionDataset)
