"""Modules of a package imported on first use: :func:`submodule_loader`, each subpackage's ``__getattr__``."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from types import ModuleType


def submodule_loader(package: str) -> Callable[[str], ModuleType]:
    """A module ``__getattr__`` for ``package`` that imports its modules on first use, as ``skelanim`` does its
    subpackages (``skelanim.viz.plots`` without ``import skelanim.viz.plots``). Packages set it outside
    ``TYPE_CHECKING``, so that type checkers still catch a misspelt name."""

    def load(name: str) -> ModuleType:
        if not name.startswith("_") and importlib.util.find_spec(f"{package}.{name}") is not None:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return load
