"""``MotionDataset`` on files not named the Bandai-Namco way: its error says how to read them."""

from __future__ import annotations

import pytest

from skelanim.data import LabelError, MotionDataset


def test_a_folder_of_other_names_says_how_to_read_it(mocap_files):
    """The default label reader is Bandai-Namco's: on a CMU take its error says how to read any names (an API
    audit: the class reads any skeleton, and nothing had said so)."""
    take = mocap_files(["cmu_cgspeed_mb/01_01.bvh"])[0]
    with pytest.raises(LabelError, match=r"does not match.*label_parser=None reads files of any name") as err:
        MotionDataset(take, fps=25.0, cache=False)
    assert err.value.path == str(take)
    assert len(MotionDataset(take, fps=25.0, cache=False, label_parser=None)) == 1
