"""``skelanim stream`` of joint positions: ``--scale`` and ``--fps`` as ``ik solve`` takes them (found by a read-only
review: a metres ``.npy`` had been refused with advice to use ``--scale``, which ``stream`` did not take, and a
``.npy`` always played at 30 fps)."""

from __future__ import annotations

import skelanim
from skelanim.cli import main
from skelanim.serve.vmc import AvatarStream


def test_cli_streams_positions_in_metres_at_their_rate_with_scale_and_fps(mocap_dir, tmp_path, monkeypatch, capsys):
    """Joint positions are solved by the IK model first, which takes centimetres: a metres ``.npy`` had been
    refused with advice (``--scale 100``) that ``stream`` did not take, and a ``.npy`` (no rate in the file) always
    played at 30 fps. ``--scale`` and ``--fps`` as ``ik solve`` has them: the metres file times 100 at 120 fps
    streams the poses of the centimetres file at 120 fps; on a motion file they are refused in one line."""
    import numpy as np

    from skelanim.io.positions import JointPositions

    played = []
    monkeypatch.setattr(AvatarStream, "play", lambda self, frames, **kw: played.append(frames) or 0)
    walk = skelanim.load(mocap_dir / "bandai_namco_1" / "dataset-1_walk_normal_001.bvh")[:12]
    centimetres = JointPositions.from_motion(walk)
    np.save(tmp_path / "cm.npy", np.asarray(centimetres.positions))
    np.save(tmp_path / "m.npy", np.asarray(centimetres.positions) / 100.0)
    assert main(["stream", str(tmp_path / "m.npy"), "--frames", "1", "--no-progress"]) == 2
    assert "metres" in capsys.readouterr().err
    assert main(["stream", str(tmp_path / "m.npy"), "--scale", "100", "--fps", "120", "--no-progress"]) == 0
    assert main(["stream", str(tmp_path / "cm.npy"), "--fps", "120", "--no-progress"]) == 0
    scaled, plain = played
    assert scaled.fps == plain.fps == 120.0 and scaled.num_frames == 12
    np.testing.assert_allclose(scaled.positions.numpy(), plain.positions.numpy(), atol=1e-6)
    np.testing.assert_allclose(scaled.rotations.numpy(), plain.rotations.numpy(), atol=1e-5)
    capsys.readouterr()
    bvh = mocap_dir / "bandai_namco_1" / "dataset-1_walk_normal_001.bvh"
    assert main(["stream", str(bvh), "--scale", "100"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--scale" in err[0] and "is a motion file" in err[0]
