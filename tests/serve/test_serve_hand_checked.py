"""The VMC stream and recorder against independent sources: where a joint the source lacks is placed (the canonical
T-pose's shares, worked by hand), the same clip in other units or with another up axis streaming the same frames,
recorded takes resampled as worked by hand (first timed frame, repeated stamps, stamps a day on), frames a sender
splits or closes with its root, and bad options refused in one line."""

from __future__ import annotations

import math
import socket
import warnings

import numpy as np
import pytest
import torch
from pythonosc.osc_bundle_builder import IMMEDIATELY, OscBundleBuilder
from pythonosc.osc_message_builder import OscMessageBuilder

import skelanim
from skelanim import ops
from skelanim.core.units import up_to_y_matrix
from skelanim.io.gltf import export_scale
from skelanim.retarget.mapping import CANONICAL_JOINTS
from skelanim.retarget.retargeter import make_rig
from skelanim.serve.record import ReceivedFrame, VMCRecorder, frames_to_motion
from skelanim.serve.vmc import AvatarEncoder, AvatarStream, StreamError, avatar_frames

WALK = "deepmimic/humanoid3d_walk.txt"  # metres; lacks spine, spine1, the clavicles, head, hands and toes
IDENTITY = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)  # position x y z, rotation x y z w (Unity's order)
#: Unity's left-handed axes from right-handed ones: X mirrored
MIRROR = torch.tensor([-1.0, 1.0, 1.0], dtype=torch.float64)


def _slot(joint: str) -> int:
    return CANONICAL_JOINTS.index(joint)


# ------------------------------------------------------------------------------------ the stream (serve.vmc)
def test_missing_spine_and_clavicles_sit_at_the_canonical_t_poses_share(mocap_dir):
    """DeepMimic's humanoid has hips, chest and upper arms but no spine, spine1 or clavicles. Worked by hand from
    the canonical T-pose's bones (spine 0.10, spine1 0.12, chest 0.12 m; clavicle (0.02, 0.15, 0), upper arm 0.15 m
    along X): the spine sits 0.10 / 0.34 = 5/17 of the way from the hips to the chest; ``Chest`` (spine1 and
    chest, at the chest, the first of them the clip has) the remaining 12/17 above it; the left shoulder at
    |(0.02, 0.15)| / (|(0.02, 0.15)| + 0.15) of the way from the chest to the upper arm, the upper arm the rest."""
    motion = skelanim.load(mocap_dir / WALK)[:3]
    sent = avatar_frames(motion)
    offset = {b: sent.positions[0, i] for i, b in enumerate(sent.bones)}
    rest = make_rig(motion).canonical_rest * export_scale(motion)[0]  # the clip's joints, canonical T-pose, metres
    back = (rest[_slot("chest")] - rest[_slot("hips")]) * MIRROR
    torch.testing.assert_close(offset["Spine"], back * (5 / 17), atol=1e-9, rtol=0)
    torch.testing.assert_close(offset["Chest"], back * (12 / 17), atol=1e-9, rtol=0)
    clavicle = math.hypot(0.02, 0.15)
    share = clavicle / (clavicle + 0.15)  # 0.5022
    for side, name in (("l", "Left"), ("r", "Right")):
        arm = (rest[_slot(f"{side}_upperarm")] - rest[_slot("chest")]) * MIRROR
        torch.testing.assert_close(offset[f"{name}Shoulder"], arm * share, atol=1e-9, rtol=0)
        torch.testing.assert_close(offset[f"{name}UpperArm"], arm * (1 - share), atol=1e-9, rtol=0)


def test_the_same_clip_in_centimetres_streams_the_same_frames(mocap_dir):
    """Everything sent is in metres: a copy of the clip scaled to centimetres (and labelled so) sends the same
    rotations and positions, the joints the clip lacks (head, hands, toes: the canonical T-pose's bone at the
    clip's size) included."""
    metres = skelanim.load(mocap_dir / WALK)[:4]
    centimetres = ops.scale(metres, 100.0)
    centimetres = centimetres.copy(metadata={**centimetres.metadata, "units": "cm"})
    a, b = avatar_frames(metres), avatar_frames(centimetres)
    assert a.bones == b.bones and {"Head", "LeftHand", "RightToes"} <= set(a.bones)
    torch.testing.assert_close(b.positions, a.positions, atol=1e-9, rtol=1e-9)
    torch.testing.assert_close(b.rotations, a.rotations, atol=1e-9, rtol=1e-9)
    head = a.positions[0, a.bones.index("Head")]  # canonical neck -> head is 0.10 m straight up, at the clip's size
    assert float(head[1]) > 0.05 and float(head[[0, 2]].norm()) < 1e-9


def test_a_z_up_copy_of_a_walk_streams_the_same_frames(mocap_dir):
    """The same walk turned Z up (``ops.rotate``; its up axis read from the clip, as ``skelanim stream`` reads it,
    or given) is turned Y up again before it goes out: the same rotations, and the hips at the same place."""
    walk = skelanim.load(mocap_dir / WALK)[:30]
    z_up = ops.rotate(walk, up_to_y_matrix(2).T)
    assert walk.up_direction() == (1, 1.0) and z_up.up_direction() == (2, 1.0)
    want = avatar_frames(walk)
    for got in (avatar_frames(z_up), avatar_frames(z_up, up_axis="z"), avatar_frames(z_up, up=(2, 1.0))):
        torch.testing.assert_close(got.positions, want.positions, atol=1e-6, rtol=0)
        torch.testing.assert_close(got.rotations, want.rotations, atol=1e-6, rtol=0)
    assert float(want.positions[:, 0, [0, 2]].norm(dim=-1).max()) > 0.3  # the walk travels: a turn would show


@pytest.mark.parametrize("metres_per_unit", [0.0, -1.0, math.nan, math.inf])
def test_metres_per_unit_must_be_positive(mocap_dir, metres_per_unit):
    walk = skelanim.load(mocap_dir / WALK)[:2]
    with pytest.raises(StreamError, match="metres per unit must be a positive number") as err:
        AvatarEncoder(walk, metres_per_unit=metres_per_unit)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("port", [0, -1, 65536, 39539.0, "39539", True])
def test_a_stream_needs_a_port_to_send_to(port):
    """Port 0 means "any free port" to a listener (``VMCRecorder`` takes it) but is no port to send to. ``True`` is
    no port either (it had passed as port 1, and the socket's refusal was reported as "cannot resolve host
    '127.0.0.1'")."""
    with pytest.raises(StreamError, match="port must be 1-65535") as err:
        AvatarStream("127.0.0.1", port)  # type: ignore[arg-type]
    assert "\n" not in str(err.value)
    with AvatarStream("127.0.0.1", 1), AvatarStream("127.0.0.1", 65535):
        pass
    with VMCRecorder("127.0.0.1", 0) as recorder:
        assert recorder.port > 0


@pytest.mark.parametrize("port", [-1, 65536, 1.5, True, False])
def test_a_recorder_needs_a_port_to_listen_on(port):
    with pytest.raises(StreamError, match="port must be 0-65535") as err:
        VMCRecorder("127.0.0.1", port)  # type: ignore[arg-type]
    assert "\n" not in str(err.value)


def test_a_numpy_integer_is_a_port():
    """Numbers from numpy are taken at the edges: an ``np.int64`` port is that port (it had been refused as "port
    must be 1-65535, got 39539")."""
    with AvatarStream("127.0.0.1", np.int64(39539)) as sender:  # type: ignore[arg-type]
        assert sender.target == "127.0.0.1:39539"
    with VMCRecorder("127.0.0.1", np.int64(0)) as recorder:  # type: ignore[arg-type]
        assert isinstance(recorder.port, int) and recorder.port > 0


# -------------------------------------------------------------------------------- the recorder (serve.record)
def _received(t: float | None, hips_x: float, arrival: float = 0.0) -> ReceivedFrame:
    return ReceivedFrame({"Hips": (hips_x, 1.0, 0.0, *IDENTITY[3:]), "Spine": (0.0, 0.1, 0.0, *IDENTITY[3:])},
                         None, t, arrival)  # fmt: skip


def _message(address: str, *args: object):
    builder = OscMessageBuilder(address=address)
    for a in args:
        builder.add_arg(a)
    return builder.build()


def _bundle(*messages) -> bytes:
    bundle = OscBundleBuilder(IMMEDIATELY)
    for m in messages:
        bundle.add_content(m)
    return bundle.build().dgram


def _hips(x: float):
    return _message("/VMC/Ext/Bone/Pos", "Hips", float(x), 1.0, 0.0, *IDENTITY[3:])


def _spine():
    return _message("/VMC/Ext/Bone/Pos", "Spine", 0.0, 0.1, 0.0, *IDENTITY[3:])


def _root(z: float):
    return _message("/VMC/Ext/Root/Pos", "root", 0.0, 0.0, float(z), *IDENTITY[3:])


def _time(t: float):
    return _message("/VMC/Ext/T", float(t))


def _take(datagrams: list[bytes]) -> list[ReceivedFrame]:
    with VMCRecorder("127.0.0.1", 0) as recorder, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as out:
        for d in datagrams:
            out.sendto(d, ("127.0.0.1", recorder.port))
        return recorder.receive(wait=0.3)


def _standing() -> list[ReceivedFrame]:
    """Three frames at 10 fps, the hips at Unity's (0.3, 0.9, 0), the spine 0.1 above them."""
    return [ReceivedFrame({"Hips": (0.3, 0.9, 0.0, *IDENTITY[3:]), "Spine": (0.0, 0.1, 0.0, *IDENTITY[3:])},
                          None, k / 10, 0.0) for k in range(3)]  # fmt: skip


def test_the_recorded_root_joint_has_no_offset_of_its_own():
    """The hips' position is the root position: the skeleton's root offset is zero, so that the hips sent at Unity's
    (0.3, 0.9, 0) are at (-0.3, 0.9, 0), not twice that, also after a BVH round trip (the root's OFFSET)."""
    motion = frames_to_motion(_standing(), fps=10.0)
    torch.testing.assert_close(motion.skeleton.offsets[0], torch.zeros(3, dtype=torch.float64))
    want = torch.tensor([-0.3, 0.9, 0.0], dtype=torch.float64)
    torch.testing.assert_close(motion.positions()[:, 0], want.expand(3, 3))
    torch.testing.assert_close(motion.positions()[:, 1], (want + torch.tensor([0.0, 0.1, 0.0])).expand(3, 3))


def test_the_recorded_root_survives_a_bvh_round_trip(tmp_path):
    path = tmp_path / "take.bvh"
    skelanim.save(frames_to_motion(_standing(), fps=10.0), path)
    torch.testing.assert_close(skelanim.load(path).positions()[0, 0], torch.tensor([-0.3, 0.9, 0.0],
                               dtype=torch.float64), atol=1e-6, rtol=0)  # fmt: skip


def test_frames_before_the_senders_first_time_are_left_out():
    """A frame that came before the sender's clock started (no time) is not on that clock: the take is the three
    timed frames, hips x 0, 1, 2 at 0, 0.1, 0.2 s (X mirrored), without a warning about the sender's times."""
    frames = [_received(None, 9.0, arrival=0.0), *(_received(k / 10, float(k), arrival=5.0 + k) for k in range(3))]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        motion = frames_to_motion(frames, fps=10.0)
    torch.testing.assert_close(motion.root_positions[:, 0], torch.tensor([0.0, -1.0, -2.0], dtype=torch.float64))


@pytest.mark.parametrize("fps", [0.0, -5.0, math.nan, math.inf])
def test_a_take_needs_a_positive_frame_rate(fps):
    frames = [_received(k / 10, float(k)) for k in range(3)]
    with pytest.raises(StreamError, match="fps must be a positive number") as err:
        frames_to_motion(frames, fps=fps)
    assert "\n" not in str(err.value)


def test_stamps_a_million_seconds_on_gain_no_frame():
    """Stamps 1e6 + (0, 0.1, 0.14) s span one whole period at 10 fps, and 0.04 s more: two frames. A float32
    stamp a million seconds on is only 0.0625 s precise, but the slack stays under half a period: a third grid
    point at +0.2 s is 0.06 s past the last frame sent."""
    frames = [_received(1e6 + t, float(k)) for k, t in enumerate((0.0, 0.1, 0.14))]
    motion = frames_to_motion(frames, fps=10.0)
    assert motion.num_frames == 2
    torch.testing.assert_close(motion.root_positions[:, 0], torch.tensor([0.0, -1.0], dtype=torch.float64))
    frames = [_received(1e6 + t, float(k)) for k, t in enumerate((0.0, 0.1, 0.2))]
    assert frames_to_motion(frames, fps=10.0).num_frames == 3


def test_repeated_stamps_keep_the_first_frame_of_each():
    """Arrivals 0, 0, 0.1, 0.1, 0.2 s (no sender time) at 10 fps: the frames at 0, 0.1 and 0.2 s are the first that
    arrived at each, hips x 0, 2, 4 (X mirrored)."""
    frames = [_received(None, float(k), arrival=a) for k, a in enumerate((0.0, 0.0, 0.1, 0.1, 0.2))]
    motion = frames_to_motion(frames, fps=10.0)
    torch.testing.assert_close(motion.root_positions[:, 0], torch.tensor([0.0, -2.0, -4.0], dtype=torch.float64))


def test_a_sender_without_times_that_sends_its_root_last():
    """Each bundle is hips, spine, then the root (no time): three frames, each with its own root."""
    received = _take([_bundle(_hips(k), _spine(), _root(10 * k)) for k in range(3)])
    assert [(f.bones["Hips"][0], f.root[2] if f.root else None) for f in received] == [(0, 0), (1, 10), (2, 20)]
    assert all(set(f.bones) == {"Hips", "Spine"} for f in received)


def test_a_split_frame_with_its_time_in_each_part_is_one_frame():
    """Time first, a frame split over two bundles that both carry the frame's time: the repeated time is the same
    frame, not a new one."""
    parts = [(_bundle(_time(k / 10), _hips(k)), _bundle(_time(k / 10), _spine())) for k in range(3)]
    received = _take([d for frame in parts for d in frame])
    assert [f.bones["Hips"][0] for f in received] == [0.0, 1.0, 2.0]
    assert [f.time for f in received] == pytest.approx([0.0, 0.1, 0.2])
    assert all(set(f.bones) == {"Hips", "Spine"} for f in received)


def test_a_split_frame_arrived_with_its_first_datagram():
    """A frame split over two datagrams, read at 1.0 and 1.2 s: it arrived at 1.0 s (its first part)."""
    with VMCRecorder("127.0.0.1", 0) as recorder:
        out = recorder._read(_bundle(_hips(0)), 1.0, ("127.0.0.1", 1))
        out += recorder._read(_bundle(_spine(), _time(0.0)), 1.2, ("127.0.0.1", 1))
        out += recorder._read(_bundle(_hips(1)), 2.0, ("127.0.0.1", 1))
        out += recorder._read(_bundle(_spine(), _time(0.1)), 2.5, ("127.0.0.1", 1))
    assert [f.arrival for f in out] == [1.0, 2.0] and [f.bones["Hips"][0] for f in out] == [0.0, 1.0]
