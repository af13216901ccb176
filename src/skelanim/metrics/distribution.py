"""Distribution metrics in a feature space: FID, diversity, multimodality, recognition accuracy.

The features are whatever the caller passes: for generated motion, the penultimate layer of a motion
recogniser (Guo et al. 2020, *Action2Motion*; Tevet et al. 2023, *MDM*). This module never builds a model
(metrics sit below the model packages; :mod:`skelanim.learn` passes the features in).

Definitions
-----------
* **FID** (Heusel et al. 2017): the Fréchet distance between Gaussians fitted to two feature sets,
  ``|mu_a - mu_b|^2 + Tr(S_a + S_b - 2 (S_a S_b)^{1/2})``. ``Tr((S_a S_b)^{1/2})`` is computed as the sum of
  square roots of the eigenvalues of the symmetric ``S_a^{1/2} S_b S_a^{1/2}`` (clamped at 0), which is
  stable where ``sqrtm`` of a non-symmetric product is not.
* **Diversity**: the mean Euclidean distance between ``pairs`` random pairs of distinct feature vectors (drawn
  with a seeded generator: the first index uniformly, the second uniformly among the other ``N - 1`` rows, so no
  row is paired with itself; Action2Motion draws the two independently, which pairs a row with itself about
  ``1 / N`` of the time and pulls the mean down by as much).
* **Multimodality**: the same within each class, averaged over classes with at least two samples.
* **Accuracy**: the share of predictions equal to the targets.
* **Outlier share** (poses no real motion has): the share of query rows whose Euclidean distance to their
  nearest reference row exceeds the ``q``-quantile of the same distance for a calibration set of real rows
  kept out of the reference (so a calibration-like query scores about ``1 - q``). Used on heading-aligned,
  root-relative poses it counts the frames of generated motion that lie off the real pose manifold (a
  knee at the chest in a walk), which feature-space FID can miss.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from skelanim.core._tensor import as_tensor
from skelanim.errors import ShapeError

__all__ = ["accuracy", "diversity", "fid", "frechet_distance", "gaussian_stats", "group_means", "multimodality",
           "nearest_distances", "outlier_share", "vote"]


def _as64(x: Tensor | np.ndarray) -> Tensor:
    return x.detach().cpu().double() if isinstance(x, Tensor) else as_tensor(x, dtype=torch.float64)  # any numpy layout


def _rows(name: str, x: Tensor | np.ndarray, dims: int | None = None) -> Tensor:
    """``x`` as a float64 ``(N, D)`` tensor (``D == dims`` when given), else a :class:`~skelanim.errors.ShapeError`
    naming ``name`` (a 1-D array had been read as N rows of one feature each, or failed in a matrix product)."""
    t = _as64(x)
    if t.ndim != 2:
        raise ShapeError(f"{name} must be (N, D) feature vectors, one per row, got shape {tuple(t.shape)}")
    if dims is not None and t.shape[1] != dims:
        raise ShapeError(f"{name} must be (N, {dims}) like the other feature set, got {tuple(t.shape)}")
    return t


def gaussian_stats(features: Tensor | np.ndarray) -> tuple[Tensor, Tensor]:
    """Mean and covariance of a feature set.

    Parameters
    ----------
    features : Tensor or ndarray
        ``(N, D)``, ``N >= 2``.

    Returns
    -------
    tuple of Tensor
        ``(D,)`` mean and ``(D, D)`` unbiased covariance, float64.
    """
    x = _rows("features", features)
    if x.shape[0] < 2:
        raise ShapeError(f"features must be (N >= 2, D), got {tuple(x.shape)}")
    mu = x.mean(0)
    centred = x - mu
    return mu, centred.T @ centred / (x.shape[0] - 1)


def _sqrt_psd(s: Tensor) -> Tensor:
    vals, vecs = torch.linalg.eigh((s + s.T) / 2)
    return (vecs * vals.clamp_min(0).sqrt()) @ vecs.T


def frechet_distance(mu_a: Tensor, sigma_a: Tensor, mu_b: Tensor, sigma_b: Tensor) -> float:
    """Fréchet distance between ``N(mu_a, sigma_a)`` and ``N(mu_b, sigma_b)`` (module docstring).

    Parameters
    ----------
    mu_a, mu_b : Tensor
        ``(D,)`` means.
    sigma_a, sigma_b : Tensor
        ``(D, D)`` covariances.

    Returns
    -------
    float
        ``>= 0`` (tiny negative round-off is clamped).
    """
    mu_a, mu_b, sigma_a, sigma_b = (_as64(t) for t in (mu_a, mu_b, sigma_a, sigma_b))
    if mu_a.ndim != 1:
        raise ShapeError(f"mu_a must be a (D,) mean, got {tuple(mu_a.shape)}")
    d = mu_a.shape[0]
    for name, t, want in (("mu_b", mu_b, (d,)), ("sigma_a", sigma_a, (d, d)), ("sigma_b", sigma_b, (d, d))):
        if tuple(t.shape) != want:
            raise ShapeError(f"{name} must be {want} (D = {d}, mu_a's size), got {tuple(t.shape)}")
    root_a = _sqrt_psd(sigma_a)
    middle = root_a @ sigma_b @ root_a
    cross = torch.linalg.eigvalsh((middle + middle.T) / 2).clamp_min(0).sqrt().sum()
    value = float(((mu_a - mu_b) ** 2).sum() + torch.trace(sigma_a) + torch.trace(sigma_b) - 2 * cross)
    return max(value, 0.0)


def fid(features_a: Tensor | np.ndarray, features_b: Tensor | np.ndarray) -> float:
    """FID between two feature sets ``(N, D)`` and ``(M, D)``, ``N, M >= 2``; a ``ValueError`` where a feature is not
    finite, a :class:`~skelanim.errors.ShapeError` where a set is not 2-D or the sets differ in ``D``."""
    a = _rows("features_a", features_a)
    b = _rows("features_b", features_b, a.shape[1])
    for name, features in (("first", a), ("second", b)):
        if not bool(torch.isfinite(features).all()):
            raise ValueError(f"the {name} feature set holds NaN or infinite values")
    return frechet_distance(*gaussian_stats(a), *gaussian_stats(b))


def _pairs(pairs: int) -> int:
    """``pairs`` as an int, refused with a ``ValueError`` unless a whole number of 1 or more (0 pairs had given a
    mean of nothing, ``nan``, without a word, and a negative count a bare RuntimeError of torch's)."""
    if isinstance(pairs, (bool, np.bool_)) or not isinstance(pairs, (int, np.integer)) or pairs < 1:
        raise ValueError(f"pairs must be a whole number of 1 or more, got {pairs!r}")
    return int(pairs)


def diversity(features: Tensor | np.ndarray, *, pairs: int = 300, seed: int = 0) -> float:
    """Mean distance between ``pairs`` random pairs of distinct rows of ``features`` ``(N, D)`` (0 when ``N < 2``;
    a row paired with itself, as draws with replacement allowed, pulled the mean down by about ``1 / N``), or, where
    the rows have no more distinct pairs than ``pairs``, the exact mean over all of them (a review: 300 draws from
    17 rows' 136 pairs read 18.71 against 17.83); a :class:`~skelanim.errors.ShapeError` for an array that is not
    2-D (a 1-D one had been read as one vector), a ``ValueError`` unless ``pairs`` is a whole number of 1 or
    more."""
    pairs = _pairs(pairs)
    x = _rows("features", features)
    if x.shape[0] < 2:
        return 0.0
    if x.shape[0] * (x.shape[0] - 1) // 2 <= pairs:  # every pair once: no sampling noise
        return float(torch.pdist(x.to(torch.float64)).mean())
    g = torch.Generator().manual_seed(seed)
    i = torch.randint(0, x.shape[0], (pairs,), generator=g)
    j = (i + torch.randint(1, x.shape[0], (pairs,), generator=g)) % x.shape[0]  # any row but i, uniformly
    return float((x[i] - x[j]).norm(dim=-1).mean())


def multimodality(
    features: Tensor | np.ndarray, labels: Sequence[int] | Tensor, *, pairs: int = 20, seed: int = 0
) -> float:
    """Mean over classes (with 2+ samples) of the diversity of that class's features.

    Parameters
    ----------
    features : Tensor or ndarray
        ``(N, D)``.
    labels : sequence of int
        ``(N,)`` class of each row.
    pairs : int
        Random pairs per class (a whole number of 1 or more).
    seed : int
        Seed of the pair draws.

    Returns
    -------
    float
        ``nan`` when no class has two samples.

    Raises
    ------
    ShapeError
        Where ``features`` is not 2-D or ``labels`` does not hold one label per row.
    ValueError
        Where ``pairs`` is not a whole number of 1 or more.
    """
    pairs = _pairs(pairs)
    x = _rows("features", features)
    given = torch.as_tensor(labels)
    lab = given.reshape(-1)
    if lab.shape[0] != x.shape[0]:
        raise ShapeError(f"labels must be ({x.shape[0]},), one per row of features {tuple(x.shape)}, got "
                         f"{tuple(given.shape)}")  # fmt: skip
    values = []
    for k, c in enumerate(torch.unique(lab).tolist()):
        rows = x[lab == c]
        if rows.shape[0] >= 2:
            values.append(diversity(rows, pairs=pairs, seed=seed + k))
    return float(np.mean(values)) if values else float("nan")


def nearest_distances(query: Tensor | np.ndarray, reference: Tensor | np.ndarray, *, chunk: int = 2048) -> Tensor:
    """``(N,)`` Euclidean distance from each row of ``query`` ``(N, D)`` to its nearest row of ``reference``
    ``(M, D)`` (exact, in chunks of ``chunk`` query rows)."""
    q = _rows("query", query)
    r = _rows("reference", reference, q.shape[1])
    if r.shape[0] == 0:
        raise ValueError("nearest_distances needs at least one reference row")
    return torch.cat([torch.cdist(q[i : i + chunk], r).min(dim=1).values for i in range(0, q.shape[0], chunk)])


def outlier_share(query: Tensor | np.ndarray, reference: Tensor | np.ndarray, calibration: Tensor | np.ndarray, *,
                  q: float = 0.99) -> tuple[float, float]:  # fmt: skip
    """Share of ``query`` rows farther from ``reference`` than the ``q``-quantile of ``calibration``'s distances.

    Parameters
    ----------
    query, reference, calibration : Tensor or ndarray
        ``(N, D)``, ``(M, D)`` and ``(K, D)``; ``calibration`` must not be part of ``reference``.
    q : float
        Quantile of the calibration rows' nearest-reference distances taken as the threshold.

    Returns
    -------
    tuple of float
        The share (``[0, 1]``) and the threshold distance.
    """
    threshold = float(torch.quantile(nearest_distances(calibration, reference), q))
    return float((nearest_distances(query, reference) > threshold).double().mean()), threshold


def accuracy(predicted: Sequence[int] | Tensor, target: Sequence[int] | Tensor) -> float:
    """Share of ``predicted`` equal to ``target`` (both ``(N,)``); ``nan`` for ``N = 0``."""
    p, t = torch.as_tensor(predicted).reshape(-1), torch.as_tensor(target).reshape(-1)
    if p.shape != t.shape:
        raise ValueError(f"predicted {tuple(p.shape)} and target {tuple(t.shape)} differ in shape")
    return float((p == t).double().mean()) if p.numel() else float("nan")


def group_means(probabilities: Tensor | np.ndarray, groups: Sequence[int] | Tensor) -> tuple[Tensor, Tensor]:
    """Mean class probabilities of each group's windows.

    Parameters
    ----------
    probabilities : Tensor or ndarray
        ``(W, C)`` class probabilities per window.
    groups : sequence of int
        ``(W,)`` group (file) of each window.

    Returns
    -------
    tuple of Tensor
        The sorted distinct groups ``(G,)`` and their mean probabilities ``(G, C)``.
    """
    probabilities = torch.as_tensor(probabilities)  # an ndarray too: its dtype is not a torch dtype
    g = torch.as_tensor(groups).reshape(-1)
    ids, inverse = torch.unique(g, return_inverse=True)
    sums = torch.zeros(len(ids), probabilities.shape[1], dtype=probabilities.dtype).index_add_(
        0, inverse, probabilities
    )
    return ids, sums / torch.bincount(inverse, minlength=len(ids)).to(sums.dtype)[:, None]


def vote(probabilities: Tensor | np.ndarray, groups: Sequence[int] | Tensor) -> tuple[Tensor, Tensor]:
    """Per-group decision by averaging class probabilities over the group's windows (:func:`group_means`).

    Returns
    -------
    tuple of Tensor
        The sorted distinct groups ``(G,)`` and their predicted class ``(G,)``.
    """
    ids, means = group_means(probabilities, groups)
    return ids, means.argmax(-1)
