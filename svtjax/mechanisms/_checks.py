"""Parameter and input checks of the SVT-S family (``svtjax.mechanisms.classic``: SVT-S,
SVT-ReTr, Sparse-Vector-with-Gap; ``svtjax.mechanisms.exponential``: SVT-Exp): the budget
allocation's stored form (computed at construction, ``svtjax._pytree``), and whether svt-gap's
released gaps fit the run's dtype."""

from __future__ import annotations

import math

import numpy as np

from svtjax import _validate, budget
from svtjax._pytree import is_concrete

__all__ = ["resolve_allocation", "explicit_split", "explicit_params", "gaps_fit"]


def resolve_allocation(values: dict, extra: float, default, named: tuple = ()) -> dict:
    """The stored form of an ``allocation`` given to a mechanism of the SVT-S family.

    ``values`` holds the mechanism's arguments (``allocation``, ``_split``, ``epsilon``).
    Returns the fields to store: ``{"allocation": rule}`` for a rule name of
    ``svtjax.budget.RULES`` (or of ``named``, the mechanism's own), ``default()`` (the paper's
    rule) for ``None``; for an explicit ``(eps1, eps2)`` pair :func:`explicit_split`'s fields,
    with ``allocation`` None (no rule) and the pair in the ``_split`` leaves. A ``_split``
    without an allocation is a built mechanism's own pair given back (``dataclasses.replace``).
    """
    allocation, split = values.get("allocation"), values.get("_split")
    if isinstance(allocation, (tuple, list)):
        return explicit_split(values, allocation, extra)
    if allocation is None and split is not None:
        return explicit_split(values, split, extra)
    if isinstance(allocation, str) and allocation == "explicit":
        raise ValueError("allocation='explicit' needs the pair itself: pass "
                         "allocation=(eps1, eps2)")
    if split is not None:
        raise ValueError(f"an explicit split is given as allocation=(eps1, eps2); got the private "
                         f"_split={split!r} with allocation={allocation!r}")
    if allocation is None:
        return {"allocation": default()}
    if not (isinstance(allocation, str) and allocation in named):
        budget.check_rule(allocation)
    return {"allocation": allocation}


def explicit_split(values: dict, allocation, extra: float) -> dict:
    """An explicit ``(eps1, eps2)`` allocation: the pair as Python floats for the traced
    ``_split`` leaves, ``allocation`` None, and ε = ε1 + ε2 (+ ``extra``, svt-s's ε3) when
    ``values`` has none (else ε must equal that sum)."""
    if len(allocation) != 2:
        raise ValueError(f"an explicit allocation must be a pair (eps1, eps2); got {allocation!r}")
    e1 = float(_validate.positive("allocation eps1", allocation[0]))
    e2 = float(_validate.positive("allocation eps2", allocation[1]))
    total = e1 + e2 + extra
    epsilon = values.get("epsilon")
    if epsilon is None:
        epsilon = total
    elif not math.isclose(float(epsilon), total, rel_tol=1e-12):
        what = "eps1 + eps2 + eps3" if "eps3" in values else "eps1 + eps2"
        raise ValueError(f"epsilon ({epsilon}) must equal {what} ({total}) when "
                         "allocation is an explicit pair")
    return {"allocation": None, "_split": (e1, e2), "epsilon": epsilon}


def explicit_params(mech, params: dict) -> dict:
    """``params`` (a mechanism's parameters) with an explicit split shown as it is given,
    ``allocation=(eps1, eps2)``, so that ``get(name, **params)`` rebuilds the mechanism and the
    numpy reference reads the pair."""
    split = getattr(mech, "_split", None)
    if split is None:
        return params
    out = dict(params)
    out["allocation"] = tuple(float(x) for x in split) if is_concrete(split) else tuple(split)
    return out


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
