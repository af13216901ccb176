"""A stand-in for the NKN network in tests of the retargeting losses (``tests/helpers`` is on ``sys.path``)."""

from __future__ import annotations

from torch import Tensor, nn

from skelanim.retarget.model import NKNConfig


class ScriptedNKN(nn.Module):
    """Stands in for the network: answers the trainer's calls with scripted ``(local, hips)``; a call not scripted
    hands the input motion back. Calls are told apart by their arguments: ``"ab"`` retargets the
    batch's source onto the target, ``"ba"`` brings that result back, ``"aa"`` retargets the source onto itself."""

    def __init__(self, batch: dict[str, Tensor], **answers: tuple[Tensor, Tensor]) -> None:
        super().__init__()
        self.config = NKNConfig()
        self.batch, self.answers = batch, answers

    def forward(self, local: Tensor, hips: Tensor, contacts: Tensor, src_off: Tensor, src_leg: Tensor,
                tgt_off: Tensor, tgt_leg: Tensor, fps: float) -> tuple[Tensor, Tensor, None]:  # fmt: skip
        call = ("ab" if tgt_off is self.batch["tgt_off"] else "aa") if local is self.batch["src_local"] else "ba"
        local, hips = self.answers.get(call, (local, hips))
        return local.clone(), hips.clone(), None  # new tensors, as the network's would be
