"""The one place where ``svtjax.exact`` reads a mechanism: its threshold law.

Everything else in ``svtjax.exact`` depends only on :class:`ThresholdLaw` and on
``svtjax.noise`` (``sf``, ``cdf``, ``logpdf``). What this module assumes of a mechanism:

* a single pass over the stream (no retraversal, no APPEND, no stages), one threshold noise ρ
  drawn before the stream (and, with ``resample``, redrawn from the same law after every ⊤);
* item i is answered ⊤ iff q_i + ν_i ≥ T_i + shift + ρ, with ν_i i.i.d. from one query-noise law
  (or ν_i = 0), independent of ρ;
* the run halts after c ⊤ (or never), optionally after the first ``k_max`` positions;
* ``Outcome.cost`` is ``top_cost`` at every ⊤ and 0 elsewhere.

These are exactly the mechanisms that run Lyu et al.'s Figure 1 loop unchanged: a
:class:`~svtjax.mechanisms.classic.Figure1` rule whose ``init``, ``step``, ``halted`` and
comparison are Figure 1's own (no custom rule), with one pass and no per-position cost. Their
law is read from the rule's own hooks — the streams the engine draws (``initial_streams()
["threshold"]``, ``streams()["query"]`` and ``["refresh"]``), ``cutoff()``,
``threshold_shift()``, ``top_cost()``, ``resamples()`` and ``cap()`` — so a registered
variant of one's own that only changes Figure 1's noises, shift or cut-off is supported with
no change here. :func:`supported` lists the registered names that qualify; :func:`law` refuses
anything else with that list.

:func:`law_at_share` maps a budget share θ = ε1 / (ε1 + ε2) to the law *as a traced function*
(mechanism construction validates concrete floats, so it cannot run under ``jax.grad``): the
mechanism is built with concrete budgets and given the traced ones through its own
``with_budgets``, so the noise scales come from the mechanism's one ``noise_laws`` (Lyu et al.
2017, Algorithm 7 lines 1 and 3 for svt-s and svt-gap, Ding et al. 2019 §6.1; Liu et al. 2024,
Algorithm 2 lines 2-3, 6 for svt-exp) and :func:`law` reads them from its streams.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import jax

from svtjax._pytree import is_concrete
from svtjax.noise import Noise

__all__ = ["ThresholdLaw", "law", "law_at_share", "supported", "SHARE_SUPPORTED"]

SHARE_SUPPORTED = ("svt-s", "svt-gap", "svt-exp")
"""Mechanisms whose ε1 : ε2 split :func:`law_at_share` (and ``optimal_allocation``) varies."""

_FIGURE1_RULE = ("init", "step", "halted", "_compare")
"""Figure 1's methods a supported rule must not replace (they decide the answers)."""


class ThresholdLaw(NamedTuple):
    """What the exact laws need to know about a single-threshold mechanism.

    Attributes:
      threshold_noise: ρ, a ``svtjax.noise`` object (its scale may be traced).
      query_noise: ν, or None for noiseless comparisons (Lyu'17 Algorithm 5).
      c: the cut-off (a Python int: it fixes array shapes), or None for no cut-off.
      shift: added to every threshold (svt-exp's correction r, svt-retr's raise); scalar, may
        be traced.
      top_cost: ``Outcome.cost`` at each ⊤; scalar, may be traced.
      resample: ρ is redrawn after every ⊤ (Dwork & Roth; Lyu'17 Algorithm 2 line 5).
      k_max: only the first ``k_max`` positions are evaluated (Zhu & Wang 2020, Algorithm 2
        line 2), or None.
    """

    threshold_noise: Noise
    query_noise: Optional[Noise]
    c: Optional[int]
    shift: Any = 0.0
    top_cost: Any = 0.0
    resample: bool = False
    k_max: Optional[int] = None


def _figure1_class(cls: Any) -> bool:
    """Whether ``cls`` runs Figure 1's loop unchanged (its own noises, shift, cut-off, cap)."""
    from svtjax.mechanisms.classic import Figure1

    return (isinstance(cls, type) and issubclass(cls, Figure1)
            and all(getattr(cls, m) is getattr(Figure1, m) for m in _FIGURE1_RULE)
            and not cls.per_position_cost)


def supported() -> list[str]:
    """Registered mechanism names with a single-threshold law (each also needs one pass:
    ``svt-retr`` with ``max_passes=1``, ``svt-exp`` without APPEND; resampling — ``dpbook``,
    ``resample=True`` — in fixed order only)."""
    from svtjax import mechanisms

    return [name for name, cls in mechanisms.registry().items() if _figure1_class(cls)]


def _unsupported(name: Any, why: str) -> ValueError:
    return ValueError(f"svtjax.exact: {why}; supported: single-pass Figure 1 (Lyu'17) rules "
                      f"without a custom step, i.e. {', '.join(supported())} (one pass; "
                      "resampling in fixed order only); the ordered picks of the peeling "
                      "selection mechanisms: svtjax.exact.picks_law")


def _concrete_int(name: str, value: Any, mech_name: str) -> int:
    if not is_concrete(value):
        raise ValueError(f"svtjax.exact needs a concrete {name} for {mech_name} (it fixes the "
                         "shape of the count distribution); build the mechanism outside jit")
    return int(value)


def _same_law(a: Noise, b: Noise) -> bool:
    if type(a) is not type(b):
        return False
    leaves = (a.scale_value, b.scale_value)
    return not is_concrete(leaves) or float(leaves[0]) == float(leaves[1])


def law(mech: Any) -> ThresholdLaw:
    """The threshold law of a built mechanism (see the module docstring for which qualify).

    Raises:
      ValueError: the mechanism has no single-threshold law (the message names the supported
        set).
    """
    name = getattr(mech, "name", type(mech).__name__)
    if not _figure1_class(type(mech)):
        raise _unsupported(name, f"{name!r} has no single-threshold law (it is not Figure 1's "
                                 "loop unchanged)")
    passes = mech.passes()
    if passes != 1:
        raise _unsupported(name, f"{name} with {passes} passes (APPEND/retraversal) is not a "
                                 "single pass")
    threshold = mech.initial_streams()["threshold"]  # what Figure1.init reads
    streams = mech.streams()
    query = streams.get("query")  # what Figure1._compare adds (absent: ν = 0)
    resample = bool(mech.resamples())
    if resample and not _same_law(streams["refresh"], threshold):
        raise _unsupported(name, f"{name} redraws ρ from a law other than the first ρ's")
    c = mech.cutoff()
    c = None if c is None else _concrete_int("c", c, name)
    k_max = mech.cap()
    k_max = None if k_max is None else _concrete_int("k_max", k_max, name)
    shift = mech.threshold_shift()
    return ThresholdLaw(threshold, query, c, 0.0 if shift is None else shift, mech.top_cost(),
                        resample, k_max)


def law_at_share(name: str, share: Any, *, epsilon: Any, c: int, sensitivity: Any = 1.0,
                 **params: Any) -> ThresholdLaw:
    """The law of ``name`` with ε1 = share · B and ε2 = (1 − share) · B, B = ε − ε3.

    ``share`` may be traced (e.g. under ``jax.grad``). With a concrete ``share`` the mechanism
    is built with ``allocation=(ε1, ε2)`` and :func:`law` is returned. With a traced one the
    mechanism is built with concrete budgets (its parameters checked as usual), its budgets
    are replaced by the traced ones through its own ``with_budgets`` (which recomputes what
    depends on them from the mechanism's one ``noise_laws``), and :func:`law` reads it: the
    two paths share every formula.

    Args:
      name: one of :data:`SHARE_SUPPORTED`.
      share: threshold share θ ∈ (0, 1).
      epsilon: total ε (including svt-s's ε3).
      c: cut-off (concrete).
      sensitivity: Δ.
      **params: the mechanism's other parameters (``monotonic``, ``eps3``; for svt-exp
        ``noise``, ``correction``, ``correction_k``, ``alpha``, ``delta``, ``resample``).

    Raises:
      ValueError: ``name`` is not share-parameterised, or svt-exp's ``correction="optimal"``
        with a traced share (that correction is computed on the host: use a concrete share,
        ``"mean"``, ``"none"`` or a number).
    """
    if name not in SHARE_SUPPORTED:
        raise ValueError(f"svtjax.exact: {name!r} has no budget share to vary; supported: "
                         f"{', '.join(SHARE_SUPPORTED)}")
    if "allocation" in params:
        raise ValueError("law_at_share sets the allocation from the share; drop allocation=")
    c = _concrete_int("c", c, name)
    from svtjax import mechanisms

    if is_concrete((share, epsilon, sensitivity)):
        share_f = float(share)
        if not 0.0 < share_f < 1.0:
            raise ValueError(f"share must lie in (0, 1); got {share_f}")
        budget = float(epsilon - params.get("eps3", 0.0))
        eps1 = share_f * budget
        return law(mechanisms.get(name, epsilon=epsilon, c=c, sensitivity=sensitivity,
                                  allocation=(eps1, budget - eps1), **params))
    given = {} if not is_concrete(sensitivity) else {"sensitivity": sensitivity}
    with jax.ensure_compile_time_eval():  # on the host, also inside a trace
        built = mechanisms.get(name, c=c, allocation=(1.0, 1.0), **given, **params)
    budget = epsilon - built.unsplit_budget()
    return law(built.with_budgets(share * budget, (1.0 - share) * budget, epsilon=epsilon,
                                  sensitivity=sensitivity))
