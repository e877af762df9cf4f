"""A mechanism of one's own: Sparse Vector with a rising threshold (an example, not in the papers).

Lyu et al.'s Algorithm 1 (ρ ~ Lap(2Δ/ε), ν_i ~ Lap(4cΔ/ε), stop after c ⊤), except that every ⊤
raises the threshold by ``rise``: the i-th query is compared with T_i + rise·(⊤ so far) + ρ, which
spreads the c picks over the stream. The raise depends only on earlier outputs, so the queries
are adaptively chosen and Algorithm 1's proof applies unchanged: ε-DP (Lyu, Su, Li 2017,
Theorem 2; Dwork & Roth 2014, Thm 3.23 for adaptive queries).

Use it by importing this file: ``plugins = ["rising_svt.py"]`` in a sweep's TOML, ``--plugin
examples/rising_svt.py`` on the command line, or ``import rising_svt`` in Python.
"""

import jax.numpy as jnp
import numpy as np

from svtjax import Outcome, PureDP, testing
from svtjax.mechanisms import CountState, ThresholdMechanism, Written, register
from svtjax.noise import Laplace
from svtjax.reference import stream_order


def reference(draws, queries, thresholds, *, epsilon, c, rise=1.0, sensitivity=1.0):
    """The rule as a plain loop over the stream (numpy), on the same standard draws."""
    q = np.asarray(queries, float)
    t = np.broadcast_to(np.asarray(thresholds, q.dtype), q.shape)
    order = stream_order(draws, q.shape[0])
    answers, items = np.full(q.shape, -1, np.int8), np.full(q.shape, -1, np.int32)
    rho = 2 * sensitivity / epsilon * draws.threshold                 # ρ = Lap(2Δ/ε)
    count = 0
    for p, i in enumerate(order):
        if count >= c:                                                 # abort after c ⊤
            break
        nu = 4 * c * sensitivity / epsilon * draws.query[p]           # ν = Lap(4cΔ/ε)
        top = q[i] + nu >= t[i] + rise * count + rho                   # the rising bar
        answers[p], items[p] = top, i
        count += int(top)
    cost = np.where(answers == 1, epsilon / (2 * c), 0.0)
    return Outcome(answers, items, np.full(q.shape, np.nan), cost)


@register(reference=reference, cases=[testing.Case("rising", {}, lambda rng: {
    **testing.eps_c(rng), "rise": float(rng.uniform(0.0, 3.0))})])
class RisingSVT(ThresholdMechanism):
    """Algorithm 1 with a threshold that rises by ``rise`` after each ⊤ (ε-DP)."""

    epsilon: float
    c: int
    rise: float = 1.0
    sensitivity: float = 1.0
    name = "example-rising-svt"

    def initial_streams(self):
        return {"threshold": Laplace(2 * self.sensitivity / self.epsilon)}

    def streams(self):
        return {"query": Laplace(4 * self.c * self.sensitivity / self.epsilon)}

    def init(self, noise):
        return CountState(jnp.zeros((), jnp.int32), noise["threshold"])

    def step(self, state, x):
        top = x.query + x.noise["query"] >= x.threshold + self.rise * state.count + state.rho
        return state._replace(count=state.count + top.astype(jnp.int32)), Written(top)

    def halted(self, state):
        return state.count >= self.c

    def top_cost(self):
        return self.epsilon / (2 * self.c)

    def privacy(self):
        return PureDP("Lyu, Su, Li 2017, Theorem 2 with adaptively chosen queries",
                      float(self.epsilon))
