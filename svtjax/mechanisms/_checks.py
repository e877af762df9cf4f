"""Parameter and input checks of the SVT-S family (``svtjax.mechanisms.classic``: SVT-S,
SVT-ReTr, Sparse-Vector-with-Gap; ``svtjax.mechanisms.exponential``: SVT-Exp): the budget
allocation, and whether svt-gap's released gaps fit the run's dtype."""

from __future__ import annotations

import math

import numpy as np

from svtjax import _validate, budget
from svtjax._pytree import is_concrete

__all__ = ["check_allocation", "explicit_split", "gaps_fit"]


def check_allocation(mech, extra: float, default, named: tuple = ()) -> None:
    """Validates ``mech.allocation``: an explicit ``(eps1, eps2)`` pair (stored by
    :func:`explicit_split`), ``None`` (``default()``, the paper's rule) or a rule name of
    ``svtjax.budget.RULES`` (or of ``named``, the mechanism's own). ``"explicit"`` is what a
    pair becomes once stored; given by hand, without the pair, it is refused."""
    allocation = mech.allocation
    if isinstance(allocation, (tuple, list)):
        explicit_split(mech, allocation, extra)
    elif allocation is None:
        object.__setattr__(mech, "allocation", default())
    elif isinstance(allocation, str) and allocation == "explicit":
        if mech._split is None:
            raise ValueError("allocation='explicit' needs the pair itself: pass "
                             "allocation=(eps1, eps2)")
    elif not (isinstance(allocation, str) and allocation in named):
        budget.check_rule(allocation)


def explicit_split(mech, allocation, extra: float) -> None:
    """An explicit ``(eps1, eps2)`` allocation: stored as traced leaves in ``_split``."""
    if len(allocation) != 2:
        raise ValueError(f"an explicit allocation must be a pair (eps1, eps2); got {allocation!r}")
    e1 = float(_validate.positive("allocation eps1", allocation[0]))
    e2 = float(_validate.positive("allocation eps2", allocation[1]))
    total = e1 + e2 + extra
    if mech.epsilon is None:
        object.__setattr__(mech, "epsilon", total)
    elif not math.isclose(float(mech.epsilon), total, rel_tol=1e-12):
        what = "eps1 + eps2 + eps3" if hasattr(mech, "eps3") else "eps1 + eps2"
        raise ValueError(f"epsilon ({mech.epsilon}) must equal {what} ({total}) when "
                         "allocation is an explicit pair")
    object.__setattr__(mech, "_split", (e1, e2))
    object.__setattr__(mech, "allocation", "explicit")


def gaps_fit(mech, q: np.ndarray, t: np.ndarray) -> None:
    """Refuses queries and thresholds whose released gaps the run's dtype cannot hold.

    A gap q_i + ν_i − (T_i + ρ) is computed from the noisy query and the noisy threshold, so
    each of those and their difference must stay finite: |q_i| + r_ν, |T_i| + r_ρ and q_i − T_i
    + r_ν + r_ρ at most the dtype's largest number, with r the room for a scaled variate that
    ``svtjax._validate.computable`` keeps for every noise (``NOISE_HEADROOM`` times the scale).
    Queries 3e38 with a threshold −3e38 fit float32, their gaps (6e38) do not.

    Raises:
      ValueError: one line with the largest gap bound, the dtype's largest number and what to
        do.
    """
    if q.size == 0 or not np.issubdtype(q.dtype, np.floating):
        return
    scales = [mech.noises()[s].scale_value for s in ("query", "threshold")]
    if not is_concrete(scales):  # a traced mechanism: its own checks ran where it was built
        return
    room_q, room_t = (_validate.NOISE_HEADROOM * abs(float(b)) for b in scales)
    with np.errstate(over="ignore", invalid="ignore"):
        qf, tf = q.astype(np.float64), t.astype(np.float64)
        widest = max(float(np.max(np.abs(qf))) + room_q, float(np.max(np.abs(tf))) + room_t,
                     float(np.max(qf - tf)) + room_q + room_t)
    largest = float(np.finfo(q.dtype).max)
    if not widest <= largest:
        raise ValueError(
            f"svt-gap cannot run in {q.dtype.name}: a released gap q_i + noise - (T_i + noise) "
            f"can reach {widest:.3g} (queries up to {float(np.max(qf)):.3g}, thresholds down to "
            f"{float(np.min(tf)):.3g}), more than {q.dtype.name} holds ({largest:.3g}); shift "
            "or scale the queries and thresholds")
