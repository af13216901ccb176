"""Ctrl-C at the command line: exit code 130 and no traceback (click ends the run with ``SystemExit(130)``)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import skelanim
from skelanim.cli import main


def test_ctrl_c_exits_130_without_a_traceback(monkeypatch, tmp_path, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(skelanim, "load", interrupted)
    (tmp_path / "a.bvh").write_text("HIERARCHY\n")
    assert main(["info", str(tmp_path / "a.bvh")]) == 130
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and captured.out == ""


def test_ctrl_c_while_the_commands_import_exits_130_without_a_traceback(tmp_path):
    """The console script imports the commands (and torch, about a second) after it can answer Ctrl-C: a SIGINT
    0.3 s after the start, during the imports here, ends the run with 130 and no traceback. Before, the script
    imported them at its first line and a Ctrl-C there printed torch's import traceback."""
    # Python's own SIGINT handler, as in a terminal (a test runner's worker may ignore SIGINT, and children inherit that)
    code = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler); import skelanim.console as c; c.entry_point()"
    script = [sys.executable, "-c", code, "info", "x.bvh"]
    start = time.monotonic()
    proc = subprocess.Popen(script, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (proc.returncode, err)
    assert "Traceback" not in err and out == ""
    assert time.monotonic() - start < 30


def test_the_package_imports_without_torch_until_it_is_used():
    """``import skelanim`` is light (the public names load on first use), which is what lets the console script
    answer Ctrl-C before torch is in; ``skelanim.Motion`` and ``from skelanim import load`` still work."""
    code = ("import sys, skelanim; light = 'torch' not in sys.modules; from skelanim import load; "
            "print(light, 'torch' in sys.modules, skelanim.Motion.__name__, load.__module__, "
            "skelanim.ops.normalize.__module__, hasattr(skelanim, 'nope'))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "True", "Motion", "skelanim.io", "skelanim.ops.normalize", "False"]


def test_sigterm_ends_a_write_as_ctrl_c_does_and_leaves_no_temporary_file(mocap_dir, tmp_path):
    """A CLI audit: ``kill -TERM`` of ``render`` left its hidden temporary GIF (552 KB, mode 0600) beside the output,
    as Python killed by a signal runs no cleanup. SIGTERM now ends the command as Ctrl-C does: exit 143, nothing
    left in the output folder, no traceback."""
    out = tmp_path / "out"
    script = [sys.executable, "-m", "skelanim", "render", str(mocap_dir / "cmu_cgspeed_mb" / "01_01.bvh"),
              "-o", str(out / "r.gif"), "--fps", "50"]  # fmt: skip
    proc = subprocess.Popen(script, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (out.is_dir() and any(out.iterdir())):  # the temporary file exists
        time.sleep(0.05)
    assert out.is_dir() and any(out.iterdir()), "the render never started writing"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, (proc.returncode, err[-500:])
    assert "Traceback" not in err and not out.exists()  # no temporary file, and the folder made for it removed


def test_a_termination_signal_the_process_ignores_stays_ignored():
    """A review: the SIGTERM/SIGHUP handling had taken over a SIGHUP that nohup set to be ignored, so a detached
    training run died when its terminal closed."""
    from skelanim.cli import TERMINATING, _interrupt_on_termination

    hup = [sig for sig in TERMINATING if sig != signal.SIGTERM]
    before = {sig: signal.getsignal(sig) for sig in TERMINATING}
    try:
        for sig in hup:
            signal.signal(sig, signal.SIG_IGN)
        with _interrupt_on_termination():
            assert all(signal.getsignal(sig) is signal.SIG_IGN for sig in hup)
            assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_IGN, signal.SIG_DFL)
        assert all(signal.getsignal(sig) is signal.SIG_IGN for sig in hup)
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def test_the_console_script_runs_outside_the_main_thread(monkeypatch, capsys):
    """A review: deferring Ctrl-C during the import sets a signal handler, which only the main thread may do."""
    import threading

    from skelanim import console

    monkeypatch.setattr(sys, "argv", ["skelanim", "info", "no-such-file.bvh"])
    codes: list[object] = []

    def run() -> None:
        try:
            console.entry_point()
        except SystemExit as done:
            codes.append(done.code)
        except Exception as err:  # noqa: BLE001 - what the test is about
            codes.append(err)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(60)
    assert codes == [2], codes  # the command's own one-line error, not a ValueError from signal.signal


def test_an_error_after_a_progress_bar_starts_its_own_line_in_a_log(capsys):
    """A CLI review: a bar that clears itself on closing (``leave=False``) left ``\\r<spaces>\\r`` on its line, and in a
    log the error line followed it on the same line, so ``grep '^error:'`` found nothing."""
    import sys

    from tqdm import tqdm

    from skelanim.cli import _error

    bar = tqdm(total=10, desc="loading clips", leave=False, file=sys.stderr)
    bar.update(3)
    _error("the split 'styel' names no style")
    lines = capsys.readouterr().err.split("\n")  # a log's lines (str.splitlines would split at the bar's \r too)
    assert "error: the split 'styel' names no style" in lines
    assert not [line for line in lines if "error:" in line and not line.startswith("error:")]


def test_a_usage_error_before_the_command_runs_names_the_command(capsys):
    """A CLI review: an option given without its value (``convert IN OUT --fps``) was the only usage error without
    the ``skelanim CMD:`` prefix and the ``(see ... --help)`` pointer."""
    assert main(["convert", "in.bvh", "out.bvh", "--fps"]) == 2
    assert capsys.readouterr().err.strip() == ("error: skelanim convert: Option '--fps' requires an argument. "
                                               "(see skelanim convert --help)")  # fmt: skip
    assert main(["ik", "solve", "in.npz", "-o"]) == 2
    assert capsys.readouterr().err.strip().startswith("error: skelanim ik solve: Option '-o' requires an argument.")


def test_dash_h_is_help_on_every_level(capsys):
    """A CLI review: ``-h`` was 'No such option' everywhere (``retarget``'s default-command shim already counted it a
    help word)."""
    for argv in (["-h"], ["info", "-h"], ["retarget", "-h"], ["ik", "solve", "-h"], ["learn", "predict", "eval", "-h"]):
        assert main(argv) == 0, argv
        out = capsys.readouterr().out
        assert "Usage: skelanim " + " ".join(argv[:-1]) in " ".join(out.split()), argv


def test_version_prints_the_package_version_and_exits_0(capsys):
    """`skelanim --version` / `-V` (it had been "No such option"): the installed metadata's version, nothing else."""
    from importlib.metadata import version

    for flag in ("--version", "-V"):
        assert main([flag]) == 0
        assert capsys.readouterr().out == f"skelanim {version('skelanim')}\n"
