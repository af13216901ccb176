"""The VMC avatar stream: Unity's axes checked against reflected matrices, hand-checked poses on the canonical
T-pose, bone directions of real clips rebuilt from what arrives over UDP against the clips' own forward
kinematics, the OSC messages as a peer parser (python-osc's) reads them, real-time pacing on a fake clock,
and one-line errors."""

from __future__ import annotations

import math
import socket

import numpy as np
import pytest
import torch
from needs import peer_library
from pythonosc.osc_packet import OscPacket
from pythonosc.parsing import osc_types

import skelanim
from skelanim.cli import main
from skelanim.core.motion import Motion
from skelanim.core.rotations import axis_angle_to_quat, quat_to_matrix
from skelanim.core.units import up_to_y_matrix
from skelanim.io.gltf import export_scale
from skelanim.retarget.mapping import CANONICAL_JOINTS
from skelanim.retarget.retargeter import make_rig
from skelanim.retarget.rig import canonical_tpose
from skelanim.serve.vmc import (
    BONE_OF_JOINT,
    HUMANOID_BONES,
    MAX_DATAGRAM,
    AvatarEncoder,
    AvatarFrames,
    AvatarStream,
    StreamError,
    avatar_frames,
    host_port,
    loop_travel,
    mirror_x,
    seamless_loop,
    vmc_bundle,
    vmc_bundles,
)

BONES = list(HUMANOID_BONES)
#: humanoid bone -> its parent bone (the VRM hierarchy without UpperChest)
PARENT: dict[str, str | None] = {"Hips": None, "Spine": "Hips", "Chest": "Spine", "Neck": "Chest", "Head": "Neck"}
for _s in ("Left", "Right"):
    PARENT.update({f"{_s}Shoulder": "Chest", f"{_s}UpperArm": f"{_s}Shoulder", f"{_s}LowerArm": f"{_s}UpperArm",
                   f"{_s}Hand": f"{_s}LowerArm", f"{_s}UpperLeg": "Hips", f"{_s}LowerLeg": f"{_s}UpperLeg",
                   f"{_s}Foot": f"{_s}LowerLeg", f"{_s}Toes": f"{_s}Foot"})  # fmt: skip
#: (canonical joint, the next one down, the humanoid bone between them)
SEGMENTS = [("l_upperarm", "l_forearm", "LeftUpperArm"), ("l_forearm", "l_hand", "LeftLowerArm"),
            ("r_upperarm", "r_forearm", "RightUpperArm"), ("r_forearm", "r_hand", "RightLowerArm"),
            ("l_upleg", "l_leg", "LeftUpperLeg"), ("l_leg", "l_foot", "LeftLowerLeg"),
            ("r_upleg", "r_leg", "RightUpperLeg"), ("r_leg", "r_foot", "RightLowerLeg"), ("neck", "head", "Neck")]  # fmt: skip
CLIPS = ["bandai_namco_1/dataset-1_walk_happy_001.bvh", "cmu_cgspeed_mb/01_01.bvh",
         "xia_style/strutting_01_000.bvh", "deepmimic/humanoid3d_walk.txt"]  # fmt: skip
#: Unity's left-handed axes from right-handed ones: X mirrored
MIRROR = torch.diag(torch.tensor([-1.0, 1.0, 1.0], dtype=torch.float64))


def _tpose_motion(frames: int = 1) -> Motion:
    return Motion.rest(canonical_tpose(), frames, fps=30.0)


def _receiver() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(10)
    return sock


#: The sizes of the datagrams :func:`_receive` read, in order.
DATAGRAMS: list[int] = []


def _receive(sock: socket.socket, count: int) -> list[dict[str, list]]:
    """``count`` frames as ``{address: [params, ...]}`` (python-osc's parser), each read from datagrams until its
    time (``/VMC/Ext/T``, which ends a frame) arrives."""
    out = []
    for _ in range(count):
        got: dict[str, list] = {}
        while "/VMC/Ext/T" not in got:
            data, _ = sock.recvfrom(65536)
            DATAGRAMS.append(len(data))
            for timed in OscPacket(data).messages:
                got.setdefault(timed.message.address, []).append(timed.message.params)
        out.append(got)
    return out


class FakeClock:
    """A clock that moves only when slept on (plus ``lag`` seconds per reading: a slow machine)."""

    def __init__(self, lag: float = 0.0) -> None:
        self.now, self.lag = 100.0, lag

    def __call__(self) -> float:
        self.now += self.lag
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.now += seconds


# --------------------------------------------------------------------------------------------- conventions
def test_mirror_x_is_the_reflected_rotation_and_position():
    g = torch.Generator().manual_seed(0)
    q = torch.nn.functional.normalize(torch.randn(200, 4, generator=g, dtype=torch.float64), dim=-1)
    p = torch.randn(200, 3, generator=g, dtype=torch.float64)
    q2, p2 = mirror_x(q, p)
    torch.testing.assert_close(quat_to_matrix(q2), MIRROR @ quat_to_matrix(q) @ MIRROR)
    torch.testing.assert_close(p2, p @ MIRROR)
    torch.testing.assert_close(mirror_x(q2, p2)[0], q)  # its own inverse


def test_the_t_pose_is_the_identity_and_stands_on_the_floor():
    av = avatar_frames(_tpose_motion(2))
    assert av.rotations.shape == (2, len(BONES), 4) and av.fps == 30.0
    torch.testing.assert_close(av.rotations, torch.tensor([1.0, 0, 0, 0], dtype=torch.float64).expand(2, len(BONES), 4))
    # hand-checked from canonical_tpose: the toes are 0.05 + 0.42 + 0.40 + 0.05 = 0.92 m below the hips
    torch.testing.assert_close(av.positions[0, 0], torch.tensor([0.0, 0.92, 0.0], dtype=torch.float64))
    # the left upper arm hangs 0.15 m to the character's left of its shoulder: -X in Unity
    torch.testing.assert_close(av.positions[0, BONES.index("LeftUpperArm")],
                               torch.tensor([-0.15, 0.0, 0.0], dtype=torch.float64))  # fmt: skip


def test_hand_checked_elbow_and_turn():
    motion = _tpose_motion()
    rotations = motion.rotations.clone()
    names = motion.skeleton.names
    y = torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)
    rotations[0, names.index("l_forearm")] = axis_angle_to_quat(y, math.pi / 2)
    rotations[0, names.index("hips")] = axis_angle_to_quat(y, math.pi / 2)
    av = avatar_frames(motion.copy(rotations=rotations))
    h = math.sqrt(0.5)
    # +90 degrees about +Y (right-handed) is -90 degrees about +Y in Unity: (w, x, y, z) = (h, 0, -h, 0);
    # Unity's Quaternion.Euler(0, -90, 0) turns the left forearm, along -X there, onto -Z, as here +X goes to -Z
    expected = {"LeftLowerArm": [h, 0.0, -h, 0.0], "Hips": [h, 0.0, -h, 0.0]}
    for b, name in enumerate(BONES):
        torch.testing.assert_close(av.rotations[0, b], torch.tensor(expected.get(name, [1.0, 0, 0, 0]),
                                                                    dtype=torch.float64), msg=name)  # fmt: skip


# ------------------------------------------------------------------------------------------------ real clips
def _world_rotations(received: torch.Tensor) -> dict[str, torch.Tensor]:
    """World rotation matrices per bone, right-handed again (``M R M``, not :func:`mirror_x`), from ``(F, B, 4)``
    received local quaternions (x, y, z, w), Unity's axes."""
    local = MIRROR @ quat_to_matrix(received[..., [3, 0, 1, 2]]) @ MIRROR
    world: dict[str, torch.Tensor] = {}
    for b, name in enumerate(BONES):
        parent = PARENT[name]
        world[name] = local[:, b] if parent is None else world[parent] @ local[:, b]
    return world


def _sent_and_received(av: AvatarFrames, indices: list[int] | None = None) -> torch.Tensor:
    """``(F, B, 7)`` what arrives over UDP (python-osc's parser) for frames ``indices`` of ``av`` (default all),
    per bone of :data:`BONES`: local position x y z, rotation x y z w, Unity's axes, float32 on the wire."""
    indices = list(range(av.num_frames)) if indices is None else indices
    sock = _receiver()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)  # a burst of frames (the OS may cap it)
    with AvatarStream("127.0.0.1", sock.getsockname()[1]) as sender:
        for i in indices:
            sender.send(av, i, i / av.fps)
    bundles = _receive(sock, len(indices))
    sock.close()
    bones = [{params[0]: params[1:] for params in b["/VMC/Ext/Bone/Pos"]} for b in bundles]
    return torch.tensor([[bones[f][n] for n in BONES] for f in range(len(indices))], dtype=torch.float64)


def _world_positions(received: torch.Tensor) -> dict[str, torch.Tensor]:
    """``(F, 3)`` world position per bone, right-handed again (X mirrored back), from ``(F, B, 7)`` received local
    positions and rotations: each bone at its parent's position plus the parent's world rotation of its offset."""
    world = _world_rotations(received[..., 3:])
    local = received[..., :3] @ MIRROR
    placed: dict[str, torch.Tensor] = {}
    for b, name in enumerate(BONES):
        parent = PARENT[name]
        offset = local[:, b] if parent is None else (world[parent] @ local[:, b, :, None])[..., 0]
        placed[name] = offset if parent is None else placed[parent] + offset
    return placed


@pytest.mark.parametrize("name", CLIPS)
def test_bone_directions_and_hips_arrive_as_the_clip_has_them(mocap_dir, name):
    """What a marionette receives, through the humanoid hierarchy, points every limb bone (and the neck, through
    the merged Chest) where the clip's own forward kinematics does, and puts the hips where the clip has them."""
    motion = skelanim.load(mocap_dir / name)
    motion = motion[:: max(1, motion.num_frames // 40)]  # ~40 frames across the clip
    av = avatar_frames(motion)
    received = _sent_and_received(av)
    pos = received[..., :3] @ MIRROR
    world = _world_rotations(received[..., 3:])

    rig = make_rig(motion)
    joints = rig.mapping.joints
    src = motion.positions() @ up_to_y_matrix(*motion.up_direction()).T  # the clip's FK, turned Y-up
    tpose = canonical_tpose()
    rest = dict(zip(tpose.names, tpose.rest_positions()))
    checked = 0
    for a, b, bone in SEGMENTS:
        if a not in joints or b not in joints:
            continue
        want = torch.nn.functional.normalize(src[:, joints[b]] - src[:, joints[a]], dim=-1)
        got = world[bone] @ torch.nn.functional.normalize(rest[b] - rest[a], dim=0)
        angle = torch.rad2deg(torch.acos((want * got).sum(-1).clamp(-1, 1)))
        assert float(angle.max()) < 0.05, (bone, float(angle.max()))  # float32 on the wire
        checked += 1
    assert checked >= 5
    # hips: one scale (to metres) on all three axes, X mirrored back, and a constant floor under them
    hips, got_hips = src[:, joints["hips"]], pos[:, 0]
    flat = [0, 2]
    scale = float((got_hips[:, flat] * hips[:, flat]).sum() / (hips[:, flat] ** 2).sum())
    torch.testing.assert_close(got_hips[:, flat], scale * hips[:, flat], atol=1e-4, rtol=1e-5)
    floor = hips[:, 1] - got_hips[:, 1] / scale
    assert float(floor.max() - floor.min()) < 1e-4 * float(hips[:, 1].abs().max())
    assert 0.7 < float(got_hips[:, 1].median()) < 1.2  # a standing human's hips, in metres


#: Clips without a ``spine1`` joint (Bandai; DeepMimic also lacks the spine, clavicles, head and hands; pymo the spine
#: and the neck), whose ``Chest`` bone carries the chest joint's turn alone.
NO_SPINE1 = ["bandai_namco_1/dataset-1_bow_active_001.bvh", "deepmimic/humanoid3d_spinkick.txt",
             "pymo_demo/AV_8Walk_Meredith_HVHA_Rep1.bvh"]  # fmt: skip


@pytest.mark.parametrize("name", NO_SPINE1)
def test_the_upper_body_arrives_where_the_clip_has_it_without_a_spine1(mocap_dir, name):
    """Rebuilt through the humanoid hierarchy from what arrives, the neck, head, arms and hands the clip has sit
    where its own forward kinematics puts them (metres, from the hips). ``Chest`` had been placed at a made-up
    ``spine1`` point below the chest joint while turning by the chest joint's rotation alone, so the whole upper
    body bent about the wrong point: 12-50 mm off (an audit's measure); now a bone sits at the first of its joints
    the clip has."""
    motion = skelanim.load(mocap_dir / name)
    av = avatar_frames(motion)  # calibrated on the whole clip, as `skelanim stream` does
    frames = list(range(0, motion.num_frames, -(-motion.num_frames // 40)))  # at most 40 frames across the clip
    placed = _world_positions(_sent_and_received(av, frames))
    rig = make_rig(motion)
    assert not bool(rig.present[CANONICAL_JOINTS.index("spine1")])
    joints = rig.mapping.joints
    metres = export_scale(motion)[0]
    src = (motion.positions()[frames] @ up_to_y_matrix(*motion.up_direction()).T) * metres  # the clip's FK, Y-up
    upper = ["neck", "head", "l_upperarm", "l_forearm", "l_hand", "r_upperarm", "r_forearm", "r_hand"]
    checked = [j for j in upper if j in joints]
    assert {"neck", "head", "l_forearm", "r_forearm"} & set(checked) and len(checked) >= 5, checked
    for joint in checked:
        bone = BONE_OF_JOINT[joint]
        want = src[:, joints[joint]] - src[:, joints["hips"]]
        got = placed[bone] - placed["Hips"]
        error = float((got - want).norm(dim=-1).max())
        assert error < 1e-4, (bone, f"{error * 1000:.3f} mm")  # under 0.1 mm (float32 on the wire)


#: Clips with a ``spine1`` and a ``chest`` joint, both carried by ``Chest``.
WITH_SPINE1 = ["cmu_cgspeed_mb/01_01.bvh"]


@pytest.mark.parametrize("name", WITH_SPINE1)
def test_a_bone_of_two_joints_arrives_at_the_first_of_them(mocap_dir, name):
    """``Chest`` carries ``spine1`` and ``chest`` (their product) and turns about ``spine1``: rebuilt through the
    humanoid hierarchy from what arrives, it sits where the clip's own forward kinematics has its spine1 joint (and
    ``Spine`` at its spine joint), metres from the hips, not at the chest joint above it (which a clip without
    spine1 has it at). The bones above turn about that point too, so the neck, head and arms are off by the merge's
    own error only: the spine1 -> chest bone turned by the chest joint's local turn (2 sin(angle / 2) of its length,
    17-34 mm on CMU 01_01; under its length for turns under 60 degrees). An avatar with ``UpperChest`` gets the
    two apart."""
    motion = skelanim.load(mocap_dir / name)[:120]
    av = avatar_frames(motion)
    frames = list(range(0, motion.num_frames, 4))
    placed = _world_positions(_sent_and_received(av, frames))
    rig = make_rig(motion)
    assert bool(rig.present[CANONICAL_JOINTS.index("spine1")]) and bool(rig.present[CANONICAL_JOINTS.index("chest")])
    joints = rig.mapping.joints
    src = (motion.positions()[frames] @ up_to_y_matrix(*motion.up_direction()).T) * export_scale(motion)[0]
    for joint, bone in [("spine", "Spine"), ("spine1", "Chest")]:
        want = src[:, joints[joint]] - src[:, joints["hips"]]
        error = float((placed[bone] - placed["Hips"] - want).norm(dim=-1).max())
        assert error < 1e-4, (bone, f"{error * 1000:.3f} mm")  # under 0.1 mm (float32 on the wire)
    chest = float((src[:, joints["chest"]] - src[:, joints["spine1"]]).norm(dim=-1).max())
    for joint in ["neck", "head", "l_upperarm", "l_hand", "r_upperarm", "r_hand"]:
        want = src[:, joints[joint]] - src[:, joints["hips"]]
        error = float((placed[BONE_OF_JOINT[joint]] - placed["Hips"] - want).norm(dim=-1).max())
        assert error < chest, (joint, f"{error * 1000:.3f} mm", f"{chest * 1000:.3f} mm")


# ------------------------------------------------------------------------------------------ the wire, the clock
def _frames(count: int, fps: float = 10.0) -> AvatarFrames:
    """``count`` frames whose hips height is the frame index (to tell them apart on arrival; no travel)."""
    rotations = torch.tensor([1.0, 0, 0, 0], dtype=torch.float64).expand(count, len(BONES), 4).clone()
    positions = torch.zeros(count, len(BONES), 3, dtype=torch.float64)
    positions[:, 0, 1] = torch.arange(count, dtype=torch.float64)
    return AvatarFrames(rotations, positions, fps)


def test_each_frame_is_the_vmc_messages_in_datagrams_that_need_no_fragmenting():
    """A frame of 21 bones is 1,752 bytes, more than one Ethernet datagram carries unfragmented (an export audit):
    it goes out as bundles of at most MAX_DATAGRAM bytes, its messages in order, OK and the time last."""
    sock = _receiver()
    clock = FakeClock()
    DATAGRAMS.clear()
    with AvatarStream("127.0.0.1", sock.getsockname()[1]) as sender:
        sent = sender.play(_frames(3), clock=clock, sleep=clock.sleep)
    assert sent == 3
    bundles = _receive(sock, 3)
    assert len(DATAGRAMS) == 6 and max(DATAGRAMS) <= MAX_DATAGRAM and sum(DATAGRAMS[:2]) > 1472
    whole = _frames(1)
    parts = vmc_bundles(whole, 0, 0.5)
    assert [m.message.dgram for p in parts for m in OscPacket(p).messages] == \
        [m.message.dgram for m in OscPacket(vmc_bundle(whole, 0, 0.5)).messages]  # fmt: skip
    assert len(vmc_bundles(whole, 0, 0.5, max_bytes=1)) == len(BONES) + 3  # one message a bundle at least
    for index, got in enumerate(bundles):
        assert set(got) == {"/VMC/Ext/Root/Pos", "/VMC/Ext/Bone/Pos", "/VMC/Ext/OK", "/VMC/Ext/T"}
        assert got["/VMC/Ext/Root/Pos"] == [["root", 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]]
        assert [b[0] for b in got["/VMC/Ext/Bone/Pos"]] == BONES
        hips = got["/VMC/Ext/Bone/Pos"][0]
        assert hips == ["Hips", 0.0, float(index), 0.0, 0.0, 0.0, 0.0, 1.0]  # position, then x y z w
        assert all(len(b) == 8 and all(isinstance(v, float) for v in b[1:]) for b in got["/VMC/Ext/Bone/Pos"])
        assert got["/VMC/Ext/OK"] == [[1]]
        assert got["/VMC/Ext/T"][0][0] == pytest.approx(index / 10.0, abs=1e-6)


def _elements(bundle: bytes) -> list[bytes]:
    """A bundle's elements, its bytes counted by hand: ``#bundle\\0``, an 8-byte time tag, then each element as
    its size (a big-endian int32) and that many bytes, to the bundle's last byte."""
    assert bundle[:8] == b"#bundle\x00"
    elements, at = [], 16
    while at < len(bundle):
        size = int.from_bytes(bundle[at : at + 4], "big")
        elements.append(bundle[at + 4 : at + 4 + size])
        at += 4 + size
    assert at == len(bundle)
    return elements


def test_every_bundle_fits_the_datagram_size_asked_for():
    """For every ``max_bytes`` from 200 to 1,800, each bundle of a 21-bone frame is at most that many bytes (counted
    on the bytes), its messages are the frame's in order, and no bundle is cut before it had to be: the next
    bundle's first message (4 + its bytes) would not have fitted."""
    g = torch.Generator().manual_seed(2)
    rotations = torch.nn.functional.normalize(torch.randn(1, len(BONES), 4, generator=g, dtype=torch.float64), dim=-1)
    frames = AvatarFrames(rotations, torch.randn(1, len(BONES), 3, generator=g, dtype=torch.float64), 30.0)
    whole = _elements(vmc_bundle(frames, 0, 0.75))
    assert len(whole) == len(BONES) + 3
    for max_bytes in range(200, 1801, 7):
        bundles = vmc_bundles(frames, 0, 0.75, max_bytes=max_bytes)
        parts = [_elements(b) for b in bundles]
        assert [e for p in parts for e in p] == whole, max_bytes
        assert max(len(b) for b in bundles) <= max_bytes, (max_bytes, [len(b) for b in bundles])
        for bundle, after in zip(bundles, parts[1:]):
            assert len(bundle) + 4 + len(after[0]) > max_bytes, (max_bytes, [len(b) for b in bundles])
        assert (len(bundles) == 1) == (len(vmc_bundle(frames, 0, 0.75)) <= max_bytes), max_bytes


def test_messages_match_a_peer_vmc_library():
    """The bundle's messages, address, type tags and arguments, are those python-vmcp (a peer implementation of
    the protocol, installed for the tests) builds for the same root, bones, model state and time."""
    vmcp_protocol = peer_library("vmcp.protocol")
    from vmcp.typing import Bone, CoordinateVector, ModelState, Quaternion

    g = torch.Generator().manual_seed(1)
    rotations = torch.nn.functional.normalize(torch.randn(1, len(BONES), 4, generator=g, dtype=torch.float64), dim=-1)
    frames = AvatarFrames(rotations, torch.randn(1, len(BONES), 3, generator=g, dtype=torch.float64), 30.0)
    ours = []
    for timed in OscPacket(vmc_bundle(frames, 0, 1.25)).messages:
        address, at = osc_types.get_string(timed.message.dgram, 0)
        tags, _ = osc_types.get_string(timed.message.dgram, at)
        ours.append((address, tags, tuple(timed.message.params)))
    peer = [vmcp_protocol.root_transform(CoordinateVector(0.0, 0.0, 0.0), Quaternion(0.0, 0.0, 0.0, 1.0))]
    for name, (w, x, y, z), position in zip(BONES, rotations[0].tolist(), frames.positions[0].tolist()):
        peer.append(vmcp_protocol.bone_transform(Bone(name), CoordinateVector(*position), Quaternion(x, y, z, w)))
    peer += [vmcp_protocol.state(ModelState.LOADED), vmcp_protocol.time(1.25)]
    assert [(a, t) for a, t, _ in ours] == [(a, t) for a, t, _ in peer]
    for (_, _, got), (_, _, want) in zip(ours, peer):
        assert [v for v in got if isinstance(v, str)] == [v for v in want if isinstance(v, str)]
        np.testing.assert_allclose(
            [v for v in got if not isinstance(v, str)],
            [v for v in want if not isinstance(v, str)],
            rtol=1e-6,
            atol=1e-7,
        )  # float32


def _played(frames: AvatarFrames, clock: FakeClock, **options) -> list[int]:
    sock = _receiver()
    shown: list[int] = []
    with AvatarStream("127.0.0.1", sock.getsockname()[1]) as sender:
        sent = sender.play(frames, clock=clock, sleep=clock.sleep, on_frame=shown.append, **options)
    assert sent == len(shown)
    arrived = [int(b["/VMC/Ext/Bone/Pos"][0][2]) for b in _receive(sock, sent)]
    assert arrived == shown
    return shown


def test_each_frame_is_stamped_with_its_moment_in_played_time():
    """``/VMC/Ext/T`` is the frame's own moment since play began ("stamped with the frame's own moment"), in the
    played time: at speed 2 a 10 fps clip's frame k is shown at k / 20 s, not at its k / 10 s in the clip."""
    sock = _receiver()
    clock = FakeClock()
    with AvatarStream("127.0.0.1", sock.getsockname()[1]) as sender:
        sent = sender.play(_frames(4), clock=clock, sleep=clock.sleep, speed=2.0)
    times = [b["/VMC/Ext/T"][0][0] for b in _receive(sock, sent)]
    assert times == pytest.approx([0.0, 0.05, 0.1, 0.15], abs=1e-6)  # float32 on the wire


def test_real_time_pacing_on_a_fake_clock():
    clock = FakeClock()
    assert _played(_frames(5), clock) == [0, 1, 2, 3, 4]
    assert clock.now == pytest.approx(100.5)  # 5 frames at 10 fps, each shown for its 0.1 s
    clock = FakeClock()
    _played(_frames(6), clock, speed=2.0)
    assert clock.now == pytest.approx(100.3)
    # looping wraps around, until max_frames
    assert _played(_frames(3), FakeClock(), loop=True, max_frames=7) == [0, 1, 2, 0, 1, 2, 0]
    # a machine that loses 0.25 s per clock reading shows the frames their time falls in, skipping the rest
    shown = _played(_frames(20), FakeClock(lag=0.25))
    assert shown == sorted(shown) and len(shown) < 20 and shown[0] in (0, 2)
    assert max(np.diff(shown)) <= 6


def test_bad_stream_options_are_stream_errors():
    with pytest.raises(StreamError, match="cannot resolve host 'no-such-host.invalid'"):
        AvatarStream("no-such-host.invalid", 39539)
    with pytest.raises(StreamError, match="port must be 1-65535"):
        AvatarStream("127.0.0.1", 70000)
    with AvatarStream("127.0.0.1", 39539) as sender, pytest.raises(StreamError, match="speed"):
        sender.play(_frames(2), speed=0.0)


def test_an_ipv6_target_is_written_in_brackets():
    """``stream --host ::1`` had printed its target as ``::1:40199`` (where the address ends and the port begins
    is unreadable); an IPv6 address is now bracketed, ``[::1]:40199``, as in a URL."""
    assert host_port("::1", 40199) == "[::1]:40199" and host_port("fe80::1%lo", 5) == "[fe80::1%lo]:5"
    assert host_port("127.0.0.1", 39539) == "127.0.0.1:39539" and host_port("localhost", 1) == "localhost:1"
    with AvatarStream("127.0.0.1", 39539) as sender:
        assert sender.target == "127.0.0.1:39539"
    try:
        sender = AvatarStream("::1", 40199)
    except StreamError as err:  # a machine without IPv6
        pytest.skip(f"no IPv6 loopback here: {err}")
    with sender:
        assert sender.target == "[::1]:40199"


# ------------------------------------------------------------------------------------------------------- CLI
def test_cli_streams_a_clip(mocap_dir, capsys):
    sock = _receiver()
    src = mocap_dir / "deepmimic" / "humanoid3d_walk.txt"
    code = main(["stream", str(src), "--port", str(sock.getsockname()[1]), "--frames", "4", "--speed", "10",
                 "--no-progress"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"streaming {src} to 127.0.0.1:" in out and "sent 4 frames" in out
    assert len(_receive(sock, 4)) == 4


def test_cli_loops_a_wrap_clip_with_its_last_frame_as_the_next_plays_first(mocap_dir, monkeypatch, capsys):
    """DeepMimic's ``Loop: wrap`` says the last frame is the next cycle's first (it lasts no time): ``stream --loop``
    plays such a clip with ``wrap=True``, so frame 38 of the walk is not sent and then held again as the moved
    frame 0; a BVH says nothing, and the poses decide (``wrap=None``, :func:`seamless_loop`)."""
    asked = []
    monkeypatch.setattr(AvatarStream, "play", lambda self, frames, **kw: asked.append(kw.get("wrap")) or 0)
    walk = mocap_dir / "deepmimic" / "humanoid3d_walk.txt"
    assert skelanim.load(walk).metadata["loop"] == "wrap"
    bvh = mocap_dir / "bandai_namco_1" / "dataset-1_walk_normal_001.bvh"
    for src in (walk, bvh):
        assert main(["stream", str(src), "--loop", "--frames", "3", "--no-progress"]) == 0
    assert asked == [True, None]


def test_cli_errors_are_one_line(tmp_path, capsys):
    bad = tmp_path / "broken.bvh"
    bad.write_text("HIERARCHY\nROOT Hips\n{\n")
    for args, expected in [
        (["stream", str(tmp_path / "missing.bvh")], "missing.bvh"),
        (["stream", str(bad)], "broken.bvh"),
        (["stream", str(bad), "--port", "0"], "--port"),
    ]:
        assert main(args) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error:") and expected in err[0], err


def test_cli_unknown_host_is_one_line(mocap_dir, capsys):
    src = mocap_dir / "deepmimic" / "humanoid3d_walk.txt"
    assert main(["stream", str(src), "--host", "no-such-host.invalid", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: cannot resolve host 'no-such-host.invalid'"), err


def test_cli_streams_joint_positions_through_ik(mocap_dir, tmp_path, capsys):
    """Positions are solved by the shipped IK model first; the hips arrive where the BVH they came from has them."""
    bvh = mocap_dir / "bandai_namco_1" / "dataset-1_walk_happy_001.bvh"
    positions = tmp_path / "keypoints.npz"
    assert main(["positions", str(bvh), "-o", str(positions)]) == 0
    sock = _receiver()
    assert main(["stream", str(positions), "--port", str(sock.getsockname()[1]), "--frames", "3", "--speed", "10",
                 "--no-progress"]) == 0  # fmt: skip
    assert "sent 3 frames" in capsys.readouterr().out
    arrived = [b["/VMC/Ext/Bone/Pos"][0][1:4] for b in _receive(sock, 3)]
    expected = avatar_frames(skelanim.load(bvh)).positions[:, 0]
    shown = [
        min(range(expected.shape[0]), key=lambda f: float((expected[f] - torch.tensor(a)).norm())) for a in arrived
    ]
    for a, f in zip(arrived, shown):
        assert float((expected[f] - torch.tensor(a, dtype=torch.float64)).norm()) < 1e-3  # metres
    assert shown == sorted(shown)


def test_a_body_turning_round_keeps_its_quaternions_in_one_hemisphere():
    """The hips turning a full circle cross w = 0; what is sent, frame by frame as a live source sends it and in
    a loop, keeps neighbouring quaternions' dot products positive (a receiver that slerps naively would otherwise
    spin the body a turn)."""
    motion = _tpose_motion(73)
    rotations = motion.rotations.clone()
    angles = torch.linspace(0.0, 2 * math.pi, 73, dtype=torch.float64)
    rotations[:, 0] = axis_angle_to_quat(torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64).expand(73, 3), angles)
    turning = motion.copy(rotations=rotations)
    encoder = AvatarEncoder(turning)
    sock = _receiver()
    arrived = []
    with AvatarStream("127.0.0.1", sock.getsockname()[1]) as sender:
        for k in [*range(73), *range(0, 73, 8)]:  # live, one frame at a time, then a second lap, skipping frames
            sender.send(encoder.encode(turning.rotations[k : k + 1], turning.local_translations()[k : k + 1]), 0)
            arrived += [b["/VMC/Ext/Bone/Pos"][0][4:8] for b in _receive(sock, 1)]  # (a burst could overflow)
    hips = torch.tensor(arrived, dtype=torch.float64)  # x y z w
    assert float((hips[1:] * hips[:-1]).sum(-1).min()) > 0.7
    assert float(hips[0, 3]) == pytest.approx(1.0) and float(hips[72, 3]) == pytest.approx(-1.0, abs=1e-6)


def test_a_looped_walk_walks_on():
    """``--loop`` had sent each play from the clip's start, so a looped walk's hips jumped back at every wrap; each
    play now moves on by the clip's horizontal travel and one mean step (hips height and the turn kept): 1.5 m over
    3 steps of 0.5, so a play moves on by 2.0 and the steps stay 0.5 across the wrap (the hips had held a frame)."""
    frames = _frames(4)
    frames.positions[:, 0, 0] = torch.tensor([0.0, 0.5, 1.0, 1.5])  # walks 1.5 m along x, 0.3 m along z
    frames.positions[:, 0, 2] = torch.tensor([0.0, 0.1, 0.2, 0.3])
    sock = _receiver()
    clock = FakeClock()
    with AvatarStream("127.0.0.1", sock.getsockname()[1]) as sender:
        sent = sender.play(frames, clock=clock, sleep=clock.sleep, loop=True, max_frames=10)
    hips = np.array([b["/VMC/Ext/Bone/Pos"][0][1:4] for b in _receive(sock, sent)])
    np.testing.assert_allclose(hips[:, 0], 0.5 * np.arange(10), atol=1e-6)
    np.testing.assert_allclose(hips[:, 2], 0.1 * np.arange(10), atol=1e-6)
    np.testing.assert_allclose(hips[:, 1], np.tile([0, 1, 2, 3], 3)[:10], atol=1e-6)  # heights as in the clip
    assert loop_travel(frames).tolist() == pytest.approx([1.5, 0.0, 0.3])
    assert not seamless_loop(frames)


def test_a_seamless_loop_plays_its_last_frame_once():
    """A clip whose last pose is its first moved on (DeepMimic's ``Loop: wrap``: same rotations, same hips height)
    plays frames 0 .. F-2 and moves on by the travel, so the last frame is the next play's first, sent once (the
    hips had held for a frame at every wrap: a 33 ms hitch every 1.3 s of the DeepMimic walk, a review found)."""
    frames = _frames(4)
    frames.positions[:, 0, 1] = torch.tensor([1.0, 0.9, 0.95, 1.0])  # the last frame at the first one's height
    frames.positions[:, 0, 0] = torch.tensor([0.0, 0.4, 0.8, 1.2])
    assert seamless_loop(frames)
    sock = _receiver()
    clock = FakeClock()
    with AvatarStream("127.0.0.1", sock.getsockname()[1]) as sender:
        shown: list[int] = []
        sent = sender.play(frames, clock=clock, sleep=clock.sleep, loop=True, max_frames=8, on_frame=shown.append)
    hips = np.array([b["/VMC/Ext/Bone/Pos"][0][1:4] for b in _receive(sock, sent)])
    assert shown == [0, 1, 2, 0, 1, 2, 0, 1]
    np.testing.assert_allclose(hips[:, 0], 0.4 * np.arange(8), atol=1e-6)  # one step of 0.4 every frame
    np.testing.assert_allclose(hips[:, 1], [1.0, 0.9, 0.95] * 2 + [1.0, 0.9], atol=1e-6)
    turned = _frames(4)
    turned.positions[:, 0, 1] = 1.0
    turned.rotations[-1, 3] = torch.tensor([0.0, 1.0, 0.0, 0.0], dtype=torch.float64)  # a bone ends turned: not a loop
    assert not seamless_loop(turned)


def test_each_frame_is_stamped_with_its_own_moment():
    """``/VMC/Ext/T`` had carried the moment of sending, up to a frame after the moment of the pose sent (a slow
    machine: later still), and ``record`` resamples by it (a Bandai walk came back 26.9 mm off, an audit's measure):
    now frame ``k`` of a loop's pass ``n`` is stamped ``(n * F + k) / rate``, monotonic across loops."""
    sock = _receiver()
    clock = FakeClock(lag=0.037)  # every reading late: sending moments drift from the frames' own
    with AvatarStream("127.0.0.1", sock.getsockname()[1]) as sender:
        shown: list[int] = []
        sent = sender.play(_frames(4), clock=clock, sleep=clock.sleep, on_frame=shown.append, loop=True, max_frames=9)
    bundles = _receive(sock, sent)
    stamps = [b["/VMC/Ext/T"][0][0] for b in bundles]
    ticks = [round(t * 10) for t in stamps]  # _frames plays at 10 fps
    assert stamps == pytest.approx([k / 10 for k in ticks], abs=1e-6)  # each a frame's moment, not a reading's
    assert [k % 4 for k in ticks] == shown and ticks == sorted(ticks) and len(set(ticks)) == len(ticks)
