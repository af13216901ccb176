"""Ctrl-C at the command line: exit code 130 and no traceback (click ends the run with ``SystemExit(130)``)."""

from __future__ import annotations

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
