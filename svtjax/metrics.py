"""Utility of a top-c selection, one number per trial, plus summaries across trials.

Every metric has the signature ``f(selected, scores, c) -> float[...]``:

* ``selected``: int ``[..., k]``, the picked item indices of each trial in stream order, padded
  with -1 (what :func:`svtjax.selected` returns). Any number of leading batch axes.
* ``scores``: real ``[n]``, the true score (support) of every item.
* ``c``: the size of the true top-c set the mechanism is asked to find (a Python int or a traced
  integer scalar: a sweep over ``c`` compiles once). Concrete inputs are validated (``1 <= c <=
  n``, indices in ``[-1, n)``, finite scores); traced ones cannot be and must already be valid.

All metrics are pure ``jax.numpy``, jit-able and vectorised over the batch axes (no Python loop
over trials), so they can serve as a ``reduce=`` function of :func:`svtjax.simulate`. Their
sums (supports, relevances) are exact, in fixed point (:mod:`svtjax._fixedpoint`), so a
trial's values do not depend on the batch it is evaluated in (a sweep's chunk size), equal
sets of scores give equal sums (a true top-c has SER exactly 0), and the support metrics stay
finite when the top-c support exceeds the dtype's largest number.

Definitions. Let ``s_(1) >= s_(2) >= ... >= s_(n)`` be the scores sorted in decreasing order,
``t = s_(c)`` the c-th largest score, and ``S`` the *answer set* of a trial (see "Which picks
count" below). ``TP`` is the number of true positives under the tie rule below; without ties it
is ``|S ∩ Top-c|``.

====================  ==========================================================================
``precision``         ``TP / |S|``; 0 when ``S`` is empty (scikit-learn's ``zero_division=0``).
``recall``            ``TP / c``.
``f1``                F-measure, harmonic mean of precision and recall: ``2 TP / (|S| + c)``;
                      0 when ``S`` is empty.
``fnr``               false negative rate, the fraction of the true top-c missed: ``1 - TP / c``
                      (Lyu et al. 2017, Sec. 5).
``ser``               support error rate ``1 - sum_{i in S} s_i / sum_{j<=c} s_(j)`` (Lyu et al.
                      2017, Sec. 5, extended to ``|S| < c``: a missing pick
                      counts as zero support; equals ``1 - avgSup(S)/avgSup(Top-c)`` when
                      ``|S| = c``). An empty answer scores 1.
``ncs``               normalized cumulative support ``sum_{i in S} s_i / sum_{j<=c} s_(j)``
                      (slides); identically ``1 - ser``.
``ncr``               normalized cumulative rank: the item at rank r (1 = highest score) earns
                      relevance ``max(c - r + 1, 0)`` (top item c, next c-1, ..., c-th item 1,
                      the rest 0); ``ncr = sum_{i in S} rel(i) / (c (c + 1) / 2)``.
====================  ==========================================================================

Tie rule (exactly equal scores). The true top-c is defined by score, not by index, so when
several items tie at the c-th score, *any* set of c items with the largest total score is a
valid Top-c: it holds every item with ``s_i > t`` plus any ``c - #{s_j > t}`` of the items with
``s_i = t``. The metrics never break a tie by index; all of them depend on ``S`` only through
the scores of its members, and every valid Top-c scores ``precision = recall = f1 = ncs = ncr = 1``
and ``fnr = ser = 0``, while no answer of at most c picks scores better.

* Set metrics (precision, recall, F1, FNR) use the valid Top-c that best matches ``S``:
  ``TP = max_T |S ∩ T| = |{i in S: s_i > t}| + min(|{i in S: s_i = t}|, c - #{j: s_j > t})``.
  Any tied item fills a slot at the c-th score, but there are only as many slots as the Top-c
  has left there: for scores (5, 3, 3) and c = 2 the answer {1, 2} has TP = 1 (it misses the
  top item whichever tie is "true"), while {0, 1} and {0, 2} both have TP = 2.
* Score metrics (SER, NCS, NCR) credit each pick by its score. SER/NCS sum supports, which tied
  items share by definition. NCR gives every member of a tie group the same relevance: a group
  occupying sorted positions ``a..b`` earns the mean of ``c - p + 1`` over the positions ``p`` in
  ``a..min(b, c)`` (0 if ``a > c``). Inside the top-c this is the usual mid-rank; for a group
  straddling position c it is the mean relevance of the Top-c slots the group fills, so a tied
  item counts like the c-th item, as it does for SER. (For (5, 3, 3), c = 2: relevances 2, 1, 1;
  ``ncr({1, 2}) = 2/3``, ``ncs({1, 2}) = 6/8``.)

Which picks count (the answer set ``S``). Entries outside ``[0, n)`` (the -1 padding) are not
picks. A repeated index counts once, at its first occurrence (SVT outputs never repeat an item;
the rule only makes the metrics total). Only the first ``c`` distinct picks in stream order form
the answer: a top-c query is answered by at most c items, which SVT's cut-off guarantees, and
for mechanisms without a cut-off (``stoddard``, ``chen``) the first c ⊤ are the answer. Hence
``|S| <= c``, ``TP <= c``, and every metric lies in [0, 1] (``ser``/``ncs`` for non-negative
scores). Scores may be any finite reals for the set metrics and NCR; SER/NCS assume supports
(``>= 0``) with a positive top-c total, checked when the inputs are concrete.

References:
  Min Lyu, Dong Su, Ninghui Li. Understanding the Sparse Vector Technique for Differential
  Privacy. PVLDB 10(6), 2017, Section 5 ("Utility Measures": FNR and SER).
  Slides of the same paper, "Evaluation Metrics": F-Measure ("harmonic mean of precision and
  recall of the computed item set and the ground truth item set"), Normalized Cumulative Gain
  ``NCG = sum_{q in U_A(D)} rel(q) / c`` with NCR ("highest one has rank N, and the next one has
  rank N - 1 ... normalized by the maximum score N(N + 1)/2") and NCS
  (``sum_{q in U_A(D)} q(D) / sum_{q in U_T} q(D)``). Reading of the (extracted) slides: NCG's
  generic normaliser is shown as c, but each instantiation is normalised by its ideal value
  (the top-c's), which is what is implemented; the slides' N is the number of items to select,
  c (so NCR's ideal is c(c + 1)/2); ``U_T`` is the true top-c set; their plots show
  ``1.0 - NCS``, i.e. SER.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

from svtjax import _answer_sums, _bits, _fixedpoint, _validate
from svtjax._answer_set import answer_mask, item_tables, top_tables
from svtjax._answer_sums import Counts as _Counts
from svtjax._answer_sums import Fixed as _Fixed
from svtjax._pytree import is_concrete
from svtjax._summary import Summary, summary
from svtjax._types import Array, ArrayLike

__all__ = [
    "METRICS",
    "Summary",
    "evaluate",
    "evaluate_outcome",
    "f1",
    "fnr",
    "ncr",
    "ncs",
    "precision",
    "recall",
    "ser",
    "summary",
]


def _float_dtype(scores: Array) -> Any:
    if jnp.issubdtype(scores.dtype, jnp.floating):
        return scores.dtype
    return jax.dtypes.canonicalize_dtype(jnp.float64)


def _counts(selected: Array, scores: Array, c: Array) -> _Counts:
    dtype = _float_dtype(scores)
    n = scores.shape[0]
    keep = answer_mask(selected, n, c)
    descending = jnp.sort(scores)[::-1]  # the sort of _item_tables (one sort once compiled)
    fixed = _answer_sums.tables(scores, item_tables(scores, c, dtype), descending, c, n,
                                _fixedpoint.INT_ACCUMULATOR)
    return _gathered_counts(keep, selected, n, fixed)


def _gathered_counts(keep: Array, selected: Array, n: int, fixed: _Fixed) -> _Counts:
    """The sufficient statistics of the answer sets ``selected[keep]`` (distinct items, at most
    c per row): the item tables gathered at the picks and summed as integers."""
    idx = jnp.clip(selected, 0, n - 1)
    # column by column: gathers of single numbers fuse with their sums (rows of the table
    # gathered at once and summed over the picks' axis are slower on a CPU)
    sums = jnp.stack([jnp.sum(jnp.where(keep, column[idx], 0), axis=-1, dtype=jnp.int32)
                      for column in fixed.table.T], axis=-1)
    return _answer_sums.counts(jnp.sum(keep, axis=-1, dtype=jnp.int32), sums, fixed)


def _divide(a: Array, b: Array) -> Array:
    """``a / b``, correctly rounded, for a scalar ``b``: XLA may turn a division by a broadcast
    scalar into a product with its reciprocal (an ulp off), or not, depending on the program
    around it; a divisor that is not a broadcast keeps every program's numbers the same."""
    return a / jax.lax.optimization_barrier(jnp.broadcast_to(b, a.shape))


def _from_counts(k: _Counts, c: Array) -> dict[str, Array]:
    dtype = k.support.dtype
    tp, size, cf = k.tp.astype(dtype), k.size.astype(dtype), c.astype(dtype)
    recall_ = _divide(tp, cf)
    return {
        "precision": jnp.where(size > 0, tp / jnp.maximum(size, 1), 0),
        "recall": recall_,
        "f1": 2 * tp / (size + cf),
        "fnr": 1 - recall_,
        "ser": _divide(k.missing, k.top_support),  # exact numerator: 0 for every valid top-c
        "ncr": _divide(k.relevance, cf * (cf + 1) / 2),
        "ncs": _divide(k.support, k.top_support),
    }


_metrics_of_counts = jax.jit(_from_counts)
""":func:`_from_counts` as one program (called outside ``jit``, each of its operations was a
program of its own per batch shape); inside an outer ``jit`` it is inlined, with the same numbers
(every division is correctly rounded whatever program it is in, :func:`_divide`)."""


@jax.jit
def _evaluate(selected: Array, scores: Array, c: Array) -> dict[str, Array]:
    """Every metric from one pass; under an outer ``jit`` the unused ones are dead code."""
    c = jnp.asarray(c).astype(jnp.int32)
    return _from_counts(_counts(selected, scores, c), c)


_OUTCOME_BLOCK = 256


@functools.partial(jax.jit, static_argnames=("k", "n_items", "single_pass"))
def _outcome_counts(answers: Array, items, scores: Array, c: Array, *, k: int, n_items: int,
                    single_pass: bool) -> tuple[_Counts, Array]:
    """The sufficient statistics of the answer set of every row of an Outcome batch, and each
    row's evaluated positions in the part read (for single-pass rows: the prefix length).

    The first c ⊤ of a row in stream order form its answer set (distinct items, as mechanisms
    produce them); a single-pass row is read up to its first -1 (its halt), a multi-pass row up
    to its c-th ⊤, block by block. The item tables come from the top k >= c scores
    (:func:`top_tables`). Two ways to sum them:

    * the first c ⊤ are collected as picks (``svtjax.selected``'s loop) and the tables gathered
      at those k slots only, not at every position read: stored items (shuffled), and on a CPU
      where svtjax's compiled loop collects the picks (:mod:`svtjax._native`) a compact Outcome
      too: the same answer sets and metrics, and on a CPU a cheaper
      reducer than the block loop below (``svtjax-f1`` against ``svtjax`` in
      ``benchmarks/RESULTS.md``);
    * ``items`` None (a compact Outcome: the item at position p is p mod ``n_items``, the same
      for every row) without the compiled loop: each block keeps its ⊤ up to the (c − count)-th
      (one rank query per row, ``svtjax._bits``) and adds a [rows, W] x [W, m] product with the
      tables' rows there (integers below 2**24: exact in any order).

    Both sum the tables' fixed-point limbs (``svtjax._answer_sums``), so the two give the same
    numbers, and a row's numbers do not depend on the other rows of the batch.
    """
    from svtjax import _native
    from svtjax._core import _first_tops, _row_block
    from svtjax._loops import compacting_block_loop

    dtype = _float_dtype(scores)
    width_k = min(k, scores.shape[0])
    tables = top_tables(scores, c, width_k, dtype)
    # Limb sums below 2**24: exact as float32 too (the block loop's product below), so both
    # ways give the same numbers.
    fixed = _answer_sums.tables(scores, tables, tables[4], c, width_k,
                                _fixedpoint.FLOAT_ACCUMULATOR)
    if items is not None or (_native.first_tops_target() is not None
                             and answers.dtype == jnp.int8):
        picks, _, evaluated = _first_tops(answers, items, c, k, n_items, single_pass)
        return _gathered_counts(picks >= 0, picks, scores.shape[0], fixed), evaluated
    table = fixed.table.astype(dtype)  # [n, m]: small integers, exact in dtype
    rows, length = answers.shape
    width = min(_OUTCOME_BLOCK, length)
    num_blocks = -(-length // width)
    slot = jnp.arange(width, dtype=jnp.int32)

    def body(b, carry, answers):
        count, sums, evaluated, done = carry
        blk, fresh = _row_block(answers, b, width)
        start = jnp.minimum(b * width, length - width)
        live = fresh[None, :] & ~done[:, None]
        if single_pass:  # a halted row: nothing after its first -1
            first_stop = jnp.min(jnp.where((blk < 0) & live, slot, width), axis=1)
            live = live & (slot[None, :] < first_stop[:, None])
        top = (blk == 1) & live
        last = _bits.nth_true(top, c - count)  # the first c ⊤ of the row
        keep = (top & (slot[None, :] <= last[:, None])).astype(dtype)
        if length == n_items:
            tab = jax.lax.dynamic_slice_in_dim(table, start, width)
        else:
            tab = table[(start + slot) % n_items]
        # int16 sums: a same-width reduction, which XLA's CPU backend vectorises (W <= 256)
        count = count + jnp.sum(top.astype(jnp.int16), axis=1,
                                dtype=jnp.int16).astype(jnp.int32)
        if single_pass:  # the fresh slots are a suffix of the block
            evaluated = evaluated + jnp.where(done, 0, first_stop - (b * width - start))
            stop = first_stop < width
        else:
            evaluated = evaluated + jnp.sum((live & (blk >= 0)).astype(jnp.int16), axis=1,
                                            dtype=jnp.int16).astype(jnp.int32)
            stop = count >= c
        # HIGHEST: full-precision products (an accelerator's default may round the limbs)
        picked = jnp.matmul(keep, tab, precision=jax.lax.Precision.HIGHEST)
        return (count, sums + picked, evaluated, done | stop), answers

    init = (jnp.zeros((rows,), jnp.int32), jnp.zeros((rows, table.shape[1]), dtype),
            jnp.zeros((rows,), jnp.int32), jnp.zeros((rows,), bool))
    count, sums, evaluated, _ = compacting_block_loop(body, lambda carry: ~carry[3], init,
                                                      answers, num_blocks)
    return _answer_sums.counts(jnp.minimum(count, c), sums.astype(jnp.int32), fixed), evaluated


def evaluate_outcome(outcome, scores: ArrayLike, c: Any, *, max_c: Optional[int] = None
                     ) -> dict[str, Array]:
    """Every metric of :data:`METRICS` straight from a batch of Outcomes, per trial.

    Equal to ``evaluate(svtjax.selected(outcome, c), scores, c)`` for the Outcomes mechanisms
    produce (the ⊤ items of a trial are distinct), in one block-wise pass that reads each trial
    only up to its halt (a single-pass stream) or its c-th ⊤ (retraversal), gathering the item
    tables at the c answer slots only; this makes it the reducer to use inside
    ``simulate(..., reduce=)`` and sweeps. Also returns ``"picks"`` (|S|, int32) and
    ``"evaluated"``: the positions each trial evaluated (the prefix up to its halt for a
    single-pass stream; the positions read otherwise).

    Args:
      outcome: an ``Outcome`` with any number of leading batch axes.
      scores: real ``[n]``, the true item scores.
      c: size of the true top-c set: an integer >= 1, or a traced integer with ``max_c``.
      max_c: a Python int >= c, the static number of answer slots per trial; needed when ``c``
        is traced (a sweep's per-point c), else ``c`` itself.

    Returns:
      A dict metric name -> float ``[...]`` (and ``"picks"``, ``"evaluated"``: int32 ``[...]``).
    """
    from svtjax._core import _rows_of

    scores = jnp.asarray(scores)
    if scores.ndim != 1:
        raise ValueError(f"scores must be a 1-D array; got shape {scores.shape}")
    answers, items, batch = _rows_of(outcome)
    n_items = getattr(outcome, "_n", None) or scores.shape[0]
    if int(n_items) != scores.shape[0]:
        raise ValueError(f"the Outcome is over {n_items} items but scores has "
                         f"{scores.shape[0]}")
    if max_c is not None and (not isinstance(max_c, (int, np.integer)) or
                              isinstance(max_c, bool) or max_c < 1):
        raise ValueError(f"max_c must be an integer >= 1; got {max_c!r}")
    if is_concrete(c):
        if np.ndim(c) != 0 or int(c) != c or int(c) < 1:
            raise ValueError(f"c must be an integer >= 1; got {c!r}")
        if int(c) > scores.shape[0]:
            raise ValueError(f"c must be at most the number of items ({scores.shape[0]}); "
                             f"got {int(c)}")
        if max_c is not None and int(c) > max_c:
            raise ValueError(f"c = {int(c)} exceeds max_c = {max_c}")
        k = int(c) if max_c is None else int(max_c)
    elif max_c is None:
        raise ValueError("c is traced, so its answer slots are unknown when the program is "
                         "built: pass max_c=<an int >= c>")
    else:
        k = int(max_c)
    length = answers.shape[-1]
    c = jnp.asarray(c).astype(jnp.int32)
    counts, evaluated = _outcome_counts(answers, items, scores, c, k=k,
                                        n_items=scores.shape[0],
                                        single_pass=length == scores.shape[0])
    out = _metrics_of_counts(counts, c)
    out = {name: v.reshape(batch) for name, v in out.items()}
    out["picks"] = counts.size.reshape(batch)
    out["evaluated"] = evaluated.reshape(batch)
    return out


def _prepare(selected: ArrayLike, scores: ArrayLike, c: Any, *, needs_support: bool = False
             ) -> tuple[Array, Array, Any]:
    """Checks shapes always, values when concrete; returns jnp arrays."""
    host_scores = None
    if is_concrete(scores):
        host_scores = _validate.finite_vector("scores", scores)
    # Host arrays are put on the device as they are: jnp.asarray of a host array compiles a
    # small program per shape.
    scores = jnp.asarray(scores) if host_scores is None or isinstance(scores, jax.Array) else \
        jax.device_put(host_scores)
    if scores.ndim != 1 or scores.shape[0] == 0:
        raise ValueError(f"scores must have shape (n,) with n >= 1; got {scores.shape}")
    n = scores.shape[0]
    selected = jnp.asarray(selected) if not isinstance(selected, np.ndarray) else selected
    if not jnp.issubdtype(selected.dtype, jnp.integer):
        raise TypeError("selected must be an integer array [..., k] of item indices padded with "
                        f"-1 (as svtjax.selected returns); got dtype {selected.dtype}")
    if selected.ndim < 1:
        raise ValueError("selected must have shape [..., k] (k picks per trial); got a scalar")
    if is_concrete(c):
        _validate.integer("c", c, minimum=1)
        if np.ndim(c) != 0:
            raise ValueError(f"c must be a scalar; got shape {np.shape(c)}")
        if int(c) > n:
            raise ValueError(f"c must be at most the number of items n={n}; got c={int(c)}")
    elif jnp.ndim(c) != 0:
        raise ValueError(f"c must be a scalar; got shape {jnp.shape(c)}")
    if is_concrete(selected) and selected.size:
        lo, hi = (int(v) for v in _range(selected))
        if lo < -1 or hi >= n:
            raise ValueError(f"selected must hold item indices in [0, {n}) or -1 (padding); "
                             f"got values in [{lo}, {hi}]")
    if needs_support and host_scores is not None and is_concrete(c):
        top = float(np.sort(host_scores.astype(float))[::-1][: int(c)].sum())
        if not top > 0:
            raise ValueError("ser/ncs divide by the total score of the true top-c, which must be "
                             f"positive (scores are supports, >= 0); got {top!r} for c={int(c)}")
    if is_concrete(c):
        c = np.int32(c)  # one cache entry for Python ints, numpy and jax integers alike
    if isinstance(selected, np.ndarray):
        return jax.device_put(selected.astype(np.int32)), scores, c
    return jnp.asarray(selected).astype(jnp.int32), scores, c


def _range(selected: Any) -> tuple[Any, Any]:
    if isinstance(selected, np.ndarray):
        return selected.min(), selected.max()
    return jax.device_get(_min_max(selected))


@jax.jit
def _min_max(x: Array) -> tuple[Array, Array]:
    return jnp.min(x), jnp.max(x)


def evaluate(selected: ArrayLike, scores: ArrayLike, c: Any) -> dict[str, Array]:
    """Every metric of :data:`METRICS` in one pass.

    Args:
      selected: int ``[..., k]``, picked item indices in stream order, padded with -1.
      scores: real ``[n]``, the true item scores (non-negative supports, for SER/NCS).
      c: size of the true top-c set, ``1 <= c <= n``.

    Returns:
      A dict metric name -> float ``[...]``.

    Raises:
      ValueError, TypeError: as the individual metrics.
    """
    return _evaluate(*_prepare(selected, scores, c, needs_support=True))


def precision(selected: ArrayLike, scores: ArrayLike, c: Any) -> Array:
    """Fraction of the answer set that belongs to the true top-c.

    ``precision = TP / |S|``, 0 for an empty answer (no picks), following scikit-learn's
    ``zero_division=0``. With ties at the c-th score, TP counts matches against the valid Top-c
    that best matches the answer (module docstring, "Tie rule").

    Args:
      selected: int ``[..., k]``, picked item indices in stream order, padded with -1.
      scores: real ``[n]``, the true item scores.
      c: size of the true top-c set, ``1 <= c <= n``.

    Returns:
      float ``[...]``, in [0, 1].

    Raises:
      ValueError, TypeError: on bad shapes, dtypes, ``c`` or (concrete) out-of-range indices.

    References:
      Lyu, Su, Li 2017 slides, "Evaluation Metrics: F-Measure".
    """
    return _evaluate(*_prepare(selected, scores, c))["precision"]


def recall(selected: ArrayLike, scores: ArrayLike, c: Any) -> Array:
    """Fraction of the true top-c found: ``TP / c``.

    With ties at the c-th score, the true top-c is any set of c items of largest total score, and
    ``c - TP`` is the number missed from the best-matching such set (module docstring).

    Args:
      selected: int ``[..., k]``, picked item indices in stream order, padded with -1.
      scores: real ``[n]``, the true item scores.
      c: size of the true top-c set, ``1 <= c <= n``.

    Returns:
      float ``[...]``, in [0, 1].

    References:
      Lyu, Su, Li 2017 slides, "Evaluation Metrics: F-Measure".
    """
    return _evaluate(*_prepare(selected, scores, c))["recall"]


def f1(selected: ArrayLike, scores: ArrayLike, c: Any) -> Array:
    """F-measure: harmonic mean of precision and recall, ``2 TP / (|S| + c)``.

    The closed form needs no special case: an empty answer scores 0.

    Args:
      selected: int ``[..., k]``, picked item indices in stream order, padded with -1.
      scores: real ``[n]``, the true item scores.
      c: size of the true top-c set, ``1 <= c <= n``.

    Returns:
      float ``[...]``, in [0, 1].

    References:
      Lyu, Su, Li 2017 slides, "Evaluation Metrics: F-Measure" ("harmonic mean of precision and
      recall of the computed item set and the ground truth item set").
    """
    return _evaluate(*_prepare(selected, scores, c))["f1"]


def fnr(selected: ArrayLike, scores: ArrayLike, c: Any) -> Array:
    """False negative rate, the fraction of the true top-c missed: ``1 - TP / c``.

    Args:
      selected: int ``[..., k]``, picked item indices in stream order, padded with -1.
      scores: real ``[n]``, the true item scores.
      c: size of the true top-c set, ``1 <= c <= n``.

    Returns:
      float ``[...]``, in [0, 1]; ``1 - recall``.

    References:
      Lyu, Su, Li 2017, Section 5, "Utility Measures": "False negative rate (FNR), i.e., the
      fraction of true top-c frequent items that are missed".
    """
    return _evaluate(*_prepare(selected, scores, c))["fnr"]


def ncs(selected: ArrayLike, scores: ArrayLike, c: Any) -> Array:
    """Normalized cumulative support: ``sum_{i in S} s_i / sum_{j <= c} s_(j)``.

    Missing picks (``|S| < c``) contribute zero support. Scores are supports (``>= 0``) and the
    top-c total must be positive; this is checked when the inputs are concrete.

    Args:
      selected: int ``[..., k]``, picked item indices in stream order, padded with -1.
      scores: real ``[n]``, the true item scores (non-negative supports).
      c: size of the true top-c set, ``1 <= c <= n``.

    Returns:
      float ``[...]``, in [0, 1]; ``1 - ser``.

    References:
      Lyu, Su, Li 2017 slides, "Evaluation Metrics: Normalized Cumulative Gain", NCS:
      ``NCS(U_A(D)) = sum_{q in U_A(D)} q(D) / sum_{q in U_T} q(D)``.
    """
    return _evaluate(*_prepare(selected, scores, c, needs_support=True))["ncs"]


def ser(selected: ArrayLike, scores: ArrayLike, c: Any) -> Array:
    """Support error rate: ``1 - sum_{i in S} s_i / sum_{j <= c} s_(j)``.

    Equals Lyu et al.'s ``1 - avgSup(S) / avgSup(Top_c)`` when ``|S| = c``; for ``|S| < c`` the
    missing picks count as zero support, so an empty answer scores 1.

    Args:
      selected: int ``[..., k]``, picked item indices in stream order, padded with -1.
      scores: real ``[n]``, the true item scores (non-negative supports).
      c: size of the true top-c set, ``1 <= c <= n``.

    Returns:
      float ``[...]``, in [0, 1].

    References:
      Lyu, Su, Li 2017, Section 5, "Utility Measures", and Table 3 / Figure 3 (SER of top-c
      selection).
    """
    return _evaluate(*_prepare(selected, scores, c, needs_support=True))["ser"]


def ncr(selected: ArrayLike, scores: ArrayLike, c: Any) -> Array:
    """Normalized cumulative rank: rank relevance summed over ``S``, divided by ``c (c + 1) / 2``.

    The item at rank r (1 = highest score) earns ``max(c - r + 1, 0)``: the top item c, the next
    c - 1, ..., the c-th item 1, items below the top-c nothing. Tied items share the mean
    relevance of the top-c positions their group fills (module docstring), so every valid top-c
    set scores 1.

    Args:
      selected: int ``[..., k]``, picked item indices in stream order, padded with -1.
      scores: real ``[n]``, the true item scores.
      c: size of the true top-c set, ``1 <= c <= n``.

    Returns:
      float ``[...]``, in [0, 1].

    References:
      Lyu, Su, Li 2017 slides, "Evaluation Metrics: Normalized Cumulative Gain", NCR: "Highest
      one has rank N, and the next one has rank N - 1. Normalized by the maximum score
      N(N + 1)/2" (N = c).
    """
    return _evaluate(*_prepare(selected, scores, c))["ncr"]


METRICS: dict[str, Callable[[ArrayLike, ArrayLike, Any], Array]] = {
    "precision": precision,
    "recall": recall,
    "f1": f1,
    "fnr": fnr,
    "ser": ser,
    "ncr": ncr,
    "ncs": ncs,
}
"""Metric name -> ``f(selected, scores, c)``; the names used in sweep results."""


