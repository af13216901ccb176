"""Live streams: motion to avatars and back over the VMC protocol (:mod:`.vmc` sends, :mod:`.record` records)."""

from typing import TYPE_CHECKING

if not TYPE_CHECKING:  # modules imported on first use (skelanim.serve.<module> without an import)
    from skelanim._modules import submodule_loader

    __getattr__ = submodule_loader(__name__)
