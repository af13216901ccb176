"""skelanim.viz (drawing helpers, plots, charts, the MP4 checker) and skelanim.serve (the VMC recorder, the avatar's
bone plan) against independent sources, third mutation audit: behaviour that no test noticed when it was changed
(a label count allowed to fall short, a side not inherited, a panel dropped when one method lacks it, ...), each
checked against a value worked out by hand or the rule its docstring states (quoted in each test)."""

from __future__ import annotations

import errno
import io
import json
import os
import signal
from pathlib import Path

import numpy as np
import pytest
import torch
from small_body import small_body  # tests/helpers

from skelanim import Motion, Skeleton
from skelanim.core.rotations import rotvec_to_quat
from skelanim.errors import FormatError, ShapeError
from skelanim.viz import _draw, charts, mp4, plots


def small_motion(root: torch.Tensor, fps: float = 30.0, metadata: dict | None = None) -> Motion:
    """The small body standing still (rest pose) with its root at ``root`` ``(F, 3)``, metres."""
    skeleton = small_body(fingers=True)
    rotations = rotvec_to_quat(torch.zeros(root.shape[0], skeleton.num_joints, 3, dtype=torch.float64))
    return Motion(skeleton, rotations, root.to(torch.float64), fps, metadata={"units": "m", **(metadata or {})})


# ============================================================================================ viz._draw
def test_the_default_label_is_the_stem_of_the_path() -> None:
    """``default_label``: "``metadata["name"]``, else the stem of ``metadata["path"]``, else ``motion <index + 1>``":
    a motion read from ``/data/walk_01.bvh`` is labelled ``walk_01`` (no folder, no suffix)."""
    m = small_motion(torch.zeros(2, 3), metadata={"path": "/data/walk_01.bvh"})
    assert _draw.default_label(m, 0) == "walk_01"
    _, names = _draw.labelled_motions([m], None)
    assert names == ["walk_01"]


def test_fewer_labels_than_motions_are_refused() -> None:
    """``labelled_motions``: "Raises :class:`ShapeError` for ... a label count that differs from the motion count":
    one label for two motions is such a count (not a legend that silently leaves the second motion out)."""
    ms = [small_motion(torch.zeros(2, 3)), small_motion(torch.zeros(3, 3))]
    with pytest.raises(ShapeError, match="1 labels for 2 motions"):
        _draw.labelled_motions(ms, ["only one"])


def test_a_finger_below_a_hand_takes_the_hands_side() -> None:
    """``Figure3D.sides``: "``-1`` right, ``0`` centre, ``+1`` left (from the child joint's name)", and joints below
    a sided joint inherit its side ("fingers, toes without markers"): the bones to ``IndexA`` (under ``LeftHand``)
    and ``IndexB`` (under ``RightHand``), whose names carry no side, are drawn as left (+1) and right (-1)."""
    m = small_motion(torch.tensor([[0.0, 1.0, 0.0]] * 2))
    fig = _draw.skeleton_figure(m)
    names = m.skeleton.names
    side = {names[c]: int(s) for (_, c), s in zip(fig.bones.tolist(), fig.sides.tolist()) if c < len(names)}
    assert side["IndexA"] == 1 and side["IndexB"] == -1
    assert side["LeftHand"] == 1 and side["Spine"] == 0


def test_the_flexion_at_a_joint_leaves_by_its_first_child() -> None:
    """``joint_flexion``: the angle between the arriving bone and "the bone leaving it (to its first child at
    non-zero distance ...)": 0 for aligned bones. At rest the Spine's first child is the Neck, straight above the
    Hips -> Spine bone: 0 degrees (its last child, the RightArm, would be atan(0.18 / 0.25) = 35.8 degrees off)."""
    m = small_motion(torch.tensor([[0.0, 1.0, 0.0]] * 2))
    spine = m.skeleton.names.index("Spine")
    np.testing.assert_allclose(_draw.joint_flexion(m, [spine]), 0.0, atol=1e-9)


def test_the_floor_grid_stays_within_half_of_the_centre() -> None:
    """``floor_grid``: "lines every ``step`` within ``half`` of the centre (aligned to multiples of ``step``)". Around
    (0.5, 0, 0.5) with step 1 and half 1 the span is [-0.5, 1.5] on each horizontal axis: lines at 0 and 1 only
    (by hand), 4 lines, each from -0.5 to 1.5 along the other axis."""
    starts, ends = _draw.floor_grid(np.array([0.5, 0.0, 0.5]), 1, 0.0, 1.0, 1.0)
    assert starts.shape == ends.shape == (4, 3)
    for axis, other in ((0, 2), (2, 0)):
        across = starts[:, axis] == ends[:, axis]
        assert sorted(starts[across, axis].tolist()) == [0.0, 1.0]
        assert sorted(np.concatenate([starts[across, other], ends[across, other]]).tolist()) == [-0.5, -0.5, 1.5, 1.5]


# ============================================================================================ viz.plots
def test_default_rows_are_the_joints_every_motion_has() -> None:
    """Module docstring: joint rows are "by default, chosen per motion by role (feet, knees), so that different
    skeletons can be compared"; ``_rows``: defaults are the keys every motion has. A three-joint body without feet
    beside the small humanoid: one row, the root (``plot_trajectories``: "default the root and the two feet"), and
    its three panels (X, Y, Z)."""
    offsets = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.3, 0.0], [0.0, 0.3, 0.0]], dtype=torch.float64)
    skeleton = Skeleton(["Hips", "Spine", "Head"], np.array([-1, 0, 1]), offsets)
    root = torch.tensor([[0.0, 1.0, 0.0]] * 2, dtype=torch.float64)
    bare = Motion(skeleton, rotvec_to_quat(torch.zeros(2, 3, 3, dtype=torch.float64)), root, 30.0, metadata={"units": "m"})
    fig = plots.plot_trajectories([small_motion(torch.tensor([[0.0, 1.0, 0.0]] * 2)), bare])
    assert [ax.get_title() for ax in fig.axes] == ["root: X", "root: Y (up)", "root: Z"]


def test_a_contact_to_the_last_frame_is_a_bar() -> None:
    """``plot_contacts``: "bars where [the contact labels are] True" (``_contact_rows``: "Horizontal bars for the True
    runs of each column"). At 10 fps, labels False, False, True, True for one foot: one bar from frame 2 (0.2 s),
    one frame period per frame, 0.2 s long, up to the clip's end (by hand); a run to the end is still a run."""
    m = small_motion(torch.tensor([[0.0, 1.0, 0.0]] * 4), fps=10.0)
    fig = plots.plot_contacts(m, contacts=[np.array([[False], [False], [True], [True]])])
    bars = [np.asarray(path.vertices) for coll in fig.axes[0].collections for path in coll.get_paths()]
    assert len(bars) == 1
    assert (bars[0][:, 0].min(), bars[0][:, 0].max()) == pytest.approx((0.2, 0.4))


def test_files_in_other_units_are_turned_to_metres() -> None:
    """``plot_trajectories``: files that differ "in up axis or unit: all turned Y-up, in metres" (the figure says
    so). The small body in metres beside the same body in centimetres (every length times 100): both roots at
    1 m height on the root's Y panel, in metres."""
    metres = small_motion(torch.tensor([[0.0, 1.0, 0.0]] * 2))
    sk = metres.skeleton
    cm = Motion(Skeleton(sk.names, np.asarray(sk.parents), sk.offsets * 100.0), metres.rotations,
                metres.root_positions * 100.0, 30.0, metadata={"units": "cm"})  # fmt: skip
    fig = plots.plot_trajectories([metres, cm], ["Hips"])
    assert fig.get_suptitle() == "the files differ in up axis or unit: all turned Y-up, in metres"
    ys = [np.asarray(line.get_ydata(), dtype=float) for line in fig.axes[1].get_lines()]
    np.testing.assert_allclose(ys, [[1.0, 1.0], [1.0, 1.0]], atol=1e-9)
    assert fig.axes[0].get_ylabel() == "m"


def test_plot_motions_draws_flexion_angles_by_default() -> None:
    """``plot_motions``: "``angle`` (default ``"flexion"``) [is used] by angles": a knee's row is labelled a
    flexion, and at rest (a straight leg) it is 0 degrees (a flexion by hand: the two leg bones are aligned)."""
    fig = plots.plot_motions(small_motion(torch.tensor([[0.0, 1.0, 0.0]] * 2)), "angles", ["LeftLeg"])
    assert fig.axes[0].get_ylabel() == "LeftLeg\nflexion (deg)"
    np.testing.assert_allclose(np.asarray(fig.axes[0].get_lines()[0].get_ydata(), dtype=float), 0.0, atol=1e-9)


# ============================================================================================ viz.charts
def test_a_panel_is_kept_when_only_one_method_has_its_key() -> None:
    """``plot_horizon_errors``: "Panels whose key no method has are left out": a key that one method of two has is
    not such a key, so the angle panel stays (with that method's line only) beside the root-relative MPJPE's."""
    result = {"horizons_ms": [80, 160], "methods": {"rnn": {"mpjpe": [0.01, 0.02], "angle_deg": [2.0, 3.0]},
                                                     "zero": {"mpjpe": [0.02, 0.03]}}}  # fmt: skip
    fig = charts.plot_horizon_errors(result)
    assert [a.get_ylabel() for a in fig.axes] == ["MPJPE, root-relative (% of height)", "mean angle error (degrees)"]
    angle = fig.axes[1]
    assert [line.get_label() for line in angle.get_lines()] == ["rnn"]
    np.testing.assert_allclose(np.asarray(angle.get_lines()[0].get_ydata(), dtype=float), [2.0, 3.0])


# ============================================================================================ viz.mp4
def _box(kind: bytes, payload: bytes) -> bytes:
    """An ISO-BMFF box with a 32-bit size (ISO/IEC 14496-12 4.2: size, type, payload; size counts the header)."""
    return (8 + len(payload)).to_bytes(4, "big") + kind + payload


def test_a_box_with_a_64_bit_size_is_read_whole(tmp_path: Path) -> None:
    """``_mp4_problem``: "its top-level boxes must run exactly to its end and include ``moov``". ISO/IEC 14496-12
    4.2: a size of 1 means the real size is the 64-bit ``largesize`` after the type. ftyp (16 bytes), an ``mdat``
    of 16 header bytes + 40 payload bytes sized that way (largesize 56) and a ``moov`` (8 bytes): a whole file."""
    mdat = (1).to_bytes(4, "big") + b"mdat" + (56).to_bytes(8, "big") + bytes(40)
    path = tmp_path / "large.mp4"
    path.write_bytes(_box(b"ftyp", b"isom\0\0\0\0") + mdat + _box(b"moov", b""))
    assert mp4._mp4_problem(path) is None
    # one payload byte fewer: the mdat still claims 56 bytes, so the 7 bytes after byte 16 + 56 = 72 are no box
    path.write_bytes(_box(b"ftyp", b"isom\0\0\0\0") + mdat[:-1] + _box(b"moov", b""))
    assert mp4._mp4_problem(path) == "the file is cut short at byte 72 of 79"


def test_a_last_box_of_size_0_runs_to_the_end(tmp_path: Path) -> None:
    """ISO/IEC 14496-12 4.2: "if size is 0, then this box is the last one in the file, and its contents extend to
    the end of the file"; the module's ``_mp4_problem`` reads it so ("the last box, to the end of the file"): a
    ``moov`` of size 0 with 12 bytes after its header ends the file whole."""
    path = tmp_path / "open_end.mp4"
    path.write_bytes(_box(b"ftyp", b"isom\0\0\0\0") + (0).to_bytes(4, "big") + b"moov" + bytes(12))
    assert mp4._mp4_problem(path) is None


def test_the_context_of_each_ffmpeg_message_is_stripped() -> None:
    """``_FFMPEG_CONTEXT``: "The context ffmpeg puts before a message, ``[out#0/mp4 @ 0x55d0c1a2b640] `` (one or
    more)": a line with two contexts keeps only its message."""
    log = io.BytesIO(b"[out#0/mp4 @ 0x55d0c1a2b640] [mp4 @ 0x55d0c1a2c000] Error writing trailer: I/O error\n\n")
    assert mp4._encoder_messages(log) == ["Error writing trailer: I/O error"]


def test_the_first_message_is_the_error_and_its_system_text_its_number() -> None:
    """``_encoder_error``: "what ffmpeg ``said`` first (its later lines are consequences ...)"; "The error number is
    the file system's error that the message names": ENOSPC, named once (``os.strerror`` text at the front, not
    again at the end of ffmpeg's line); a failure after frames were taken is "failed"."""
    tmp, target = Path("/out/.tmp-clip.mp4"), Path("/out/clip.mp4")
    said = ["Error writing trailer: No space left on device", "Task finished with error code: -28"]
    err = mp4._encoder_error(tmp, target, said, 228, None)
    assert err.errno == errno.ENOSPC
    assert err.strerror == f"{os.strerror(errno.ENOSPC)}: the video encoder (ffmpeg) failed: Error writing trailer"


def test_a_file_size_signal_is_efbig_and_a_broken_pipe_says_stopped() -> None:
    """``_encoder_error``: "else the signal that killed it, the broken pipe's message or its exit status"; a
    process killed by SIGXFSZ is "over the file size limit" (EFBIG); a broken pipe (the writer's OSError) makes the
    encoder "stopped", and an exit status of 0 is no signal (``status < 0`` is)."""
    tmp, target = Path("/out/.tmp-clip.mp4"), Path("/out/clip.mp4")
    killed = mp4._encoder_error(tmp, target, [], -signal.SIGXFSZ, None)
    assert killed.errno == errno.EFBIG and str(killed.strerror).endswith("failed: killed by SIGXFSZ")
    broken = mp4._encoder_error(tmp, target, [], 0, BrokenPipeError(errno.EPIPE, "Broken pipe"))
    assert broken.errno is None
    assert broken.strerror == "the video encoder (ffmpeg) stopped: [Errno 32] Broken pipe"


def test_the_default_class_order_is_sorted() -> None:
    """``confusion_matrix``: "Row and column order (default: the sorted names that occur in either)": classes met
    as walk, run, bow are ordered bow, run, walk, and the counts follow that order (by hand)."""
    counts, labels = charts.confusion_matrix(["walk", "run", "bow"], ["walk", "bow", "bow"])
    assert labels == ["bow", "run", "walk"]
    assert counts.tolist() == [[1, 0, 0], [1, 0, 0], [0, 0, 1]]


def _config(folder: Path, training: dict) -> Path:
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"format": "x", "training": training}), encoding="utf-8")
    return folder


def test_an_ensemble_member_is_counted_from_0(tmp_path: Path) -> None:
    """``training_run``: "An ensemble made by ``combine`` keeps each member's training record: ``member`` picks one
    (0-based)"; members of a two-member ensemble are 0 and 1, so -1 is refused, not read as the last one."""
    members = [{"history": [{"epoch": 1, "train_loss": float(k)}]} for k in (1, 2)]
    folder = _config(tmp_path / "ensemble", {"members": members})
    assert charts.training_run(folder, member=1).history == members[1]["history"]
    with pytest.raises(FormatError, match="member -1 asked for; this ensemble has members 0 to 1"):
        charts.training_run(folder, member=-1)


def test_a_run_keeps_its_last_epoch_only_when_its_config_says_last(tmp_path: Path) -> None:
    """``TrainingRun.keeps_last``: "Whether the folder holds the last epoch's weights (``--keep last``) rather than
    the best epoch's; ``False`` where no ``config.json`` says": a loop record without ``keep`` does not say."""
    history = [{"epoch": 1, "train_loss": 1.0}]
    assert not charts.training_run(_config(tmp_path / "plain", {"history": history, "loop": {}})).keeps_last
    assert charts.training_run(_config(tmp_path / "last", {"history": history, "loop": {"keep": "last"}})).keeps_last


def test_one_visible_panel_per_quantity_and_no_seconds() -> None:
    """``plot_training_history``: "one panel per logged quantity"; "``seconds`` is not plotted". Five quantities
    (and seconds) fill five panels of a 4-column grid; the other three cells of its two rows are not shown."""
    keys = ["train_loss", "train_kl", "val_a", "val_b", "val_c"]
    history = [{"epoch": e, **{k: float(e + i) for i, k in enumerate(keys)}, "seconds": 2.0} for e in (1, 2)]
    fig = charts.plot_training_history(history)
    assert [ax.get_title() for ax in fig.axes if ax.get_visible()] == keys
