"""The audit of a mechanism: what it claims and proves (:func:`claim`), the parameters it is
audited with (:func:`mechanism_params`), :func:`audit`, the fixed-event checks
:func:`audit_pair` and :func:`count_event`, and the result and its human-readable form."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Mapping, Optional, Sequence

import numpy as np

from svtjax.audit._checks import (
    _check_computable,
    _check_confidence,
    _check_delta,
    _check_int,
    _check_seconds,
    _check_seed,
)
from svtjax.audit.bounds import Bound, conditional_lower_bound, epsilon_lower_bound
from svtjax.audit.constants import (
    _INT32_MAX,
    CHUNK,
    DEFAULT_CONFIDENCE,
    DEFAULT_CUTOFF,
    DEFAULT_DELTA,
    MAX_TRIALS,
    NUM_QUERIES,
)
from svtjax.audit.events import Event
from svtjax.audit.halving import Witness, search
from svtjax.audit.pairs import Pair, candidate_pairs, check_pair
from svtjax.audit.sampler import SimulationSampler, _subseed


def claim(mech) -> dict[str, Any]:
    """What ``mech`` claims and proves: {statement, nominal_epsilon, proven_epsilon (None if
    nothing finite is proved), delta (the δ both refer to)}."""
    g = mech.privacy()
    delta = getattr(mech, "delta", None)
    delta = 0.0 if delta is None else float(delta)
    eps = g.epsilon(delta)
    if not math.isfinite(eps) and delta == 0.0:
        finite_at = g.epsilon(DEFAULT_DELTA)
        if math.isfinite(finite_at):
            delta, eps = DEFAULT_DELTA, finite_at
    proven = float(eps) if math.isfinite(eps) else None
    nominal = getattr(mech, "epsilon", None)
    if nominal is None:
        nominal = getattr(g, "nominal", None)
    try:
        nominal = float(nominal) if nominal is not None else None
    except (TypeError, ValueError):
        nominal = None
    if nominal is not None and not math.isfinite(nominal):
        nominal = None
    return {"statement": str(g), "nominal_epsilon": proven if nominal is None else nominal,
            "proven_epsilon": proven, "delta": delta}


@dataclasses.dataclass(frozen=True)
class AuditResult:
    """One mechanism's audit: what it claims and proves, the bound found and the witness."""

    mechanism: str
    params: dict
    statement: str
    nominal_epsilon: Optional[float]
    proven_epsilon: Optional[float]
    delta: float
    bound: Bound
    witness: Optional[Witness]
    num_pairs: int
    selection_trials: int
    validation_trials: int
    seconds: float
    progress: tuple = ()
    compile_seconds: float = 0.0
    trials_per_second: float = 0.0

    @property
    def lower_bound(self) -> float:
        return self.bound.epsilon

    @property
    def confidence(self) -> float:
        return self.bound.confidence

    @property
    def exceeds_nominal(self) -> Optional[bool]:
        """The bound exceeds the ε the mechanism is run at (its paper's claim): a violation of
        the claim. None when there is no nominal ε."""
        return None if self.nominal_epsilon is None else self.lower_bound > self.nominal_epsilon

    @property
    def exceeds_proven(self) -> Optional[bool]:
        """The bound exceeds what ``privacy()`` proves: a bug in a kernel or a privacy formula
        (or a 1 − confidence accident). None when nothing finite is proved."""
        return None if self.proven_epsilon is None else self.lower_bound > self.proven_epsilon

    def to_dict(self) -> dict[str, Any]:
        b = self.bound
        return {"mechanism": self.mechanism, "params": _jsonable(self.params),
                "statement": self.statement, "nominal_epsilon": self.nominal_epsilon,
                "proven_epsilon": self.proven_epsilon, "delta": self.delta,
                "lower_bound": self.lower_bound, "confidence": self.confidence,
                "exceeds_nominal": self.exceeds_nominal,
                "exceeds_proven": self.exceeds_proven, "method": b.method,
                "count": b.count, "validation_trials": b.trials,
                "count_prime": b.count_prime, "validation_trials_prime": b.trials_prime,
                "selection_trials": self.selection_trials,
                "total_trials": self.selection_trials + self.validation_trials,
                "num_pairs": self.num_pairs,
                "witness": self.witness.to_dict() if self.witness else None,
                "seconds": self.seconds, "compile_seconds": self.compile_seconds,
                "trials_per_second": self.trials_per_second, "progress": list(self.progress)}


def _jsonable(params: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in params.items():
        out[k] = v if isinstance(v, (bool, int, float, str, type(None))) else repr(v)
    return out


def _params_of(mech) -> dict[str, Any]:
    """The mechanism's parameters, read by the names ``svtjax.mechanisms.parameters`` lists."""
    from svtjax import mechanisms

    try:
        names = list(mechanisms.parameters(mech.name))
    except (ValueError, AttributeError):
        return {}
    return {k: getattr(mech, k) for k in names if hasattr(mech, k)}


class AuditFailure(RuntimeError):
    """An audit that failed while computing, after every input was checked: a bug in svtjax
    (or in a plugin mechanism), reported with its traceback, never as bad input."""


def audit(mech, *, pairs: Optional[Sequence[Pair]] = None, trials: Optional[int] = None,
          search_trials: Optional[int] = None, seconds: Optional[float] = None,
          confidence: float = DEFAULT_CONFIDENCE, delta: Optional[float] = None, seed: int = 0,
          num_queries: int = NUM_QUERIES, log: Optional[Callable[[str], None]] = None
          ) -> AuditResult:
    """Searches for a witness that ``mech`` is less private than it claims.

    Args:
      mech: a mechanism (``svtjax.get(...)``).
      pairs: candidate pairs (default :func:`candidate_pairs`); each is validated.
      trials: validation trials per side (default 200 000 when ``seconds`` is None).
      search_trials: first-round search trials per side per pair (see :func:`search`).
      seconds: wall-clock budget instead of ``trials`` (compilation included).
      confidence: of the lower bound (default 0.99).
      delta: δ of the bound (default: the δ of the mechanism's claim, :func:`claim`).
      seed: an integer in [0, 2**64) (all 64 bits used); all randomness derives from it.
      num_queries: length of the default candidate pairs.
      log: progress lines.

    Returns:
      An :class:`AuditResult`.

    Raises:
      TypeError / ValueError: not a mechanism, a pair that is not neighbouring, both
        ``trials`` and ``seconds``, bad sizes, confidence or δ (before anything compiles).
    """
    from svtjax.mechanisms import Mechanism

    if not isinstance(mech, Mechanism):
        raise TypeError("mech must be a mechanism built with svtjax.get(name, ...); "
                        f"got {type(mech).__name__}")
    seed = _check_seed(seed)
    confidence = _check_confidence(confidence)
    if seconds is not None and trials is not None:
        raise ValueError("give either trials or seconds, not both")
    if seconds is None and trials is None:
        trials = 200_000
    if seconds is not None:
        seconds = _check_seconds(seconds)
    else:
        _check_int("trials", trials, 1, MAX_TRIALS)
    if search_trials is not None:
        _check_int("search_trials", search_trials, 1, _INT32_MAX)
    _check_computable(mech)  # before anything computes with its parameters
    info = claim(mech)
    delta = info["delta"] if delta is None else _check_delta(delta)
    if pairs is None:
        pairs = candidate_pairs(mech, num_queries=num_queries)
    checked = []
    for pair in pairs:
        q, qp = check_pair(mech, pair.queries, pair.queries_prime, pair.thresholds)
        checked.append(Pair(pair.name, q, qp, pair.thresholds))
    if len({p.queries.size for p in checked}) != 1:
        raise ValueError("all candidate pairs must have the same number of queries (pad "
                         "them): one length compiles once")
    sampler = SimulationSampler(mech)
    _check_computable(mech, checked, sampler.edges)
    try:  # every input is checked above: an error from here on is svtjax's, not the user's
        result = search(sampler, checked, trials=trials, search_trials=search_trials,
                        seconds=seconds, confidence=confidence, delta=delta, seed=seed, log=log)
    except (ValueError, TypeError, LookupError, ArithmeticError) as err:
        raise AuditFailure(f"the audit of {mech.name} failed after its inputs were checked: "
                           f"{type(err).__name__}: {err}") from err
    return AuditResult(mech.name, _params_of(mech), info["statement"], info["nominal_epsilon"],
                       info["proven_epsilon"], delta, result.bound, result.witness,
                       result.num_pairs, result.selection_trials, result.validation_trials,
                       result.seconds, result.progress, result.compile_seconds,
                       result.trials_per_second)


def count_event(mech, queries, thresholds, event: Event, *, trials: int, seed: int = 0,
                chunk_size: int = CHUNK) -> int:
    """How many of ``trials`` runs of ``mech`` on ``queries`` land in ``event`` (on-device).

    A ``counts`` event counts ⊤ on the item groups it was chosen with (``event.groups``).
    """
    _check_int("trials", trials, 1, _INT32_MAX)
    seed = _check_seed(seed)
    q = np.asarray(queries, dtype=float)
    groups = _event_groups(event, q.size)
    sampler = SimulationSampler(mech, chunk_size=chunk_size, edges=event.edges)
    _check_computable(mech, [Pair("count_event", q, q, thresholds)], sampler.edges)
    return event.count(sampler.histograms(q, thresholds, groups, trials, seed))


def _event_groups(event: Event, n: int) -> np.ndarray:
    if event.groups is not None:
        if len(event.groups) != n:
            raise ValueError(f"the event counts ⊤ on groups of {len(event.groups)} items; the "
                             f"queries have {n}")
        return np.asarray(event.groups, np.int32)
    return np.full(n, 2, np.int32)


def audit_pair(mech, queries, queries_prime, event: Event, *, thresholds=0.0, trials: int,
               confidence: float = DEFAULT_CONFIDENCE, delta: float = 0.0, seed: int = 0
               ) -> Bound:
    """Lower bound on ε from ``trials`` runs per side of one fixed pair and event.

    The event must be fixed independently of these runs (e.g. chosen on other samples). For
    δ = 0 the 2·``trials`` runs are split between the sides by fair coin flips and the bound is
    :func:`conditional_lower_bound`; for δ > 0, :func:`epsilon_lower_bound`.
    """
    confidence = _check_confidence(confidence)
    delta = _check_delta(delta)
    _check_int("trials", trials, 1, MAX_TRIALS)
    seed = _check_seed(seed)
    _check_computable(mech)
    q, qp = check_pair(mech, queries, queries_prime, thresholds)
    _check_computable(mech, [Pair("queries", q, qp, thresholds)])
    if delta == 0.0:
        n1 = int(np.random.default_rng(_subseed(seed, 4)).binomial(2 * trials, 0.5))
        n2 = 2 * trials - n1
    else:
        n1 = n2 = trials
    k1 = count_event(mech, q, thresholds, event, trials=n1, seed=_subseed(seed, 3, 0)) if n1 else 0
    k2 = (count_event(mech, qp, thresholds, event, trials=n2, seed=_subseed(seed, 3, 1))
          if n2 else 0)
    if delta == 0.0:
        return conditional_lower_bound(k1, n1, k2, n2, confidence=confidence)
    return epsilon_lower_bound(k1, n1, k2, n2, confidence=confidence, delta=delta)


def format_result(r: AuditResult) -> str:
    """Human-readable lines for one audit."""
    proven = "none (not private / unproven)" if r.proven_epsilon is None else (
        f"{r.proven_epsilon:.4g}")
    d = f" (δ = {r.delta:g})" if r.delta else ""
    b = r.bound

    def verdict(flag, what):
        return "n/a" if flag is None else ("YES, " + what if flag else "no")

    lines = [
        f"mechanism        {r.mechanism} {_jsonable(r.params)}",
        f"claim            {r.statement}",
        f"nominal ε        {r.nominal_epsilon}",
        f"proven ε         {proven}{d}",
        f"lower bound      ε ≥ {r.lower_bound:.4f} at {100 * r.confidence:g}% confidence{d} "
        f"({b.method})",
        f"counts           {b.count} of {b.trials} on q vs {b.count_prime} of "
        f"{b.trials_prime} on q′",
        f"trials           {r.selection_trials + r.validation_trials} in all ({r.num_pairs} "
        f"pairs searched with {r.selection_trials}; validation {r.validation_trials}), "
        f"{r.seconds:.1f} s",
        f"witness          {r.witness.describe() if r.witness else 'none'}",
        f"exceeds nominal  {verdict(r.exceeds_nominal, 'the claim is violated')}",
        f"exceeds proven   {verdict(r.exceeds_proven, 'ABOVE THE PROVEN ε: a bug')}",
    ]
    return "\n".join(lines)


def _example_params(name: str, *, epsilon: float, c: int, n: int) -> dict[str, Any]:
    """``cls.example_params(epsilon=, c=, n=)`` of the registered class (parameters for a
    standard run: ε, the cut-off, any required parameter)."""
    from svtjax import mechanisms

    return dict(mechanisms.registry()[name].example_params(epsilon=epsilon, c=c, n=n))


def mechanism_params(name: str, epsilon: float, c: Optional[int] = None,
                     extra: Optional[dict[str, Any]] = None, *,
                     num_queries: int = NUM_QUERIES) -> dict[str, Any]:
    """The parameters an audit runs ``name`` with.

    The mechanism's ``example_params`` at ε, the cut-off ``c`` (``DEFAULT_CUTOFF`` when None;
    ``c`` or ``k``, whichever it takes) and the pair length, then ``extra``, then two generic
    audit rules: a mechanism with Gaussian noise and a ``k_max`` has its stream capped at the
    pair length (its RDP claim is finite only for a finite k_max), and one that takes a
    ``delta`` and cannot be calibrated without it gets ``DEFAULT_DELTA``.

    Raises:
      ValueError: unknown name, or ``c`` given for a mechanism without a cut-off.
    """
    import svtjax
    from svtjax import mechanisms
    from svtjax.noise import Gaussian

    accepted = mechanisms.parameters(name)
    has_cutoff = any(k in accepted for k in ("c", "k"))
    if c is not None and not has_cutoff:
        raise ValueError(f"{name} has no cut-off parameter (c or k); drop --c")
    cutoff = DEFAULT_CUTOFF if c is None else c
    params = _example_params(name, epsilon=epsilon, c=cutoff, n=num_queries)
    if c is not None:
        params[next(k for k in ("c", "k") if k in accepted)] = c
    params["epsilon"] = epsilon
    params.update(extra or {})
    if "k_max" in accepted and any(isinstance(v, Gaussian) for v in params.values()):
        params["k_max"] = min(int(params.get("k_max") or num_queries), num_queries)
    if "delta" in accepted and params.get("delta") is None:
        try:
            svtjax.get(name, **params)
        except ValueError:
            params["delta"] = DEFAULT_DELTA
    return params
