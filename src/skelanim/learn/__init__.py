"""Learning motion: recognition (ST-GCN), prediction (seq2seq GRU, DCT-GCN, MLP) and generation (CVAE + GAN).

========================  ==============================================================================
:mod:`.stgcn`             :class:`STGCN`, the :class:`TemporalCNN` baseline, :class:`Members` (ensembles)
:mod:`.recognize`         :class:`Recognizer`, :func:`evaluate_recognizer` (:mod:`.recognize_train`: :func:`train_recognizer`)
:mod:`.joints`            the recogniser's per-joint input features and their mirror image
:mod:`.augment`           mean pose, amplitude scaling, turn relabelling (training augmentation)
:mod:`.ensemble`          :func:`combine_recognizers`, :func:`combine_predictors` (trained models into one ensemble)
:mod:`.predictors`        :class:`Seq2SeqGRU`, :class:`DCTGCN`, :class:`MotionMLP`, :func:`zero_velocity`, :func:`constant_velocity`
:mod:`.predict`           :class:`Predictor`, :func:`train_predictor` (:mod:`.predict_eval`: :func:`evaluate_prediction`)
:mod:`.calibrate`         :func:`~.calibrate.calibrate_amplitude`, :func:`~.calibrate.calibrate_input_range`
:mod:`.forecast`          :func:`predict_motion` (continue a motion file), :func:`predict_retargeted` (of another skeleton)
:mod:`.mirror`            left/right mirror images of frames on a rig with its own joint axes
:mod:`.cvae`              :class:`MotionCVAE`, :class:`TemporalDiscriminator`
:mod:`.generate`          :class:`Generator` (:mod:`.generate_train`: :func:`train_generator`; :mod:`.generate_eval`: :func:`evaluate_generation`)
:mod:`.common`            normaliser buffers, FK on the rig, model folders, the shipped defaults, splits
========================  ==============================================================================

Every model trains with the shared loop :func:`skelanim.nn.fit` and is stored as a model folder
(``model.safetensors`` + ``config.json`` with the rig, vocabularies, normalisation statistics and
provenance). Shipped defaults for the Bandai-Namco skeleton live in ``pretrained/`` (see ``README.md``).
"""

from typing import TYPE_CHECKING

from skelanim.learn.cvae import MotionCVAE, TemporalDiscriminator
from skelanim.learn.ensemble import combine_predictors, combine_recognizers
from skelanim.learn.forecast import predict_motion, predict_retargeted
from skelanim.learn.generate import Generator
from skelanim.learn.generate_eval import evaluate_generation
from skelanim.learn.generate_train import train_generator
from skelanim.learn.predict import Predictor, train_predictor
from skelanim.learn.predict_eval import evaluate_prediction
from skelanim.learn.predictors import DCTGCN, MotionMLP, Seq2SeqGRU, constant_velocity, zero_velocity
from skelanim.learn.recognize import Recognizer, evaluate_recognizer
from skelanim.learn.recognize_train import train_recognizer
from skelanim.learn.stgcn import STGCN, Members, TemporalCNN

__all__ = [
    "DCTGCN",
    "STGCN",
    "Generator",
    "Members",
    "MotionCVAE",
    "MotionMLP",
    "Predictor",
    "Recognizer",
    "Seq2SeqGRU",
    "TemporalCNN",
    "TemporalDiscriminator",
    "combine_predictors",
    "combine_recognizers",
    "constant_velocity",
    "evaluate_generation",
    "evaluate_prediction",
    "evaluate_recognizer",
    "predict_motion",
    "predict_retargeted",
    "train_generator",
    "train_predictor",
    "train_recognizer",
    "zero_velocity",
]  # fmt: skip

if not TYPE_CHECKING:  # modules imported on first use (skelanim.learn.<module> without an import)
    from skelanim._modules import submodule_loader

    __getattr__ = submodule_loader(__name__)
