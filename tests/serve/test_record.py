"""Recording VMC: a real clip streamed by :mod:`skelanim.serve.vmc` and recorded comes back with every limb bone
pointing where the clip's own forward kinematics points it; loose (unbundled) messages make frames too;
irregular sender times are resampled as hand-checked; bad input is one line."""

from __future__ import annotations

import itertools
import math
import socket
import threading
import time

import numpy as np
import pytest
import torch
from pythonosc.osc_bundle_builder import IMMEDIATELY, OscBundleBuilder
from pythonosc.osc_message_builder import OscMessageBuilder
from pythonosc.udp_client import SimpleUDPClient
from vmc_take import record_while_sending  # tests/helpers

import skelanim
from skelanim.cli import main
from skelanim.core.rotations import quat_to_matrix
from skelanim.core.units import up_to_y_matrix
from skelanim.data.samples import sample_path
from skelanim.retarget.retargeter import make_rig
from skelanim.serve.avatar import UNITY_PARENTS
from skelanim.serve.record import ReceivedFrame, VMCRecorder, frames_to_motion
from skelanim.serve.vmc import HUMANOID_BONES, AvatarStream, StreamError, avatar_frames

#: (canonical joint, the next one down) -> (humanoid bone, the next one down)
SEGMENTS = {("l_upperarm", "l_forearm"): ("LeftUpperArm", "LeftLowerArm"),
            ("r_forearm", "r_hand"): ("RightLowerArm", "RightHand"),
            ("l_upleg", "l_leg"): ("LeftUpperLeg", "LeftLowerLeg"), ("r_leg", "r_foot"): ("RightLowerLeg", "RightFoot"),
            ("neck", "head"): ("Neck", "Head")}  # fmt: skip
IDENTITY = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)


def _frame(t: float | None, hips_x: float, arrival: float = 0.0) -> ReceivedFrame:
    return ReceivedFrame({"Hips": (hips_x, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0), "Spine": (0.0, 0.1, 0.0, *IDENTITY[3:])},
                         None, t, arrival)  # fmt: skip


def _send(port: int, frames, order: list[int], pause: float = 0.002) -> None:
    """Send ``frames[order[k]]`` stamped ``k / fps``, ``pause`` apart (a burst could overflow the socket buffer)."""
    with AvatarStream("127.0.0.1", port) as sender:
        for k, index in enumerate(order):
            sender.send(frames, index, k / frames.fps)
            time.sleep(pause)


def _bundle(*messages: tuple[str, list]) -> bytes:
    bundle = OscBundleBuilder(IMMEDIATELY)
    for address, args in messages:
        builder = OscMessageBuilder(address=address)
        for a in args:
            builder.add_arg(a)
        bundle.add_content(builder.build())
    return bundle.build().dgram


def _message_bytes(address: str, *args: object) -> bytes:
    builder = OscMessageBuilder(address=address)
    for a in args:
        builder.add_arg(a)
    return builder.build().dgram


def _hips(x: float) -> tuple[str, list]:
    return ("/VMC/Ext/Bone/Pos", ["Hips", x, 1.0, 0.0, *IDENTITY[3:]])


def _spine() -> tuple[str, list]:
    return ("/VMC/Ext/Bone/Pos", ["Spine", 0.0, 0.1, 0.0, *IDENTITY[3:]])


def _take(datagrams: list[bytes], **options) -> list[ReceivedFrame]:
    with VMCRecorder("127.0.0.1", 0) as recorder:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as out:
            for d in datagrams:
                out.sendto(d, ("127.0.0.1", recorder.port))
        return recorder.receive(wait=0.5, **options)


def test_frames_however_the_sender_cuts_them():
    """Bundles with the time inside, bundles with the time sent loose, frames split over two bundles, and the
    time first: three frames each, with their hips and times."""
    layouts = {
        "time inside": [_bundle(_hips(k), _spine(), ("/VMC/Ext/T", [k / 10])) for k in range(3)],
        "time loose": [
            d for k in range(3) for d in (_bundle(_hips(k), _spine()), _message_bytes("/VMC/Ext/T", k / 10))
        ],
        "split, time last": [
            d for k in range(3) for d in (_bundle(_hips(k)), _bundle(_spine(), ("/VMC/Ext/T", [k / 10])))
        ],
        "split, time first": [
            d for k in range(3) for d in (_bundle(("/VMC/Ext/T", [k / 10]), _hips(k)), _bundle(_spine()))
        ],
        "time first": [_bundle(("/VMC/Ext/T", [k / 10]), _hips(k), _spine()) for k in range(3)],
    }
    for layout, datagrams in layouts.items():
        received = _take(datagrams)
        assert [f.bones["Hips"][0] for f in received] == [0.0, 1.0, 2.0], layout
        assert [f.time for f in received] == pytest.approx([0.0, 0.1, 0.2]), layout
        assert all(set(f.bones) == {"Hips", "Spine"} for f in received), layout


def test_a_sender_of_changed_bones_only_and_its_root():
    """Time last, only the bones that moved, the root first: each bundle is its frame, with its own root."""
    root = lambda z: ("/VMC/Ext/Root/Pos", ["root", 0.0, 0.0, float(z), *IDENTITY[3:]])
    datagrams = [_bundle(root(0), _hips(0), _spine(), ("/VMC/Ext/T", [0.0])), _bundle(root(10), _spine(), ("/VMC/Ext/T", [0.1])),
                 _bundle(root(20), _hips(2), ("/VMC/Ext/T", [0.2])), _bundle(root(30), _spine(), ("/VMC/Ext/T", [0.3]))]  # fmt: skip
    received = _take(datagrams)
    assert [f.time for f in received] == pytest.approx([0.0, 0.1, 0.2, 0.3])
    assert [f.bones["Hips"][0] for f in received] == [0.0, 0.0, 2.0, 2.0]
    assert [f.root[2] for f in received] == [0.0, 10.0, 20.0, 30.0]


def test_the_last_frame_arrives_when_the_sender_stops():
    """Without a time after it or a next frame, a frame is whole after GRACE seconds of silence: receive(frames=N)
    returns when a sender of N frames stops (it waited for an N + 1th)."""
    datagrams = [_bundle(_hips(k), _spine()) for k in range(3)]  # no time at all
    started = time.monotonic()
    with VMCRecorder("127.0.0.1", 0) as recorder:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as out:
            for d in datagrams:
                out.sendto(d, ("127.0.0.1", recorder.port))
        received = recorder.receive(frames=3)
    assert [f.bones["Hips"][0] for f in received] == [0.0, 1.0, 2.0]
    assert time.monotonic() - started < 5


def test_a_standing_sender_clock_falls_back_to_arrival():
    frames = [_frame(0.0, float(k), arrival=k / 10) for k in range(5)]  # the sender's time never moves
    with pytest.warns(UserWarning, match="placed by their arrival"):
        motion = frames_to_motion(frames, fps=10.0)
    assert motion.num_frames == 5
    torch.testing.assert_close(motion.root_positions[:, 0], -torch.arange(5, dtype=torch.float64))


def test_receive_stops_after_seconds():
    """``seconds`` counts from the first frame's arrival, on the clock given. The six datagrams wait in the socket
    before ``receive`` starts, and each reading of the fake clock is a quarter second later: one reading at the
    start, then per datagram one before it is read (the deadline check) and one when it arrives. So datagram ``k``
    (each one frame: its time closes it) is checked at ``0.25 + 0.5 k`` and arrives at ``0.5 (k + 1)``; the first
    arrives at 0.5, the deadline is 0.5 + 1.5 = 2.0, and datagrams 0-3 (checked at 0.25, 0.75, 1.25, 1.75) are
    read, datagram 4 (checked at 2.25) is not: four frames. ``wait=0.5`` (``_take``) never ends it: a check
    always comes a quarter second after the last arrival."""
    clock = itertools.count(0.0, 0.25)  # a quarter second passes at each reading
    datagrams = [_bundle(_hips(k), ("/VMC/Ext/T", [k / 10])) for k in range(6)]
    received = _take(datagrams, seconds=1.5, clock=lambda: next(clock))
    assert [f.arrival for f in received] == [0.5, 1.0, 1.5, 2.0]
    assert [f.bones["Hips"][0] for f in received] == [0.0, 1.0, 2.0, 3.0]
    assert [f.time for f in received] == pytest.approx([0.0, 0.1, 0.2, 0.3])


def test_unity_hierarchy_has_the_55_humanoid_bones_parents_first():
    assert len(UNITY_PARENTS) == 55 and set(HUMANOID_BONES) <= set(UNITY_PARENTS)
    seen: set[str] = set()
    for bone, parent in UNITY_PARENTS.items():
        assert parent is None or parent in seen, bone
        seen.add(bone)


@pytest.mark.parametrize("name", ["cmu_cgspeed_mb/01_01.bvh", "bandai_namco_1/dataset-1_walk_happy_001.bvh"])
def test_a_streamed_clip_is_recorded_as_it_moves(mocap_dir, name):
    motion = skelanim.load(mocap_dir / name)[:60]
    frames = avatar_frames(motion)
    with VMCRecorder("127.0.0.1", 0) as recorder:
        # one more frame than the clip: a frame ends when the next begins
        sender = threading.Thread(target=_send, args=(recorder.port, frames, [*range(frames.num_frames), 0]))
        sender.start()
        received = recorder.receive(frames=frames.num_frames, wait=30)
        sender.join()
    assert len(received) == frames.num_frames
    recorded = frames_to_motion(received, fps=motion.fps)
    assert recorded.num_frames == motion.num_frames and set(recorded.skeleton.names) == set(HUMANOID_BONES)
    got = recorded.positions()
    want = motion.positions() @ up_to_y_matrix(*motion.up_direction()).T
    joints = make_rig(motion).mapping.joints
    for (a, b), (bone_a, bone_b) in SEGMENTS.items():
        if a not in joints or b not in joints:
            continue
        names = recorded.skeleton.names
        d_got = torch.nn.functional.normalize(got[:, names.index(bone_b)] - got[:, names.index(bone_a)], dim=-1)
        d_want = torch.nn.functional.normalize(want[:, joints[b]] - want[:, joints[a]], dim=-1)
        angle = torch.rad2deg(torch.acos((d_got * d_want).sum(-1).clamp(-1, 1)))
        assert float(angle.max()) < 0.05, (bone_a, float(angle.max()))
    # the hips travel as the clip's, in metres (one scale on the ground plane)
    hips_got, hips_want = got[:, 0, [0, 2]], want[:, joints["hips"]][:, [0, 2]]
    scale = float((hips_got * hips_want).sum() / (hips_want**2).sum())
    torch.testing.assert_close(hips_got, scale * hips_want, atol=1e-4, rtol=1e-5)
    assert 0.7 < float(got[:, 0, 1].median()) < 1.2


def test_loose_messages_end_a_frame_at_the_time_message():
    with VMCRecorder("127.0.0.1", 0) as recorder:
        client = SimpleUDPClient("127.0.0.1", recorder.port)
        for k in range(2):
            client.send_message("/VMC/Ext/Root/Pos", ["root", *IDENTITY])
            client.send_message("/VMC/Ext/Bone/Pos", ["Hips", float(k), 1.0, 0.0, *IDENTITY[3:]])
            client.send_message("/VMC/Ext/T", float(k))
        received = recorder.receive(frames=2, wait=10)
    assert [f.time for f in received] == [0.0, 1.0]
    assert [f.bones["Hips"][0] for f in received] == [0.0, 1.0]


def test_irregular_sender_times_are_resampled_hand_checked():
    # hips x (Unity) 0, 1, 3 at sender times 0, 0.1, 0.2 -> at 20 fps: 0, 0.5, 1, 2, 3, X mirrored
    frames = [_frame(0.0, 0.0), _frame(0.1, 1.0), _frame(0.2, 3.0)]
    motion = frames_to_motion(frames, fps=20.0)
    assert motion.fps == 20.0 and motion.skeleton.names == ["Hips", "Spine"]
    torch.testing.assert_close(
        motion.root_positions[:, 0], torch.tensor([0.0, -0.5, -1.0, -2.0, -3.0], dtype=torch.float64)
    )
    torch.testing.assert_close(motion.skeleton.offsets[1], torch.tensor([0.0, 0.1, 0.0], dtype=torch.float64))


def test_every_take_keeps_its_last_frame_on_float32_sender_times():
    """``/VMC/Ext/T`` is an OSC float32 (127/30 arrives as 4.2333331), and the resampling grid had stopped 1e-9 s
    past the first stamp's span, short of the last frame for ~45 % of take lengths (an audit's measure): every
    length of 2-200 frames at 30 fps comes back whole, at 24 fps as many frames as its span holds, also on a
    sender's clock an hour on (float32 stamps 0.24 ms apart from the true times), and on arrival times."""
    for start in (0.0, 3600.0):
        tolerance = 1e-4 if start == 0.0 else 0.02  # hips x moves 1 a frame; an hour on, float32 is 0.24 ms coarse
        for n in range(2, 201):
            frames = [_frame(float(np.float32(start + k / 30)), float(k)) for k in range(n)]
            motion = frames_to_motion(frames, fps=30.0)
            assert motion.num_frames == n, (start, n, motion.num_frames)
            assert float(motion.root_positions[-1, 0]) == pytest.approx(-(n - 1), abs=tolerance)  # X mirrored
            assert frames_to_motion(frames, fps=24.0).num_frames == 4 * (n - 1) // 5 + 1, (start, n)
    for n in (2, 7, 128):  # arrival times (float64), a monotonic clock a day on
        frames = [_frame(None, float(k), arrival=86400.0 + k / 30) for k in range(n)]
        assert frames_to_motion(frames, fps=30.0).num_frames == n


def test_the_grid_gains_no_frame_past_the_last_stamp():
    """The slack covers the stamps' rounding, not half a period: a take that ends short of a grid point by more than
    that gains no (held) frame that was not sent."""
    for last, expected in [(0.16, 2), (0.1999, 2), (0.2, 3), (float(np.float32(0.2)), 3), (0.23, 3)]:
        frames = [_frame(0.0, 0.0), _frame(0.1, 1.0), _frame(last, 2.0)]
        assert frames_to_motion(frames, fps=10.0).num_frames == expected, last


def test_a_root_transform_moves_and_turns_the_body():
    turn = (0.0, math.sin(math.pi / 4), 0.0, math.cos(math.pi / 4))  # 90 degrees about +Y, Unity's axes
    pitch = (math.sin(math.pi / 4), 0.0, 0.0, math.cos(math.pi / 4))  # 90 degrees about +X, Unity's axes
    frame = ReceivedFrame({"Hips": (1.0, 1.0, 0.0, *IDENTITY[3:])}, (0.0, 0.0, 5.0, *turn), 0.0, 0.0)
    motion = frames_to_motion([frame])
    # Unity: the root at z = 5 turns the hips' (1, 1, 0) onto (0, 1, -1): hips at (0, 1, 4); X mirrored: the same
    torch.testing.assert_close(motion.root_positions[0], torch.tensor([0.0, 1.0, 4.0], dtype=torch.float64))
    # the hips pitched under the turned root: the hips' world rotation is the root's times the hips' (parent
    # first), as matrices in Unity's axes, then mirrored (M R M, M = diag(-1, 1, 1))
    frame = ReceivedFrame({"Hips": (1.0, 1.0, 0.0, *pitch)}, (0.0, 0.0, 5.0, *turn), 0.0, 0.0)
    motion = frames_to_motion([frame])
    unity = [quat_to_matrix(torch.tensor([q[3], q[0], q[1], q[2]], dtype=torch.float64)) for q in (turn, pitch)]
    mirror = torch.diag(torch.tensor([-1.0, 1.0, 1.0], dtype=torch.float64))
    torch.testing.assert_close(quat_to_matrix(motion.rotations[0, 0]), mirror @ unity[0] @ unity[1] @ mirror)
    # by hand, right-handed: 90 degrees about X, then -90 degrees about Y (mirroring turns a Y turn round) take the
    # hips' +Y onto +Z and then onto -X
    up = quat_to_matrix(motion.rotations[0, 0]) @ torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)
    torch.testing.assert_close(up, torch.tensor([-1.0, 0.0, 0.0], dtype=torch.float64))
    torch.testing.assert_close(motion.root_positions[0], torch.tensor([0.0, 1.0, 4.0], dtype=torch.float64))


def test_no_hips_and_unknown_bones():
    with pytest.raises(StreamError, match="no frame with the Hips"):
        frames_to_motion([ReceivedFrame({"Spine": IDENTITY}, None, 0.0, 0.0)])
    with pytest.warns(UserWarning, match="not Unity humanoid bones: Tail"):
        motion = frames_to_motion([ReceivedFrame({"Hips": IDENTITY, "Tail": IDENTITY}, None, 0.0, 0.0)])
    assert motion.skeleton.names == ["Hips"]


def test_junk_datagrams_are_counted_not_fatal():
    with VMCRecorder("127.0.0.1", 0) as recorder:
        client = SimpleUDPClient("127.0.0.1", recorder.port)
        client._sock.sendto(b"not osc at all", ("127.0.0.1", recorder.port))
        client.send_message("/VMC/Ext/Bone/Pos", ["Hips", 0.0, 1.0, 0.0, *IDENTITY[3:]])
        client.send_message("/VMC/Ext/T", 0.5)
        received = recorder.receive(frames=1, wait=10)
    assert len(received) == 1 and recorder.ignored == 1


def test_cli_records_a_stream(mocap_dir, tmp_path, capsys):
    out = tmp_path / "recorded.bvh"
    frames = avatar_frames(skelanim.load(mocap_dir / "deepmimic" / "humanoid3d_walk.txt"))
    options = ["--frames", "5", "--wait", "30", "--fps", "30", "--no-progress"]
    assert record_while_sending(main, out, frames, options, junk=True) == 0  # junk: said in the summary, not fatal
    said = capsys.readouterr().out
    assert "wrote" in said and "message(s) ignored (not OSC" in said
    recorded = skelanim.load(out)
    assert set(recorded.skeleton.names) == set(HUMANOID_BONES) and recorded.num_frames == 5


def test_cli_record_errors_are_one_line(tmp_path, capsys):
    for args, expected in [
        (["record", str(tmp_path / "x.txt"), "--wait", "0.01"], "x.txt"),
        (["record", str(tmp_path / "x.bvh"), "--host", "no-such-host.invalid", "--wait", "0.01"], "cannot listen"),
    ]:
        assert main(args) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error:") and expected in err[0], err
    # an output that cannot be written is refused before listening (a take is not lost)
    (tmp_path / "folder.bvh").mkdir()
    assert main(["record", str(tmp_path / "folder.bvh"), "--port", "0", "--wait", "30"]) == 2
    err = capsys.readouterr()
    assert "listening" not in err.out and len(err.err.strip().splitlines()) == 1 and "folder.bvh" in err.err
    # nothing arrived before Ctrl-C (receive returns what arrived): said in one line, nothing written, no folder
    target = tmp_path / "new" / "y.bvh"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(VMCRecorder, "receive", lambda self, **options: [])
        assert main(["record", str(target), "--port", "0", "--wait", "0.2", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nothing arrived" in err[0] and not (tmp_path / "new").exists()


def test_wait_counts_from_the_first_frame():
    """``--wait`` ends a take when its sender goes quiet, not before it starts: a recorder told to wait 0.3 s keeps
    listening for a sender that starts 0.8 s later (it gave up at 0.3 s and lost the take), then stops 0.3 s
    after its last frame."""
    start = time.monotonic()
    received = _three_frames_sent_late(0.8, wait=0.3)
    elapsed = time.monotonic() - start
    assert [f.bones["Hips"][0] for f in received] == pytest.approx([0.0, 1.0, 2.0])
    assert 0.8 < elapsed < 10


def _three_frames_sent_late(delay: float, **options: float) -> list:
    """What ``receive(**options)`` returns when a sender starts ``delay`` seconds after it and sends three frames."""
    frames = [_bundle(_hips(k), _spine(), ("/VMC/Ext/T", [k / 10])) for k in range(3)]
    with VMCRecorder("127.0.0.1", 0) as recorder:

        def late_sender() -> None:
            time.sleep(delay)
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as out:
                for d in frames:
                    out.sendto(d, ("127.0.0.1", recorder.port))

        thread = threading.Thread(target=late_sender)
        thread.start()
        received = recorder.receive(**options)
        thread.join()
    return received


def test_record_listens_on_ipv6_and_stream_may_broadcast():
    """``record --host ::1`` listened on IPv4 only ("Address family for hostname not supported") though ``stream``
    sends over IPv6: a frame streamed to ::1 is now recorded there. A stream's IPv4 socket may send to a LAN's
    broadcast address (it was refused: "Permission denied")."""
    with AvatarStream("255.255.255.255", 39539) as broadcast:
        assert broadcast._socket.getsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST) == 1
    try:
        recorder = VMCRecorder("::1", 0)
    except StreamError as err:  # a machine without IPv6
        pytest.skip(f"no IPv6 loopback here: {err}")
    walk = skelanim.load(sample_path("walk"))
    with recorder, AvatarStream("::1", recorder.port) as sender:
        sender.send(avatar_frames(walk[:1]))
        received = recorder.receive(frames=1, wait=10)
    assert len(received) == 1 and "Hips" in received[0].bones
    # written as an address is read: `[::1]:PORT`, not `::1:PORT`
    assert recorder.target == sender.target == f"[::1]:{recorder.port}"
    with VMCRecorder("::1", 0) as taken, pytest.raises(StreamError, match=rf"cannot listen on \[::1\]:{taken.port}: "):
        VMCRecorder("::1", taken.port)


def test_a_message_with_a_word_or_a_nan_where_numbers_go_is_skipped_not_the_take():
    """A sender's bad message (a string or NaN in a bone, the root or the time) is counted in ``ignored`` and left
    out; the frames around it are kept (before, one such message ended ``record`` with a traceback and lost the
    take)."""
    good = [_bundle(_hips(k), ("/VMC/Ext/T", [k / 10])) for k in range(4)]
    bad = [
        _bundle(("/VMC/Ext/Bone/Pos", ["Hips", "a", 1.0, 0.0, *IDENTITY[3:]]), ("/VMC/Ext/T", ["x"])),
        _bundle(("/VMC/Ext/Bone/Pos", ["Hips", float("nan"), 1.0, 0.0, *IDENTITY[3:]])),
        _bundle(("/VMC/Ext/Root/Pos", ["root", float("inf"), 0.0, 0.0, *IDENTITY[3:]])),
    ]
    with VMCRecorder("127.0.0.1", 0) as recorder:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as out:
            for d in [good[0], *bad, *good[1:]]:
                out.sendto(d, ("127.0.0.1", recorder.port))
        received = recorder.receive(wait=0.5)
        assert recorder.ignored == 4  # two messages in the first bad bundle, one in each of the others
    assert [f.bones["Hips"][0] for f in received] == [0.0, 1.0, 2.0, 3.0]
    assert all(math.isfinite(v) for f in received for v in f.bones["Hips"])


def test_corrupt_strings_huge_numbers_and_short_messages_are_skipped_not_the_take():
    """A bone name that is not UTF-8 raised python-osc's UnicodeDecodeError, which ended ``record`` with a traceback
    and no file (an audit's fuzzing: 2,029 of 20,000 corrupted bundles); a 1e30 was written into a BVH that ``load``
    refuses; a message with too few arguments went uncounted. Each is now one ignored message."""
    good = [_bundle(_hips(k), ("/VMC/Ext/T", [k / 10])) for k in range(4)]
    corrupt = _bundle(_hips(9)).replace(b"Hips", b"H\xefps")
    bad = [
        corrupt,
        _bundle(("/VMC/Ext/Bone/Pos", ["Hips", 1e30, 1.0, 0.0, *IDENTITY[3:]])),
        _bundle(("/VMC/Ext/Bone/Pos", ["Hips", 1.0, 1.0])),
    ]
    with VMCRecorder("127.0.0.1", 0) as recorder:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as out:
            for d in [good[0], *bad, *good[1:]]:
                out.sendto(d, ("127.0.0.1", recorder.port))
        received = recorder.receive(wait=0.5)
        assert recorder.ignored == 3
    assert [f.bones["Hips"][0] for f in received] == [0.0, 1.0, 2.0, 3.0]


def test_writing_a_take_ignores_ctrl_c_on_the_main_thread_only():
    """A second Ctrl-C while the take was converted and saved exited 130 with no file and no spare copy."""
    import signal

    from skelanim.cli.stream import _no_interrupt

    before = signal.getsignal(signal.SIGINT)
    with _no_interrupt():
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    assert signal.getsignal(signal.SIGINT) is before
    seen: list[object] = []

    def elsewhere() -> None:
        with _no_interrupt():
            seen.append(signal.getsignal(signal.SIGINT))

    worker = threading.Thread(target=elsewhere)
    worker.start()
    worker.join()
    assert seen == [before]


def test_cli_says_an_ipv6_address_in_brackets(tmp_path, capsys):
    try:
        with VMCRecorder("::1", 0):
            pass
    except StreamError as err:  # a machine without IPv6
        pytest.skip(f"no IPv6 loopback here: {err}")
    frames = avatar_frames(skelanim.load(sample_path("walk"))[:3])
    code = record_while_sending(main, tmp_path / "x.bvh", frames, ["--frames", "2", "--no-progress"], host="::1")
    said = capsys.readouterr().out
    assert code == 0 and "listening on [::1]:" in said and " for VMC" in said, said  # it had said ::1:40199


def test_give_up_ends_a_take_that_never_started(tmp_path, capsys):
    """The last note: with nothing arriving, ``record --seconds/--wait`` waited forever (both count from the first
    frame) while saying it "stops by itself". ``--give-up S`` ends it S seconds after the start, in one line, with
    nothing written; a sender that starts in time is recorded as before."""
    from skelanim.cli import main

    with VMCRecorder("127.0.0.1", 0) as recorder:
        start = time.monotonic()
        assert recorder.receive(wait=0.2, give_up=0.4) == []
        assert 0.35 < time.monotonic() - start < 5
    target = tmp_path / "new" / "x.bvh"
    assert main(["record", str(target), "--port", "0", "--seconds", "1", "--give-up", "0.3", "--no-progress"]) == 2
    captured = capsys.readouterr()
    assert "stops by itself once frames arrive; gives up if none has arrived in 0.3 s" in captured.out
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "nothing arrived" in err[0] and not (tmp_path / "new").exists()
    received = _three_frames_sent_late(0.2, wait=0.3, give_up=5.0)
    assert [f.bones["Hips"][0] for f in received] == pytest.approx([0.0, 1.0, 2.0])
