"""Windows of a :class:`~skelanim.data.dataset.MotionDataset` as a ``torch.utils.data.Dataset``, for a training script's
``DataLoader`` (shuffling, batching, worker processes):

>>> ds = MotionDataset(["../shared/data/mocap/bandai_namco_1"], fps=25)   # doctest: +SKIP
>>> windows = WindowDataset(ds, length=48, stride=8, labels=("content",))  # doctest: +SKIP
>>> batch = next(iter(torch.utils.data.DataLoader(windows, batch_size=32, shuffle=True)))  # doctest: +SKIP
>>> batch["rot"].shape, batch["content"].shape                               # doctest: +SKIP
(torch.Size([32, 48, 21, 3, 3]), torch.Size([32]))

Item ``i`` is window ``i`` of :meth:`MotionDataset.windows` read by :meth:`MotionDataset.gather` (the same frames, the
same padding of a short clip); the default collate stacks items into the ``(B, T, ...)`` batches ``gather`` returns.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from skelanim.data.dataset import MotionDataset
from skelanim.data.labels import Vocabulary

__all__ = ["WindowDataset"]


class WindowDataset(torch.utils.data.Dataset):
    """The windows of a motion dataset, one item each.

    Parameters
    ----------
    source : MotionDataset
        The clips (a split's part, e.g. ``parts["train"]``).
    length : int
        Frames per window ``T``.
    stride : int, optional
        Frames between window starts (default ``length``: windows side by side).
    keys : sequence of str
        Arrays of :meth:`MotionDataset.frames` each item holds, ``(T, ...)``.
    labels : sequence of str
        Label keys (``"content"``, ``"style"``) each item holds as a class index (a 0-d long tensor) in
        :attr:`vocabularies`.
    vocabularies : dict of str to Vocabulary, optional
        The class indices to use (a model's, or the training part's for its validation part); default each
        label's over ``source``'s clips.
    pad_short : bool
        Give a clip shorter than ``T`` one window, its last frame held (:meth:`MotionDataset.windows`).

    Attributes
    ----------
    starts : Tensor
        ``(W, 2)`` long: each item's clip index and start frame (also in each item, ``clip`` and ``start``).
    vocabularies : dict of str to Vocabulary
        The class names behind each label's indices.
    """

    def __init__(self, source: MotionDataset, length: int, stride: int | None = None, *,
                 keys: Sequence[str] = ("rot", "pelvis", "positions", "yaw", "contacts"), labels: Sequence[str] = (),
                 vocabularies: dict[str, Vocabulary] | None = None, pad_short: bool = True) -> None:  # fmt: skip
        self.source, self.length, self.keys = source, length, tuple(keys)
        self.starts = source.windows(length, length if stride is None else stride, pad_short=pad_short)
        given = vocabularies or {}
        self.vocabularies = {key: given[key] if key in given else source.vocabulary(key) for key in labels}
        self._classes = {key: torch.tensor([vocab.index(name) for name in source.labels(key)], dtype=torch.long)
                         for key, vocab in self.vocabularies.items()}  # fmt: skip

    def __len__(self) -> int:
        return int(self.starts.shape[0])

    def __getitem__(self, index: int) -> dict[str, Tensor]:
        """Window ``index``: each of :attr:`keys` ``(T, ...)``, each label's class index, ``clip`` and ``start``."""
        if not -len(self) <= index < len(self):
            raise IndexError(f"window {index} of {len(self)}")
        index %= len(self)
        window = self.starts[index : index + 1]
        item = {key: value[0] for key, value in self.source.gather(window, self.length, self.keys).items()}
        clip = int(window[0, 0])
        item.update({key: classes[clip] for key, classes in self._classes.items()})
        item["clip"], item["start"] = window[0, 0], window[0, 1]
        return item
