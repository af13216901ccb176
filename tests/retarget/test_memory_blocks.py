"""A whole clip is retargeted in blocks of frames (:mod:`skelanim.retarget.blocks`): its standing level first, then
the per-frame core block by block with the stream state carried, so that memory grows with the result only (an
audit: 3.6 GB for 160,000 CMU frames onto Bandai-Namco, the core's whole-clip (F, J, 3, 3) tensors). The answer
must be the clip's in one piece, to the bit: every method, real clips spanning several blocks of a few dozen frames
(lengths no multiple of the block), the floors measured (a target clip's, a bare target's lift) or given."""

from __future__ import annotations

from itertools import pairwise

import pytest
import torch

import skelanim
from skelanim.retarget import METHODS, Retargeter, RetargetError, blocks
from skelanim.retarget.blocks import frame_blocks

#: A block far shorter than the clips (so each spans several), and one longer than any.
SMALL, WHOLE = 64, 10**9


@pytest.fixture(scope="module")
def pair(mocap_files):
    cmu, bandai = mocap_files(["cmu_cgspeed_mb/01_01.bvh", "bandai_namco_1/dataset-1_walk_normal_001.bvh"])
    return skelanim.load(cmu)[:500], skelanim.load(bandai)  # 500 frames at 120 fps; 195 at 30


def _retarget(monkeypatch, retargeter: Retargeter, motion, block: int) -> tuple[skelanim.Motion, int]:
    """The result with blocks of ``block`` frames, and how many blocks the core ran."""
    monkeypatch.setattr(blocks, "BLOCK_FRAMES", block)
    calls = []
    run = retargeter._run
    monkeypatch.setattr(retargeter, "_run", lambda *args, **kw: calls.append(args[0].shape[0]) or run(*args, **kw))
    out = retargeter(motion)
    monkeypatch.undo()
    return out, len(calls)


def _assert_same(a: skelanim.Motion, b: skelanim.Motion) -> None:
    assert torch.equal(a.rotations, b.rotations)
    assert torch.equal(a.root_positions, b.root_positions)
    assert (a.joint_translations is None) == (b.joint_translations is None)
    if a.joint_translations is not None:
        assert torch.equal(a.joint_translations, b.joint_translations)


@pytest.mark.filterwarnings("ignore:the target skeleton's zero pose is no body pose")  # the NKN onto a bare Bandai
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("case", ["cmu onto bandai", "bandai onto cmu", "onto a bare skeleton", "given floor"])
def test_a_clip_in_blocks_is_the_clip_in_one_piece(pair, monkeypatch, method, case):
    cmu, bandai = pair
    source, target, options = {
        "cmu onto bandai": (cmu, bandai, {}),  # 120 fps: the NKN reads it at 30 (125 frames, two blocks)
        "bandai onto cmu": (bandai, cmu, {}),  # 30 fps, 195 frames: 3 blocks
        "onto a bare skeleton": (cmu, bandai.skeleton, {}),  # no target floor: lifted by the clip's floor level
        "given floor": (cmu, bandai, {"floor": 0.01}),
    }[case]
    retargeter = Retargeter(source, target, method, **options)
    whole, one = _retarget(monkeypatch, retargeter, source, WHOLE)
    blocked, many = _retarget(monkeypatch, retargeter, source, SMALL)
    assert one == 1 and many >= 2
    _assert_same(blocked, whole)


def test_the_stream_state_is_fresh_after_a_clip_in_blocks(pair, monkeypatch):
    """The next clip (or stream) starts where a fresh Retargeter would: blocks carried the state only within the clip."""
    cmu, bandai = pair
    retargeter = Retargeter(cmu, bandai, "ik")
    first, _ = _retarget(monkeypatch, retargeter, cmu, SMALL)
    again, _ = _retarget(monkeypatch, retargeter, cmu, SMALL)
    _assert_same(again, first)
    assert retargeter._contacts.floor is None and not bool(retargeter._pins.pinned.any())


@pytest.mark.parametrize("frames", [1, 2, 63, 64, 65, 127, 128, 129, 195, 500, 4097])
def test_frame_blocks_cover_the_clip_in_blocks_of_equal_length(frames):
    spans = frame_blocks(frames, SMALL)
    assert spans[0][0] == 0 and spans[-1][1] == frames
    assert all(a == b for (_, a), (b, _) in pairwise(spans))
    lengths = [b - a for a, b in spans]
    assert len(spans) == -(-frames // SMALL) and max(lengths) <= SMALL and max(lengths) - min(lengths) <= 1
    assert len(spans) == 1 or min(lengths) >= SMALL // 2  # never a short block (another kernel in float32 products)


def test_a_non_finite_translation_is_named_by_frame_and_joint_across_blocks(pair, monkeypatch):
    """The local translations are checked block by block (never whole): the first bad one, as before."""
    cmu, bandai = pair
    monkeypatch.setattr(blocks, "BLOCK_FRAMES", SMALL)
    root = cmu.root_positions.clone()
    root[300, 2] = float("inf")
    root[400, 0] = float("nan")
    with pytest.raises(RetargetError, match="non-finite position") as info:
        Retargeter(cmu, bandai)(cmu.copy(root_positions=root))
    assert info.value.where == f"frame 300, joint {cmu.skeleton.names[0]}"
    assert bandai.joint_translations is not None  # Bandai animates its hips' translation
    jt = bandai.joint_translations.clone()
    jt[150, 2, 1] = float("nan")
    with pytest.raises(RetargetError, match="non-finite position") as info:
        Retargeter(bandai, cmu)(bandai.copy(joint_translations=jt))
    assert info.value.where == f"frame 150, joint {bandai.skeleton.names[2]}"
