"""Privacy-budget split rules for the SVT: ε = ε1 (threshold) + ε2 (queries) (+ ε3 answers).

Lyu, Su, Li (2017), Sec. 4.2: minimising Var[Lap(Δ/ε1) − Lap(2cΔ/ε2)] at fixed ε1 + ε2 gives
ε1 : ε2 = 1 : (2c)^(2/3) (their Eq. 13); for monotonic queries (Sec. 4.3, query noise
Lap(cΔ/ε2)) it gives 1 : c^(2/3). Their Sec. 5 also evaluates 1:1 (Algorithm 1), 1:3
(Algorithm 4, Lee & Clifton) and 1:c.

Rules are evaluated with plain arithmetic, so ``epsilon`` and ``c`` may be traced arrays: a sweep
over ε or c compiles once.
"""

from __future__ import annotations

from typing import Callable

import jax.numpy as jnp

from svtjax import _validate

__all__ = ["RULES", "rules", "ratio", "split", "optimal_rule"]

RULES: dict[str, Callable] = {
    "1:1": lambda c: jnp.ones_like(jnp.asarray(c, dtype=float)),
    "1:3": lambda c: 3.0 * jnp.ones_like(jnp.asarray(c, dtype=float)),
    "1:c": lambda c: jnp.asarray(c, dtype=float),
    "1:c^(2/3)": lambda c: jnp.asarray(c, dtype=float) ** (2.0 / 3.0),
    "1:(2c)^(2/3)": lambda c: (2.0 * jnp.asarray(c, dtype=float)) ** (2.0 / 3.0),
}


def rules() -> list[str]:
    """Names of the split rules, in the order Lyu'17 Sec. 5 lists them."""
    return list(RULES)


def check_rule(rule: str) -> str:
    if not isinstance(rule, str) or rule not in RULES:
        raise ValueError(f"allocation must be one of {rules()} or an explicit (eps1, eps2) pair; "
                         f"got {rule!r}")
    return rule


def ratio(rule: str, c):
    """x in ε1 : ε2 = 1 : x for the named rule at cut-off ``c``."""
    return RULES[check_rule(rule)](c)


def split(epsilon, c, rule: str):
    """Splits ``epsilon`` into ``(eps1, eps2)`` with ``eps1 : eps2 = 1 : ratio(rule, c)``.

    Args:
      epsilon: the budget for the indicator vector (ε1 + ε2), > 0.
      c: the cut-off (number of ⊤ before halting), >= 1.
      rule: one of :data:`RULES`.

    Returns:
      ``(eps1, eps2)``, summing to ``epsilon``.
    """
    _validate.positive("epsilon", epsilon)
    _validate.integer("c", c, minimum=1)
    x = ratio(rule, c)
    # Every rule gives the queries at least half (x >= 1), so eps2 lies in [ε/2, ε] and
    # ε - eps2 is exact (Sterbenz): eps1 + eps2 == ε to the last bit.
    eps2 = epsilon * x / (1.0 + x)
    return epsilon - eps2, eps2


def optimal_rule(monotonic: bool) -> str:
    """The rule Lyu'17 derives: Eq. 13 in general, Sec. 4.3 for monotonic queries."""
    return "1:c^(2/3)" if monotonic else "1:(2c)^(2/3)"
