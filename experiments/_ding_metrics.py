"""Ding'19's per-trial metrics of ``experiments.ding2019`` (``svtjax.sweep.Metric`` objects,
:func:`sweep_metrics`): the squared errors of the measurements alone and combined with the free
gaps (Theorem 3's BLUE and Section 6.2's inverse-variance combination, written for a traced k),
Lemma 5 coverage, answers, precision, F-measure and budget left, with the estimators' per-point
constants from :mod:`svtjax.estimators`."""

from __future__ import annotations

import math


def _measure_scale(mech, c):
    """Scale of the independent measurement Lap(k/ε''), ε'' = ε/2, of each selected query.

    svt-gap runs at ε/2 with c = k; noisy-top-k-gap at ε′ = k_max·(ε/2)/k with k_max picks, so
    k/(ε/2) = k_max/ε′ (see :func:`mse_sweep`).
    """
    if mech.name == "noisy-top-k-gap":
        return mech.k / mech.epsilon
    return c / mech.epsilon


def _mse_constants(mech, c) -> dict[str, float]:
    """Per-point constants of the estimators (host side, :mod:`svtjax.estimators`): Var(α_i),
    Var(γ_i) of Sec. 6.2 and Lemma 5's 95% quantile for the svt-gap lower confidence bound;
    Theorem 3's λ for noisy-top-k-gap."""
    from svtjax import estimators

    b = float(_measure_scale(mech, c))
    if mech.name == "noisy-top-k-gap":
        return {"var_measure": 2 * b * b, "var_gap": 1.0, "t95": math.nan,
                "lam": float(estimators.topk_lambda(True))}
    eps_svt = float(mech.epsilon)
    threshold_scale, query_scale = svt_gap_scales(eps_svt, int(c))
    return {"var_measure": float(estimators.measurement_variance(eps_svt, c)),
            "var_gap": float(estimators.svt_gap_variance(eps_svt, c, True)),
            "t95": float(estimators.lemma5_quantile(0.95, 1 / threshold_scale,
                                                    1 / query_scale)),
            "lam": 1.0}


def svt_gap_scales(epsilon: float, k: int) -> tuple[float, float]:
    """(threshold scale, query scale) of Sparse-Vector-with-Gap for counting queries at budget
    ε and k answers: Ding'19 Sec. 6.2 with Lyu et al.'s monotonic split ε0 : ε_q = 1 : k^(2/3)
    (``svtjax.budget.split``, the ``svt-gap`` default), ρ ~ Lap(1/ε0), ν_i ~ Lap(k/ε_q)."""
    from svtjax import budget

    eps0, eps_q = (float(x) for x in budget.split(float(epsilon), int(k), "1:c^(2/3)"))
    return 1.0 / eps0, k / eps_q


def adaptive_budgets(mech) -> tuple[float, float, float]:
    """(ε0, ε1, ε2) of Adaptive-Sparse-Vector-with-Gap (Ding'19 Algorithm 2 line 1) from the
    mechanism's public parameters: ε0 = θε, ε1 = (1 − θ)ε/k, ε2 = ε1/2 (traced-friendly)."""
    eps0 = mech.theta * mech.epsilon
    eps1 = (1.0 - mech.theta) * mech.epsilon / mech.c
    return eps0, eps1, eps1 / 2.0


def blue_top_k_errors(e, e_gaps, c, lam):
    """β − q of Theorem 3's BLUE (``estimators.blue_top_k``) for the first c of k picks, traced.

    The BLUE is linear and exact on noise-free input, so β − q is the same formula applied to
    the measurement errors e_i = α_i − q_i and gap errors g_i − (q_i − q_{i+1}) (computed this
    way, float32 does not lose the errors against large q). Positions i >= c are ignored (0).

    Args:
      e: float[..., k]; e_gaps: float[..., k] (the (c−1) gaps between the first c picks are
        used); c: int (traced), 1 <= c <= k; lam: λ.
    """
    import jax.numpy as jnp

    k = e.shape[-1]
    i = jnp.arange(k)
    e = jnp.where(i < c, e, 0.0)
    g = jnp.where(i < c - 1, e_gaps, 0.0)
    cf = jnp.asarray(c, e.dtype)
    total = jnp.sum(e, axis=-1, keepdims=True)
    prefix = jnp.cumsum(g, axis=-1) - g  # p_{i} = g_0 + ... + g_{i-1}
    p = jnp.sum((cf - 1 - i) * g, axis=-1, keepdims=True)
    beta = (total + lam * cf * e + p - cf * prefix) / ((1 + lam) * cf)
    return jnp.where(i < c, beta, 0.0)


def combine_errors(e, e_gap, var_measure, var_gap):
    """β − q of Sec. 6.2's inverse-variance combination (``estimators.combine_inverse_variance``)
    from the errors e = α − q and e_gap = γ + T − q, traced."""
    return (e / var_measure + e_gap / var_gap) / (1 / var_measure + 1 / var_gap)


def _first_tops(top, k: int):
    """int[..., k]: the positions of each row's first k ⊤ (``top`` bool[..., L], k <= L: a
    stream has at least 8k + 1 items) in stream order, ``L`` where a row has fewer:
    ``jnp.nonzero(row, size=k, fill_value=L)`` per row, as the k smallest of the ⊤
    positions: one ``top_k``, where nonzero's vmapped prefix sums compile to some twenty
    kernels more in every Sparse-Vector-with-Gap chunk."""
    import jax
    import jax.numpy as jnp

    length = top.shape[-1]
    where = jnp.where(top, jnp.arange(length, dtype=jnp.int32), length)
    return -jax.lax.top_k(-where, k)[0]


def _selection(out, scores, c, ctx):
    """(valid [T, k], q, measurement errors, gap errors) of the first c selected queries."""
    import jax
    import jax.numpy as jnp

    k = ctx.k
    if ctx.mech.name == "noisy-top-k-gap":
        k = out.items.shape[-1]  # the k_max picks
        items, gaps = out.items, out.values
        valid = jnp.broadcast_to(jnp.arange(k) < c, items.shape)
        q = scores[jnp.maximum(items, 0)]
        q_next = jnp.concatenate([q[:, 1:], q[:, -1:]], axis=-1)
        e_gap = gaps - (q - q_next)
    else:
        length = out.answers.shape[-1]
        pos = _first_tops(out.answers == 1, k)
        safe = jnp.minimum(pos, length - 1)
        valid = (pos < length) & (jnp.arange(k) < c)
        items = jnp.take_along_axis(out.items, safe, axis=-1)
        q = scores[jnp.maximum(items, 0)]
        gaps = jnp.take_along_axis(out.values, safe, axis=-1)
        e_gap = jnp.where(valid, gaps, 0.0) + ctx.thresholds[:, None] - q
    xi = jax.vmap(lambda key: jax.random.laplace(key, (k,), scores.dtype))(ctx.keys)
    e = _measure_scale(ctx.mech, c) * xi
    return valid, q, jnp.where(valid, e, 0.0), jnp.where(valid, e_gap, 0.0)


def _count(valid):
    import jax.numpy as jnp

    return jnp.sum(valid, axis=-1)


def _mean_over(valid, x):
    import jax.numpy as jnp

    n = _count(valid)
    return jnp.where(n > 0, jnp.sum(jnp.where(valid, x, 0.0), axis=-1) / jnp.maximum(n, 1), 0.0)


def _combined_errors(out, scores, c, ctx, constants):
    valid, _, e, e_gap = _selection(out, scores, c, ctx)
    if ctx.mech.name == "noisy-top-k-gap":
        return valid, e, blue_top_k_errors(e, e_gap, c, constants["lam"])
    return valid, e, combine_errors(e, e_gap, constants["var_measure"], constants["var_gap"])


def _m_selected(out, scores, c, ctx):
    return _count(_selection(out, scores, c, ctx)[0])


def _m_used(out, scores, c, ctx):
    return _count(_selection(out, scores, c, ctx)[0]) > 0


def _m_mse_measure(out, scores, c, ctx):
    valid, _, e, _ = _selection(out, scores, c, ctx)
    return _mean_over(valid, e * e)


def _m_mse_combined(out, scores, c, ctx):
    valid, _, err = _combined_errors(out, scores, c, ctx, ctx.prepared["ding_mse_combined"])
    return _mean_over(valid, err * err)


def _m_mse_diff(out, scores, c, ctx):
    valid, e, err = _combined_errors(out, scores, c, ctx, ctx.prepared["ding_mse_diff"])
    return _mean_over(valid, err * err - e * e)


def _m_covered(out, scores, c, ctx):
    """Selected queries with q >= γ + T − t_.95 (Lemma 5's bound), i.e. γ + T − q <= t_.95."""
    import jax.numpy as jnp

    valid, _, _, e_gap = _selection(out, scores, c, ctx)
    if ctx.mech.name == "noisy-top-k-gap":
        return jnp.zeros(valid.shape[:1], scores.dtype)
    return jnp.sum(valid & (e_gap <= ctx.prepared["ding_covered"]["t95"]), axis=-1)


def _m_threshold(out, scores, c, ctx):
    del out, scores, c
    return ctx.thresholds


def _answer_counts(out, scores, c, ctx):
    """(size, true positives, items above T, top-branch answers, budget left) per run."""
    import jax.numpy as jnp

    top = out.answers == 1
    truth = scores[None, :] > ctx.thresholds[:, None]
    hit = top & jnp.take_along_axis(truth, jnp.maximum(out.items, 0), axis=-1)
    size = jnp.sum(top, axis=-1)
    tp = jnp.sum(hit, axis=-1)
    n_true = jnp.sum(truth, axis=-1)
    mech = ctx.mech
    if mech.name in ("adaptive-svt-gap", "adaptive-svt-gap-authors"):  # both stopping rules
        eps0, eps1, _ = adaptive_budgets(mech)
        n_top = jnp.sum(top & (out.cost < 0.75 * eps1), axis=-1)  # top branch: ε2 = ε1/2
        first_c = top & (jnp.cumsum(top, axis=-1) <= c)
        spent = eps0 + jnp.sum(jnp.where(first_c, out.cost, 0), axis=-1)
        remaining = jnp.where(size >= c, (mech.epsilon - spent) / mech.epsilon, 0.0)
    else:
        n_top = jnp.zeros_like(size)
        remaining = jnp.zeros(size.shape, scores.dtype)
    return size, tp, n_true, n_top, remaining


def _m_answers(out, scores, c, ctx):
    return _answer_counts(out, scores, c, ctx)[0]


def _m_top(out, scores, c, ctx):
    return _answer_counts(out, scores, c, ctx)[3]


def _m_precision(out, scores, c, ctx):
    import jax.numpy as jnp

    size, tp, _, _, _ = _answer_counts(out, scores, c, ctx)
    return jnp.where(size > 0, tp / jnp.maximum(size, 1), 0.0)


def _m_f(out, scores, c, ctx):
    import jax.numpy as jnp

    size, tp, n_true, _, _ = _answer_counts(out, scores, c, ctx)
    return jnp.where(size > 0, 2 * tp / (size + n_true), 0.0)


def _m_remaining(out, scores, c, ctx):
    return _answer_counts(out, scores, c, ctx)[4]


def _m_reached(out, scores, c, ctx):
    return _answer_counts(out, scores, c, ctx)[0] >= c


def sweep_metrics() -> list:
    """Ding'19's per-trial metrics, as ``svtjax.sweep.Metric`` objects for ``sweep.run``."""
    from svtjax import sweep

    out = []

    def reg(name, fn, description, prepare=None):
        out.append(sweep.Metric(name, fn, description, prepare))

    reg("ding_selected", _m_selected, "Ding'19: number of selected queries (at most k)")
    reg("ding_used", _m_used, "Ding'19: 1 if the run selected a query")
    reg("ding_mse_measure", _m_mse_measure, "Ding'19: mean squared error over the selected "
        "queries of the measurements Lap(k/(ε/2)) alone (0 if none selected)")
    reg("ding_mse_combined", _m_mse_combined, "Ding'19: mean squared error of the measurements "
        "combined with the free gaps (Thm 3's BLUE / Sec. 6.2; 0 if none selected)",
        prepare=_mse_constants)
    reg("ding_mse_diff", _m_mse_diff, "Ding'19: ding_mse_combined - ding_mse_measure (for "
        "their covariance)", prepare=_mse_constants)
    reg("ding_covered", _m_covered, "Ding'19: selected queries above Lemma 5's 95% lower "
        "confidence bound (svt-gap; 0 for top-k)", prepare=_mse_constants)
    reg("ding_threshold", _m_threshold, "Ding'19: the run's threshold")
    reg("ding_answers", _m_answers, "Ding'19: number of ⊤ answers")
    reg("ding_top", _m_top, "Ding'19: ⊤ answers of adaptive SVT's top branch (0 for SVT)")
    reg("ding_precision", _m_precision, "Ding'19: precision of the ⊤ answers against the items "
        "above the run's threshold (0 if none)")
    reg("ding_f", _m_f, "Ding'19: F-measure (recall against every item above the threshold)")
    reg("ding_remaining", _m_remaining, "Ding'19: share of ε left after the first k answers "
        "(adaptive SVT; 0 if fewer than k answers, 0 for SVT)")
    reg("ding_reached", _m_reached, "Ding'19: 1 if the run gave at least k answers")
    return out
