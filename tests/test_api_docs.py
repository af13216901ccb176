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


def _public_packages() -> list[ModuleType]:
    import skelanim

    names = ["skelanim"] + [f"skelanim.{p.name}" for p in Path(skelanim.__file__).parent.iterdir()
                            if (p / "__init__.py").is_file() and not p.name.startswith("_") and p.name != "cli"]  # fmt: skip
    return [importlib.import_module(n) for n in sorted(names)]


def test_a_name_a_package_exports_is_in_the_all_of_the_module_that_defines_it() -> None:
    """``from skelanim.ops.mirror import *`` and the module's API page give what ``skelanim.ops`` exports from it."""
    missing = []
    for package in _public_packages():
        for name in getattr(package, "__all__", ()):
            obj = getattr(package, name)
            home = getattr(obj, "__module__", None)
            if isinstance(obj, ModuleType) or not home or not home.startswith("skelanim.") or "._" in home:
                continue
            module = importlib.import_module(home)
            if hasattr(module, "__all__") and name not in module.__all__ and getattr(module, name, None) is obj:
                missing.append(f"{home}.{name}")
    assert missing == []


def test_the_module_tables_of_package_docstrings_name_what_each_module_holds() -> None:
    """A package docstring's table row ``:mod:`.x`  :func:`f`, :class:`C` ...`` names objects of ``x`` (or of the
    module a parenthesis names: ``(:mod:`.y`: :func:`g`)``)."""
    wrong = []
    for package in _public_packages():
        for line in (package.__doc__ or "").splitlines():
            row = re.match(r"\s*:mod:`\.(\w+)`\s+(.*)", line)
            if not row:
                continue
            module = importlib.import_module(f"{package.__name__}.{row.group(1)}")
            rest = row.group(2)
            for group in re.findall(r"\((:mod:[^)]*)\)", rest):
                for inner, names in (re.match(r"\s*:mod:`\.(\w+)`:(.*)", part).groups() for part in group.split(";")):
                    other = importlib.import_module(f"{package.__name__}.{inner}")
                    wrong += [f"{other.__name__}.{n}" for n in re.findall(r":(?:func|class):`(\w+)`", names)
                              if not hasattr(other, n)]  # fmt: skip
            rest = re.sub(r"\(:mod:[^)]*\)", "", rest)
            wrong += [f"{module.__name__}.{n}" for n in re.findall(r":(?:func|class):`(\w+)`", rest) if not hasattr(module, n)]
    assert wrong == []


def test_every_name_a_package_docstring_lists_is_reachable_from_the_package() -> None:
    """An API review: ``skelanim.learn``'s docstring listed :class:`MotionMLP` (the shipped ``--arch mlp``),
    :func:`predict_retargeted`, :class:`MotionCVAE`, :class:`TemporalDiscriminator` and :class:`Members`, and
    ``skelanim.learn.MotionMLP`` was an AttributeError. Every unqualified ``:class:``/``:func:``/``:data:`` name in
    a package's docstring must be an attribute of the package, and in its ``__all__`` where it has one."""
    import pkgutil

    import skelanim

    packages = ["skelanim"] + [f"skelanim.{m.name}" for m in pkgutil.iter_modules(skelanim.__path__) if m.ispkg]
    assert "skelanim.learn" in packages and "skelanim.ops" in packages
    missing = []
    for name in packages:
        module = importlib.import_module(name)
        exported = getattr(module, "__all__", None)
        for target in re.findall(r":(?:class|func|data):`([A-Za-z_]\w*)`", module.__doc__ or ""):
            if not hasattr(module, target) or (exported is not None and target not in exported):
                missing.append(f"{name}.{target}")
    assert missing == []
