"""Shared neural building blocks: graph attention and FK layers, the training loop, checkpoints.

========================  ====================================================================
:mod:`.layers`            :class:`GraphAttention`, :class:`GATBlock`, :class:`ForwardKinematics`,
                          :func:`graph_mask`, :func:`mask_bias`, :func:`grad_reverse`
:mod:`.train`             :func:`fit`, :class:`TrainConfig`, :class:`Task`, :func:`seeded_generator`
:mod:`.checkpoint`        model folders (safetensors + JSON) and resumable training states
:mod:`.resume`            what a resumed run must share with the run it continues
:mod:`.distributed`       torchrun/DDP helpers (gloo on CPU)
:mod:`.device`            where training and inference run (``--device``: CPU, CUDA, MPS)
========================  ====================================================================
"""

from typing import TYPE_CHECKING

from skelanim.nn.checkpoint import load_model_files, load_train_state, save_model_files, save_train_state
from skelanim.nn.layers import ForwardKinematics, GATBlock, GraphAttention, grad_reverse, graph_mask, mask_bias
from skelanim.nn.train import Task, TrainConfig, fit, seeded_generator

__all__ = [
    "ForwardKinematics", "GATBlock", "GraphAttention", "Task", "TrainConfig", "fit", "grad_reverse", "graph_mask",
    "load_model_files", "load_train_state", "mask_bias", "save_model_files", "save_train_state", "seeded_generator",
]  # fmt: skip

if not TYPE_CHECKING:  # modules imported on first use (skelanim.nn.<module> without an import)
    from skelanim._modules import submodule_loader

    __getattr__ = submodule_loader(__name__)
