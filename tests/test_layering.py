"""Imports run downhill (DESIGN.md): cli -> models (ik, retarget, learn) -> data, metrics, viz -> io, ops, nn -> core.

Every ``import`` and ``from ... import`` in ``src/skelanim`` is read from the syntax tree, wherever it stands
(module level, inside a function, under ``TYPE_CHECKING``), relative imports resolved. A module may import
its own floor and the floors below; an import of a higher floor fails here with the file, the line and
the two floors. A new top-level module or package fails too until it is given a floor below.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import skelanim

#: Floor of each top-level module or package of ``skelanim``; a module may import its floor and lower ones.
FLOORS: dict[str, int] = {
    "errors": 0,  # the typed errors, importable from everywhere
    "_modules": 0,  # each package's __getattr__ that imports its modules on first use
    "core": 0,
    "io": 1,
    "ops": 1,
    "nn": 1,
    "__init__": 1,  # the public API: load() and save() from io, Skeleton and Motion from core, __version__
    "data": 2,
    "metrics": 2,
    "viz": 2,
    "ik": 3,
    "retarget": 3,
    "learn": 3,
    "serve": 3,  # real-time streaming of the models' output
    "cli": 4,
    "__main__": 4,
    "console": 4,  # the console script: imports the cli inside its function
}
FLOOR_NAMES = ("core", "io/ops/nn", "data/metrics/viz", "models", "cli")


def _targets(node: ast.Import | ast.ImportFrom, package: list[str], root: Path) -> list[list[str]]:
    """What ``node`` imports from skelanim, as module paths below it (``[]`` is ``skelanim`` itself).

    ``package`` is the importing module's package below skelanim (``["io"]`` for ``skelanim.io.bvh``);
    ``root`` the package folder, to tell ``from skelanim import io`` (a module) from ``__version__``.
    """
    if isinstance(node, ast.Import):
        names = [alias.name.split(".") for alias in node.names]
    elif node.level:  # relative: level 1 is the importing module's own package
        base = ["skelanim"] + package[: len(package) - node.level + 1]
        names = [base + node.module.split(".")] if node.module else [base + [a.name] for a in node.names]
    elif node.module == "skelanim":  # from skelanim import io, __version__: a module, or a name of the root
        modules = [a.name for a in node.names]
        return [[m] if (root / m).is_dir() or (root / f"{m}.py").is_file() else [] for m in modules]
    else:
        names = [(node.module or "").split(".")]
    return [name[1:] for name in names if name[0] == "skelanim"]


def upward_imports(root: Path) -> list[str]:
    """Every import in the package folder ``root`` of a higher floor than the importer's, as messages.

    Raises ``KeyError`` naming a top-level module or package that :data:`FLOORS` does not place.
    """
    found = []
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)  # ["io", "bvh"], ["io", "__init__"], ["errors"]
        here = parts[0]
        if here not in FLOORS:
            raise KeyError(f"{path}: skelanim.{here} has no floor; add it to FLOORS in {__file__}")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _targets(node, parts[:-1], root):
                there = target[0] if target else "__init__"
                if there not in FLOORS:
                    raise KeyError(f"{path}:{node.lineno}: skelanim.{there} has no floor; add it to FLOORS")
                if FLOORS[there] > FLOORS[here]:
                    found.append(
                        f"{path.relative_to(root.parent)}:{node.lineno}: {here} ({FLOOR_NAMES[FLOORS[here]]}) "
                        f"imports skelanim.{'.'.join(target)} ({FLOOR_NAMES[FLOORS[there]]})"
                    )
    return found


def test_imports_run_downhill() -> None:
    root = Path(skelanim.__file__).parent
    assert len(list(root.rglob("*.py"))) > 50  # the scan sees the package
    assert upward_imports(root) == []


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "skelanim"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_scan_finds_upward_imports_of_every_form(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "__init__.py": "from skelanim.io import load\n",
            "core/__init__.py": "",
            "core/motion.py": "import torch\nfrom skelanim.errors import ShapeError\n",
            "core/late.py": "def f():\n    from skelanim.data.samples import sample_path\n",  # lazy, two floors up
            "io/__init__.py": "",
            "io/gltf.py": "from skelanim import __version__\nfrom ..core import motion\nfrom . import atomic\n",
            "io/bad.py": "from ..viz import plots\nimport skelanim.cli.demo\nfrom skelanim import learn\n",
            "cli/demo.py": "from skelanim.learn import generate\nfrom skelanim import viz\n",
            "learn/__init__.py": "",
            "viz/__init__.py": "from skelanim.core import motion\n",
        },
    )
    found = upward_imports(root)
    assert [line.split(": ", 1)[0] for line in found] == [
        "skelanim/core/late.py:2",
        "skelanim/io/bad.py:1",
        "skelanim/io/bad.py:2",
        "skelanim/io/bad.py:3",
    ]
    assert found[0].endswith("core (core) imports skelanim.data.samples (data/metrics/viz)")
    assert found[1].endswith("io (io/ops/nn) imports skelanim.viz (data/metrics/viz)")


def test_the_scan_wants_a_floor_for_every_top_level_name(tmp_path: Path) -> None:
    with pytest.raises(KeyError, match="skelanim.render has no floor"):
        upward_imports(_tree(tmp_path, {"render/__init__.py": ""}))
    with pytest.raises(KeyError, match="skelanim.render has no floor"):
        upward_imports(_tree(tmp_path, {"cli/x.py": "from skelanim.render import gl\n"}))


def test_every_module_is_reachable_as_an_attribute_without_an_import() -> None:
    """``import skelanim`` then ``skelanim.viz.plots`` (the package docstring's promise): a review found 40
    modules, among them ``viz.plots``, ``serve.vmc`` and ``io.positions``, that raised AttributeError until
    imported by name. A fresh interpreter, each module reached before any import of it; a misspelt name still
    raises AttributeError."""
    import subprocess
    import sys

    src = Path(skelanim.__file__).parent
    names = sorted(f"{p.parent.name}.{p.stem}" for p in src.glob("*/*.py")
                   if not p.stem.startswith("_") and p.parent.name != "cli")  # fmt: skip
    script = "\n".join([
        "import sys, skelanim", "reached = []",
        f"for name in {names!r}:",
        "    package, module = name.split('.')",
        "    if f'skelanim.{name}' in sys.modules: continue",
        "    getattr(getattr(skelanim, package), module); reached.append(name)",
        "try: skelanim.viz.plotz\nexcept AttributeError as e: print('refused', e)",
        "print(len(reached))",
    ])  # fmt: skip
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr.strip().splitlines()[-1]
    lines = done.stdout.split("\n")
    assert lines[0] == "refused module 'skelanim.viz' has no attribute 'plotz'"
    assert int(lines[1]) >= 10  # modules not already imported by the others when reached
