"""How close two results must be where bit-exactness is not claimed: the one tolerance table.

``got`` is close to ``want`` when ``max|got - want| <= atol + rtol * max|want|`` over the finite
elements, and NaN / +-inf sit at the same places in both. The error is measured against the
tensor's magnitude, not each element's: the results compared (gradients from another order of
summation, EluGrad's ``dY * (Y + alpha)`` against ``dY * alpha * exp(X)``) differ by rounding that
scales with the values summed, and a near-zero element would make a per-element relative error
meaningless. Used by every comparison with PyTorch, the rewrite's validation and the tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float


#: dtype name -> Tolerance
TOLERANCES: dict[str, Tolerance] = {
    "float32": Tolerance(rtol=1e-5, atol=1e-6),
    "float16": Tolerance(rtol=1e-2, atol=1e-3),
    "bfloat16": Tolerance(rtol=5e-2, atol=1e-2),
    "float64": Tolerance(rtol=1e-12, atol=1e-14),
}


@dataclass
class Closeness:
    """One comparison: the largest error, what was allowed, the verdict and why."""

    max_abs: float
    allowed: float
    ok: bool
    nonfinite: int = 0  # NaN/inf elements, equal in both
    message: str = ""


def tolerance_of(dtype) -> Tolerance:
    """The tolerance of a dtype given by name, NumPy dtype or torch dtype."""
    from ort_ops import dtypes

    name = str(dtype).replace("torch.", "")
    if name not in TOLERANCES:
        name = dtypes.canonical_name(dtype, allowed=tuple(TOLERANCES))
    return TOLERANCES[name]


def check(got, want, tolerance: Tolerance | None = None) -> Closeness:
    """Compare ``got`` with ``want`` (the reference) by the rule of this module."""
    got, want = np.asarray(got), np.asarray(want)
    tol = tolerance if tolerance is not None else tolerance_of(want.dtype)
    if got.shape != want.shape:
        return Closeness(float("inf"), 0.0, False, 0, f"shape {list(got.shape)} differs from {list(want.shape)}")
    g, w = got.astype(np.float64), want.astype(np.float64)
    g_bad, w_bad = ~np.isfinite(g), ~np.isfinite(w)
    same = g_bad & w_bad & ((np.isnan(g) & np.isnan(w)) | (g == w))
    mismatched = int((g_bad | w_bad).sum() - same.sum())
    finite = ~(g_bad | w_bad)
    with np.errstate(all="ignore"):
        max_abs = float(np.abs(g[finite] - w[finite]).max()) if finite.any() else 0.0
        scale = float(np.abs(w[finite]).max()) if finite.any() else 0.0
    allowed = tol.atol + tol.rtol * scale
    if mismatched:
        return Closeness(float("inf"), allowed, False, int(same.sum()),
                         f"{mismatched} element(s) are NaN/inf in one result only")
    ok = max_abs <= allowed
    return Closeness(max_abs, allowed, ok, int(same.sum()),
                     "" if ok else f"max abs error {max_abs:.3g} > allowed {allowed:.3g}")
