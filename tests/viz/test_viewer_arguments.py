"""The viewer's arguments: one bare :class:`Motion` where a sequence is expected, and ``write_viewer``'s order."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import skelanim
from skelanim.data.samples import sample_path
from skelanim.viz import viewer


def _walk() -> skelanim.Motion:
    return skelanim.load(sample_path("walk"))[:12]


def _motions(page: str) -> list[dict]:
    data = re.search(r'id="skelanim-data">(.*?)</script>', page, re.DOTALL)
    assert data is not None
    return json.loads(data.group(1))["motions"]


def test_a_bare_motion_is_one_motion_as_in_a_list() -> None:
    """A Motion has len() and indexing: iterated it gave 12 one-frame motions in the page."""
    m = _walk()
    bare, wrapped = viewer.build_viewer_html(m, labels=["walk"]), viewer.build_viewer_html([m], labels=["walk"])
    assert bare == wrapped
    assert [(p["name"], p["frames"]) for p in _motions(bare)] == [("walk", 12)]
    assert viewer.build_viewer_html(m) == viewer.build_viewer_html([m])


def test_write_viewer_takes_a_bare_motion(tmp_path: Path) -> None:
    m = _walk()
    bare = viewer.write_viewer(tmp_path / "bare.html", m).read_text(encoding="utf-8")
    wrapped = viewer.write_viewer(tmp_path / "list.html", [m]).read_text(encoding="utf-8")
    assert bare == wrapped and len(_motions(bare)) == 1


@pytest.mark.parametrize("first", ["list", "motion"])
@pytest.mark.parametrize("kind", [str, Path])
def test_write_viewer_with_the_path_second_says_the_order(tmp_path: Path, first: str, kind: type) -> None:
    m = _walk()
    out = tmp_path / "v.html"
    motions = [m] if first == "list" else m
    with pytest.raises(TypeError, match=re.escape("write_viewer(path, motions)")) as info:
        viewer.write_viewer(motions, kind(out))  # type: ignore[arg-type]
    assert "\n" not in str(info.value)
    assert not out.exists()
