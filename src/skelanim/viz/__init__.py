"""Getting motion seen: plots and pose strips (:mod:`.plots`, :mod:`.charts`), skeleton videos (:mod:`.video`) and
the browser viewer (:mod:`.viewer`)."""

from typing import TYPE_CHECKING

if not TYPE_CHECKING:  # modules imported on first use (skelanim.viz.<module> without an import)
    from skelanim._modules import submodule_loader

    __getattr__ = submodule_loader(__name__)
