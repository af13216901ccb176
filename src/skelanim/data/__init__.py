"""Datasets over folders of motion files: labels, clips, the learning rig, features, windows, splits, caching.

========================  ====================================================================
:mod:`.labels`            :func:`parse_labels` (file names), :class:`Vocabulary`
:mod:`.cache`             :func:`cache_dir` (user cache or temp dir, never the data folder)
:mod:`.clips`             :class:`Clip`, :func:`load_clip` (resampled, checked, cached)
:mod:`.rig`               :class:`Rig`: modelled joints, up axis, floor, height; back to a Motion
:mod:`.features`          heading-frame and reference-frame features and their inverses
:mod:`.dataset`           :class:`MotionDataset`: windows, splits by file and by style, stats
:mod:`.windows`           :class:`WindowDataset`: its windows as a torch ``Dataset`` (a ``DataLoader``'s)
:mod:`.samples`           bundled sample clips
========================  ====================================================================
"""

from typing import TYPE_CHECKING

from skelanim.data.cache import cache_dir
from skelanim.data.clips import Clip, clip_from_motion, load_clip
from skelanim.data.dataset import BANDAI_TEST_STYLES, BANDAI_VAL_STYLES, MotionDataset, expand_paths, feature_stats
from skelanim.data.labels import LabelError, Vocabulary, parse_labels
from skelanim.data.rig import Rig, body_root
from skelanim.data.windows import WindowDataset

__all__ = [
    "BANDAI_TEST_STYLES", "BANDAI_VAL_STYLES", "Clip", "LabelError", "MotionDataset", "Rig", "Vocabulary", "WindowDataset",
    "body_root",
    "cache_dir", "clip_from_motion", "expand_paths", "feature_stats", "load_clip", "parse_labels",
]  # fmt: skip

if not TYPE_CHECKING:  # modules imported on first use (skelanim.data.<module> without an import)
    from skelanim._modules import submodule_loader

    __getattr__ = submodule_loader(__name__)
