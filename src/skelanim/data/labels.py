"""Labels parsed from file names, and the vocabularies that turn them into class indices.

The Bandai-Namco research datasets name every file ``dataset-{n}_{content}_{style}_{take}.bvh``
(``dataset-1_walk-back_not-confident_001.bvh``): contents and styles use ``-`` inside a word and ``_``
between fields, so splitting the stem on ``_`` gives the four fields. Other naming schemes plug in as a
regular expression with named groups (:func:`parse_labels` ``pattern=``).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from skelanim.errors import SkelanimError

__all__ = ["BANDAI_PATTERN", "GENERATED_PATTERN", "LABEL_PRESETS", "LabelError", "Vocabulary", "known_labels",
           "label_parser", "label_spaces", "parse_labels"]

#: ``dataset-{n}_{content}_{style}_{take}`` (the Bandai-Namco research datasets 1 and 2).
BANDAI_PATTERN = r"^dataset-(?P<dataset>\d+)_(?P<content>[^_]+)_(?P<style>[^_]+)_(?P<take>\d+)$"
#: ``{content}_{style}_{take}``, the names ``skelanim generate`` writes (``walk_happy_00.bvh``); a content may hold
#: ``_`` (``side_step_angry_00``, DeepMimic's ``dance_a_nostyle_00``: the style is the last part before the take).
GENERATED_PATTERN = r"^(?P<content>.+)_(?P<style>[^_]+)_(?P<take>\d+)$"

#: Named label schemes (``--labels NAME``).
LABEL_PRESETS = {"bandai": BANDAI_PATTERN, "generated": GENERATED_PATTERN}


class LabelError(SkelanimError):
    """A file name does not carry the expected labels, or a label is not in a model's vocabulary."""


def parse_labels(path: str | os.PathLike, pattern: str = BANDAI_PATTERN) -> dict[str, str]:
    """Labels of a motion file from its name.

    Parameters
    ----------
    path : path
        The file (only its stem is read).
    pattern : str
        Regular expression with named groups, matched against the stem; default :data:`BANDAI_PATTERN`.

    Returns
    -------
    dict of str to str
        The named groups, e.g. ``{"dataset": "1", "content": "walk", "style": "happy", "take": "001"}``.

    Raises
    ------
    LabelError
        When the stem does not match, naming the file and the expected form.
    """
    stem = Path(path).stem
    match = re.match(pattern, stem)
    if match is None:
        raise LabelError(f"file name {stem!r} does not match the label pattern {pattern}", path=path)
    return {k: v for k, v in match.groupdict().items() if v is not None}


def label_parser(spec: str) -> Callable[[str | os.PathLike], dict[str, str]] | None:
    """The file-name label reader that ``spec`` names, for :class:`~skelanim.data.MotionDataset`'s ``label_parser``.

    Parameters
    ----------
    spec : str
        ``"bandai"`` or ``"generated"`` (:data:`LABEL_PRESETS`), ``"none"`` (unlabelled motion: files of any name,
        for prediction), or a regular expression with named groups matched against each file name's stem from
        its start, e.g. ``"(?P<content>\\D+)\\d*_subject(?P<style>\\d+)$"`` for LaFAN1's ``walk1_subject5``
        (groups ``content`` and ``style`` are the labels the models use; others are kept).

    Returns
    -------
    callable or None
        ``parse(path) -> dict`` (raising :class:`LabelError` for a name that does not match), ``None`` for
        ``"none"``.

    Raises
    ------
    ValueError
        A pattern that does not compile or has no named group.
    """
    if spec == "none":
        return None
    pattern = LABEL_PRESETS.get(spec, spec)
    try:
        groups = re.compile(pattern).groupindex
    except re.error as err:
        raise ValueError(f"{spec!r} is not {', '.join(LABEL_PRESETS)}, none or a regular expression: {err}") from None
    if not groups:
        raise ValueError(f"the label pattern {spec!r} has no named group such as (?P<content>...)")
    return functools.partial(parse_labels, pattern=pattern)


def known_labels(path: str | os.PathLike, patterns: Sequence[str] = (BANDAI_PATTERN, GENERATED_PATTERN)) -> dict[str, str]:
    """The labels of the first of ``patterns`` that ``path``'s name matches (the datasets' names, then the ones
    ``skelanim generate`` writes), or ``{}`` when none does."""
    for pattern in patterns:
        try:
            return parse_labels(path, pattern)
        except LabelError:
            continue
    return {}


@dataclass(frozen=True)
class Vocabulary:
    """A sorted list of class names and their indices.

    Attributes
    ----------
    kind : str
        What the names are (``"content"``, ``"style"``), for error messages.
    names : tuple of str
        Sorted class names; index ``i`` is ``names[i]``.
    """

    kind: str
    names: tuple[str, ...]

    @classmethod
    def build(cls, kind: str, values: Iterable[str]) -> Vocabulary:
        """The vocabulary of the distinct ``values`` (sorted)."""
        return cls(kind, tuple(sorted(set(values))))

    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def index(self, name: str) -> int:
        """Class index of ``name``; raises :class:`LabelError` listing the known names."""
        try:
            return self.names.index(name)
        except ValueError:
            raise LabelError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names)}") from None

    def indices(self, names: Sequence[str]) -> list[int]:
        """Class indices of ``names``."""
        return [self.index(n) for n in names]


def label_spaces(labels: Sequence[dict[str, str]], *, key: str = "content",
                 by: str = "dataset") -> dict[str, tuple[str, ...]] | None:  # fmt: skip
    """Each source dataset's own ``key`` vocabulary, for data pooled from datasets that name their classes
    differently (Bandai-Namco dataset 1's ``bye`` and ``byebye`` are dataset 2's ``wave-right-hand`` and
    ``wave-both-hands``).

    Parameters
    ----------
    labels : sequence of dict
        The labels of every file of the pooled data (:func:`parse_labels` output).
    key, by : str
        The class label and the label that names the source dataset.

    Returns
    -------
    dict of str to tuple of str, or None
        ``{dataset: sorted classes}``; ``None`` when there is only one dataset, or a file does not name its
        dataset or class (then there is nothing to tell apart, or it cannot be done for every file).
    """
    spaces: dict[str, set[str]] = {}
    for item in labels:
        if not item.get(by) or not item.get(key):
            return None
        spaces.setdefault(item[by], set()).add(item[key])
    if len(spaces) < 2:
        return None
    return {name: tuple(sorted(spaces[name])) for name in sorted(spaces)}
