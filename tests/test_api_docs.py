"""The API reference (``docs/api.py``, pdoc) builds without a warning and documents every public name."""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

DOCS_SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "api.py"


def _docs_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("skelanim_docs_api", DOCS_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_public_module_gets_a_page_and_every_exported_name_an_entry(tmp_path: Path) -> None:
    api = _docs_module()
    out = tmp_path / "api"
    modules = api.build(out)
    assert "skelanim.core.kinematics" in modules and "skelanim.io.bvh" in modules
    assert not [m for m in modules if m.startswith("skelanim.cli") or "._" in m]
    missing_pages = [m for m in modules if not (out / (m.replace(".", "/") + ".html")).is_file()]
    assert missing_pages == []
    unlisted = []
    for name in modules:
        module = importlib.import_module(name)
        page = (out / (name.replace(".", "/") + ".html")).read_text(encoding="utf-8")
        anchors = set(re.findall(r'id="([^"]+)"', page))
        for exported in getattr(module, "__all__", ()):
            if isinstance(getattr(module, exported, None), ModuleType):
                continue  # a submodule: its own page
            if exported not in anchors:
                unlisted.append(f"{name}.{exported}")
    assert unlisted == []
    assert (out / "index.html").is_file() and (out / "search.js").is_file()


def test_a_name_in_all_that_does_not_exist_fails_the_build_and_keeps_the_old_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "src" / "brokenpkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""A package."""\n__all__ = ["ok", "nothing"]\n\n\ndef ok() -> int:\n'
                                         '    """Fine."""\n    return 1\n')
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    monkeypatch.delitem(sys.modules, "brokenpkg", raising=False)
    out = tmp_path / "api"
    out.mkdir()
    (out / "index.html").write_text("earlier build")
    api = _docs_module()
    with pytest.raises(RuntimeError, match="nothing"):
        api.build(out, root=package)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging folder left
    assert (out / "index.html").read_text() == "earlier build"
    (package / "__init__.py").write_text('"""A package."""\n__all__ = ["ok"]\n\n\ndef ok() -> int:\n'
                                         '    """Fine."""\n    return 1\n')
    monkeypatch.delitem(sys.modules, "brokenpkg", raising=False)
    assert api.build(out, root=package) == ["brokenpkg"]
    assert 'id="ok"' in (out / "brokenpkg.html").read_text(encoding="utf-8")
