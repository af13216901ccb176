"""Build skelanim's API reference: one HTML page per public module, from the docstrings (pdoc, numpy style).

    python docs/api.py [OUT]        # default out/docs/api; open OUT/index.html

Every module under ``src/skelanim`` whose dotted name has no part starting with ``_`` is documented, the
command-line modules (``skelanim.cli``, documented by ``--help`` and the README) excepted. A warning from pdoc (a
name in ``__all__`` that does not exist, a module that fails to import, a docstring it cannot read) fails the build:
the test suite builds the reference too (``tests/test_api_docs.py``).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import warnings
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "src" / "skelanim"
DEFAULT_OUT = Path("out/docs/api")


def public_modules(root: Path = PACKAGE_ROOT) -> list[str]:
    """Dotted names of the public modules under ``root`` (an importable package's folder), packages before their
    modules; its ``cli`` subpackage left out."""
    names = []
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if any(part.startswith("_") for part in parts) or parts[1:2] == ["cli"]:
            continue
        names.append(".".join(parts))
    return sorted(names, key=lambda name: name.split("."))


def build(out: Path = DEFAULT_OUT, root: Path = PACKAGE_ROOT) -> list[str]:
    """Write the reference of the package at ``root`` into ``out`` and return the documented module names.

    Raises
    ------
    RuntimeError
        With pdoc's warnings, one per line, if it gave any; ``out`` is then left as it was (the pages are written
        to a temporary folder beside it and moved there when pdoc is done).
    """
    import pdoc
    import pdoc.extract
    import pdoc.render

    wanted = public_modules(root)
    specs: list[str] = []
    covered: set[str] = set()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name in wanted:  # a package's spec brings the submodules its __all__ names: list each module once
            if name not in covered:
                specs.append(name)
                covered.update(pdoc.extract.walk_specs([name]))
        specs.append(rf"!({root.name}\.cli|.*\._)")  # what a package's __all__ brings of the private and CLI modules
        pdoc.render.configure(docformat="numpy", search=True, show_source=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
        try:
            pdoc.pdoc(*specs, output_directory=staging)
        except BaseException:
            shutil.rmtree(staging)
            raise
    problems = [str(w.message).splitlines()[0] for w in caught if issubclass(w.category, UserWarning)]
    if problems:
        shutil.rmtree(staging)
        raise RuntimeError("pdoc warned:\n" + "\n".join(problems))
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)
    return wanted


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else DEFAULT_OUT
    try:
        modules = build(out)
    except RuntimeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"{len(modules)} modules documented: {out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
