"""An MP4 whose encoder fails late is never published: imageio-ffmpeg neither checks ffmpeg's exit status when its
writer is closed nor keeps ffmpeg's messages, so a full disk at the end of the encoding (the index, ``moov``, is
written last) had printed "wrote ..." and published a truncated MP4 that players refuse ("moov atom not found").
Now the render fails with one line naming the output and ffmpeg's reason, and leaves nothing behind.

The encoder is an ffmpeg of our own making (``IMAGEIO_FFMPEG_EXE``, which imageio-ffmpeg honours): a script that
fails as ffmpeg does on a full disk, or the real ffmpeg under a file size limit (a real late failure without root
or a full file system).
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

import skelanim
from skelanim.cli import main
from skelanim.core.motion import Motion
from skelanim.data.samples import sample_path
from skelanim.viz import video

WALK = str(sample_path("walk"))

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the stand-in encoders are POSIX shell scripts")


@pytest.fixture(scope="module")
def walk() -> Motion:
    return skelanim.load(sample_path("walk"))


def encoder(folder: Path, body: str) -> str:
    """An executable shell script ``folder/ffmpeg`` running ``body``; its path."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "ffmpeg"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(script)


def real_ffmpeg() -> str:
    import imageio_ffmpeg

    return imageio_ffmpeg.get_ffmpeg_exe()


#: ffmpeg on a full disk: it takes every frame, writes the first 64 KiB, fails to write its trailer and exits 228
#: (AVERROR(ENOSPC) & 0xff), its messages prefixed by their context as ffmpeg's are.
FULL_DISK = """for last; do :; done
cat > /dev/null
head -c 65536 /dev/zero > "$last"
echo "[out#0/mp4 @ 0x5581e2f3c640] Error writing trailer: No space left on device" >&2
echo "[out#0/mp4 @ 0x5581e2f3c640] Error closing file: No space left on device" >&2
exit 228
"""


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code: int, err: str, *needles: str) -> str:
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (code, err)
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert "Traceback" not in err and ".tmp-" not in err
    return lines[0]


def test_an_encoder_that_fails_at_the_end_is_one_line_naming_the_output_and_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``skelanim render -o out.mp4`` on a full disk (the audit's repro): exit 2, one line with the file and the
    disk's reason (from ffmpeg's messages, its first: the later ones are consequences), no MP4 nor temporary file."""
    monkeypatch.setenv("IMAGEIO_FFMPEG_EXE", encoder(tmp_path / "bin", FULL_DISK))
    folder = tmp_path / "videos"
    folder.mkdir()
    out = folder / "walk.mp4"
    code, stdout, err = run_cli(capsys, "render", WALK, "-o", out, "--fps", "10", "--size", "64x48", "--no-progress")
    line = one_line_error(code, err, f"{out}: No space left on device", "ffmpeg", "Error writing trailer")
    assert "0x5581e2f3c640" not in line and "wrote" not in stdout
    assert list(folder.iterdir()) == []


def test_an_encoder_failure_without_a_known_cause_says_what_ffmpeg_said(
    walk: Motion, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A late failure that is not the disk's: the OS error about the output says ffmpeg's first message (the
    temporary file's name in it replaced by the output's) or, with none, its exit status."""
    folder = tmp_path / "videos"
    folder.mkdir()
    out = folder / "walk.mp4"
    said = 'cat > /dev/null\nfor last; do :; done\necho "[mp4 @ 0x1] Bad muxing of $last" >&2\necho Later >&2\nexit 1\n'
    cases = [(said, f"the video encoder (ffmpeg) failed: Bad muxing of {out}"),
             ("cat > /dev/null\nexit 3\n", "the video encoder (ffmpeg) failed: exit status 3")]  # fmt: skip
    for body, expected in cases:
        monkeypatch.setenv("IMAGEIO_FFMPEG_EXE", encoder(tmp_path / f"bin{len(body)}", body))
        with pytest.raises(OSError) as caught:
            video.render_video(walk[:5], out, fps=10, size=(64, 48))
        assert caught.value.filename == str(out), caught.value
        assert caught.value.strerror.startswith(expected) and "\n" not in caught.value.strerror, caught.value
        assert "Later" not in caught.value.strerror and ".tmp-" not in caught.value.strerror
        assert list(folder.iterdir()) == []


@pytest.mark.parametrize("signal_kept", [True, False], ids=["killed-by-SIGXFSZ", "File-too-large"])
def test_the_real_ffmpeg_failing_late_publishes_nothing(
    walk: Motion, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signal_kept: bool
) -> None:
    """The real ffmpeg under a file size limit of 4 or 8 KiB (``ulimit -f 8``, in blocks of 512 or 1024 bytes): its
    output (about 23 KiB) fits in its 32 KiB write buffer, so its first write comes once every frame was sent, a
    late failure as on a full disk. Killed by SIGXFSZ, or (the signal ignored) reporting "File too large": either
    way an OS error ``EFBIG`` about the output, and no file."""
    trap = "" if signal_kept else "trap '' XFSZ\n"
    limited = encoder(tmp_path / "bin", f'{trap}ulimit -f 8\nexec "{real_ffmpeg()}" "$@"\n')
    monkeypatch.setenv("IMAGEIO_FFMPEG_EXE", limited)
    folder = tmp_path / "videos"
    folder.mkdir()
    out = folder / "walk.mp4"
    with pytest.raises(OSError) as caught:
        video.render_video(walk[:20], out, fps=30, size=(160, 120))
    assert caught.value.filename == str(out)
    assert caught.value.strerror.startswith("File too large: the video encoder (ffmpeg) failed: "), caught.value
    assert ("killed by SIGXFSZ" in caught.value.strerror) is signal_kept, caught.value
    assert list(folder.iterdir()) == []


def test_an_encoder_whose_exit_is_not_seen_still_publishes_no_truncated_mp4(
    walk: Motion, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the writer's ffmpeg process cannot be seen (another imageio-ffmpeg), the file itself is checked: one
    cut short, without its index, is refused."""
    import imageio_ffmpeg

    whole = tmp_path / "whole.mp4"
    video.render_video(walk[:10], whole, fps=10, size=(64, 48))
    data = whole.read_bytes()
    assert b"moov" in data
    cut = data[: data.index(b"moov") - 4]  # ftyp, free, mdat: all but the index

    def truncating(path: str, *args: object, **kwargs: object):
        try:
            while True:
                yield
        finally:
            Path(path).write_bytes(cut)

    monkeypatch.setattr(imageio_ffmpeg, "write_frames", truncating)
    folder = tmp_path / "videos"
    folder.mkdir()
    out = folder / "walk.mp4"
    with pytest.raises(OSError) as caught:
        video.render_video(walk[:10], out, fps=10, size=(64, 48))
    assert caught.value.filename == str(out) and "incomplete MP4" in caught.value.strerror, caught.value
    assert list(folder.iterdir()) == []


def test_a_render_that_succeeds_is_complete_and_quiet(walk: Motion, tmp_path: Path,
                                                      capfd: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """The normal path (a guard, it passed before): the MP4 reads back whole, nothing is printed, and the process's
    stderr is its own again after ffmpeg was started with a log of its own."""
    import imageio_ffmpeg

    out = tmp_path / "walk.mp4"
    video.render_video(walk[:10], out, fps=10, size=(64, 48))
    frames, _ = imageio_ffmpeg.count_frames_and_secs(str(out))
    assert frames == video.frame_count([walk[:10]], 10)
    print("after the render", file=sys.stderr, flush=True)
    os.write(2, b"and from the descriptor\n")
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err == "after the render\nand from the descriptor\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["walk.mp4"]
