"""The search: successive halving over candidate pairs, one event chosen, validated on fresh
trials (:func:`search`)."""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Callable, Optional, Sequence

import numpy as np

from svtjax.audit._checks import (
    _check_confidence,
    _check_delta,
    _check_int,
    _check_seconds,
    _check_seed,
)
from svtjax.audit.bounds import Bound, _predicted, conditional_lower_bound, epsilon_lower_bound
from svtjax.audit.constants import (
    _INT32_MAX,
    _RANK_LEVEL,
    CHUNK,
    DEFAULT_CONFIDENCE,
    MAX_TRIALS,
    SEARCH_SHARE,
    VALUE_GRID,
)
from svtjax.audit.events import Event
from svtjax.audit.pairs import Pair
from svtjax.audit.sampler import _Meter, _shapes_of, _subseed
from svtjax.audit.selection import _checked, _merge


@dataclasses.dataclass(frozen=True)
class Witness:
    """Inputs and event behind a bound: P[M(pair.queries) ∈ E] ≥ e^ε P[M(pair.queries_prime)
    ∈ E] + δ at the stated confidence."""

    pair: Pair
    event: Event

    def to_dict(self) -> dict[str, Any]:
        return {"pair": self.pair.to_dict(), "event": self.event.to_dict()}

    def describe(self) -> str:
        return f"{self.pair.describe()}; E: {self.event.describe()}"


@dataclasses.dataclass(frozen=True)
class SearchResult:
    """What :func:`search` found.

    Attributes:
      bound: the validated bound (0 with ``witness`` None when no event was seen more often
        on one side than on the other).
      witness: the pair (oriented so that E is likelier on ``pair.queries``) and the event.
      predicted: the bound the selection predicted for the validation.
      selection_trials: trials of the search (both sides, all rounds).
      validation_trials: trials of the validation (both sides).
      num_pairs: candidate pairs searched.
      seconds: wall-clock time, compilation included.
      progress: one entry per search round and one for the validation: the elapsed seconds,
        the trials so far, the pairs still in the race and the leader's predicted (then the
        validated) bound.
      compile_seconds: the first sampler call (compilation and one chunk).
      trials_per_second: the sampler's measured rate after it.
    """

    bound: Bound
    witness: Optional[Witness]
    predicted: float
    selection_trials: int
    validation_trials: int
    num_pairs: int
    seconds: float
    progress: tuple = ()
    compile_seconds: float = 0.0
    trials_per_second: float = 0.0

    @property
    def total_trials(self) -> int:
        return self.selection_trials + self.validation_trials


def default_search_trials(trials: int) -> int:
    """First-round search trials per side per pair (each half) for ``trials`` validation
    trials per side: with the default pairs the halving rounds then cost about half as many
    trials as the validation (and at least one chunk per call)."""
    return max(CHUNK, trials // 256 // CHUNK * CHUNK)


def search(sampler, pairs: Sequence[Pair], *, trials: Optional[int] = None,
           search_trials: Optional[int] = None, seconds: Optional[float] = None,
           confidence: float = DEFAULT_CONFIDENCE, delta: float = 0.0, seed: int = 0,
           log: Optional[Callable[[str], None]] = None) -> SearchResult:
    """Successive halving over pairs, one event chosen, validated on fresh trials.

    Every round draws a fresh sample of each surviving pair. Events are *proposed* on the
    pair's earlier samples (:func:`_candidates`: per family and direction, the best
    Neyman–Pearson prefix of cells and the best single cell) and *scored* on the fresh one, so
    that a cell that looked good by chance among thousands does not win (the first round is
    drawn as two halves: one proposes, one scores). The better half of the pairs by score
    survives (and none whose optimistic score is below the leader's), with twice the trials,
    until one is left (or the search's time is up); its best-scoring event is validated on
    new trials.

    Args:
      sampler: where histograms come from (:class:`SimulationSampler` or a stand-in).
      pairs: candidate neighbouring pairs (already validated), all of one length.
      trials: validation trials per side (for δ = 0, the two sides' numbers are drawn as
        Binomial(2·trials, 1/2), :func:`conditional_lower_bound`).
      search_trials: first-round trials per side per pair (default
        :func:`default_search_trials`; each half gets this many); each later round doubles it.
      seconds: a wall-clock budget instead of ``trials`` (compilation included): after the
        first round, ``SEARCH_SHARE`` of the time left goes to the rounds, the rest to
        validation, sized from the measured trial rate.
      confidence, delta: of the bound (δ = 0: the conditional bound; else Clopper–Pearson).
      seed: an integer in [0, 2**64), as for ``svtjax.simulate`` (all 64 bits used); every
        phase uses seeds derived from it (no two calls share one).
      log: progress lines (default: none).

    Returns:
      A :class:`SearchResult`.

    Raises:
      ValueError / TypeError: no pairs, pairs of different lengths, neither or both of
        ``trials`` and ``seconds``, bad sizes, confidence or δ.
    """
    confidence, delta, seed, trials, seconds = _check_search(
        pairs, trials, search_trials, seconds, confidence, delta, seed)
    race = _Race(sampler, pairs, seed, 1.0 - confidence, delta, trials, log)
    if seconds is not None:
        search_end, base = _time_budget(race, seconds, search_trials)
    else:
        search_end = math.inf
        base = int(search_trials) if search_trials is not None else default_search_trials(trials)
    for rnd in range(64):
        n_r = _round_trials(race, rnd, base, search_end if seconds is not None else None)
        if n_r is None:
            break
        ranked = _play_round(race, rnd, n_r)
        if len(race.alive) == 1:
            break
        race.alive = _survivors(race, ranked)
        if len(race.alive) == 1:
            break  # its latest sample has scored its events: the rest is validation
    return _validate(race, seconds, confidence)


def _check_search(pairs, trials, search_trials, seconds, confidence, delta, seed):
    """:func:`search`'s argument checks: (confidence, δ, seed, trials, seconds), checked."""
    confidence = _check_confidence(confidence)
    delta = _check_delta(delta)
    if not pairs:
        raise ValueError("search needs at least one candidate pair")
    if len({np.asarray(p.queries).size for p in pairs}) != 1:
        raise ValueError("all candidate pairs must have the same number of queries (pad "
                         "them): one length compiles once")
    if (trials is None) == (seconds is None):
        raise ValueError("give either trials (validation trials per side) or seconds (a time "
                         "budget), not both")
    seed = _check_seed(seed)
    if seconds is not None:
        seconds = _check_seconds(seconds)
    else:
        _check_int("trials", trials, 1, MAX_TRIALS)
        trials = int(trials)
    if search_trials is not None:
        _check_int("search_trials", search_trials, 1, _INT32_MAX)
    return confidence, delta, seed, trials, seconds


class _Race:
    """The state of one search: the pairs still in the race, each one's samples (``proposal``:
    all before the latest round; ``check``: the latest round's) and scored proposals, the
    trials drawn and the progress so far."""

    def __init__(self, sampler, pairs: Sequence[Pair], seed: int, alpha: float, delta: float,
                 n_val: Optional[int], log: Optional[Callable[[str], None]]):
        self.start = time.perf_counter()
        self.pairs = pairs
        self.seed = seed
        self.alpha = alpha
        self.delta = delta
        self.n_val = n_val  # validation trials per side (None until a time budget sizes it)
        self.say = log or (lambda _msg: None)
        self.chunk = int(getattr(sampler, "chunk_size", CHUNK))
        self.edges = np.asarray(getattr(sampler, "edges", VALUE_GRID), float)
        self.n_q = int(np.asarray(pairs[0].queries).size)
        self.meter = _Meter(sampler)
        self.groups = [p.groups() for p in pairs]
        self.proposal: dict[int, Any] = {}  # pair -> its samples before the latest round
        self.check: dict[int, Any] = {}  # pair -> its latest round's sample
        self.scored: dict[int, list] = {}
        self.progress: list[dict[str, Any]] = []
        self.alive = list(range(len(pairs)))
        self.shapes = None
        self.selection = 0

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def draw(self, j: int, n: int, *tags: int):
        """A sample of ``n`` trials per side of pair ``j`` (phase 1, ``tags``)."""
        h1 = self.meter(self.pairs[j], 0, self.groups[j], n, _subseed(self.seed, 1, *tags, j, 0))
        h2 = self.meter(self.pairs[j], 1, self.groups[j], n, _subseed(self.seed, 1, *tags, j, 1))
        self.selection += 2 * n
        return h1, h2, n

    def rounds_left(self) -> int:
        return max(1, math.ceil(math.log2(len(self.alive))))

    def score(self, j: int) -> None:
        """Scores pair ``j``'s proposals (from its earlier samples) on its latest sample."""
        self.scored[j] = _checked(self.proposal[j], self.check[j], self.n_val, self.alpha,
                                  self.delta, self.shapes, self.groups[j], self.edges)

    def best(self, j: int) -> float:
        """Pair ``j``'s best score (−inf without a proposal)."""
        return self.scored[j][0][0] if self.scored[j] else -math.inf


def _time_budget(race: _Race, seconds: float, search_trials: Optional[int]):
    """With a time budget: compiles and times the sampler on one chunk per side, then splits
    the time left: ``SEARCH_SHARE`` for the rounds (equal shares), the rest for validation.
    Returns (the time the search ends, the first round's trials per side per pair)."""
    meter, chunk, pair, groups = race.meter, race.chunk, race.pairs[0], race.groups[0]
    meter(pair, 0, groups, chunk, _subseed(race.seed, 0, 0))
    meter(pair, 1, groups, chunk, _subseed(race.seed, 0, 1))
    left = max(seconds - race.elapsed(), 0.0)
    search_end = time.perf_counter() + SEARCH_SHARE * left
    race.n_val = min(MAX_TRIALS, max(chunk, int((1 - SEARCH_SHARE) * left * meter.rate / 2)))
    base = int(SEARCH_SHARE * left / race.rounds_left() * meter.rate / (4 * len(race.alive)))
    return search_end, max(chunk, base // chunk * chunk, search_trials or 0)


def _round_trials(race: _Race, rnd: int, base: int, search_end: Optional[float]
                  ) -> Optional[int]:
    """Trials per side per pair of round ``rnd``: doubling from ``base``, or with a time budget
    (``search_end``) an equal share of the search time left (None: no time for a round)."""
    chunk = race.chunk
    if search_end is not None and rnd > 0:
        left = search_end - time.perf_counter()
        rate = race.meter.rate
        n_r = int(left / race.rounds_left() * rate / (2 * len(race.alive))) // chunk * chunk
        if n_r < chunk and left < 2 * chunk * len(race.alive) / rate:
            return None
        n_r = max(n_r, chunk)
    else:
        n_r = base * 2 ** rnd
    max_call = max(chunk, _INT32_MAX // chunk * chunk)
    return min(n_r, max_call)  # one simulate call runs at most 2**31 - 1 trials


def _play_round(race: _Race, rnd: int, n_r: int) -> list[int]:
    """Draws round ``rnd`` (``n_r`` trials per side for every pair alive), scores every pair
    and records the round; returns the pairs alive, best first."""
    for j in race.alive:
        if rnd == 0:
            race.proposal[j] = race.draw(j, n_r, 0, 0)
            race.check[j] = race.draw(j, n_r, 0, 1)
        else:
            race.proposal[j] = _merge(race.proposal[j], race.check[j])
            race.check[j] = race.draw(j, n_r, rnd)
    if race.shapes is None:
        race.shapes = _shapes_of(race.check[race.alive[0]][0], race.n_q, race.edges.size)
    for j in race.alive:
        race.score(j)
    ranked = sorted(race.alive, key=lambda j: -race.best(j))
    leader = ranked[0]
    race.progress.append({"stage": f"search round {rnd}", "seconds": round(race.elapsed(), 3),
                          "trials": race.selection, "pairs": len(race.alive),
                          "leader": race.pairs[leader].name,
                          "predicted": _finite(race.best(leader))})
    race.say(f"  round {rnd}: {len(race.alive)} pairs x {n_r} trials per side; leader "
             f"{race.pairs[leader].name}, predicted {race.best(leader):.4f}"
             + (f" from {race.scored[leader][0][1].event.describe()}"
                if race.scored[leader] else ""))
    return ranked


def _survivors(race: _Race, ranked: list[int]) -> list[int]:
    """The better half of ``ranked``, but nothing that is clearly worse than the leader: whose
    optimistic score is below the leader's pessimistic one (both at ``_RANK_LEVEL``)."""
    leader = ranked[0]
    n_val, alpha, delta = race.n_val, race.alpha, race.delta
    _, _, x0, y0 = race.scored[leader][0] if race.scored[leader] else (0, 0, 0, 0)
    floor = _predicted(x0, y0, race.check[leader][2], n_val, alpha, delta, level=_RANK_LEVEL)
    keep = []
    for j in ranked[:max(1, math.ceil(len(race.alive) / 2))]:
        if not race.scored[j]:
            continue
        _, _, x, y = race.scored[j][0]
        if j == leader or _predicted(x, y, race.check[j][2], n_val, alpha, delta,
                                     optimistic=True, level=_RANK_LEVEL) >= floor:
            keep.append(j)
    return keep or [leader]


def _validate(race: _Race, seconds: Optional[float], confidence: float) -> SearchResult:
    """Validates the winner's best event on fresh trials (for δ = 0 the two sides' sizes split
    by fair coins, :func:`conditional_lower_bound`)."""
    winner = max(race.alive, key=race.best)
    if seconds is not None:
        left = seconds - race.elapsed()
        # the rate over the whole search: on a shared machine the rate of any one call swings
        # with the load (the validation's size must be fixed before it starts, for the
        # coin-split bound; see conditional_lower_bound)
        race.n_val = min(MAX_TRIALS, max(race.chunk, int(0.95 * left * race.meter.rate / 2)))
        race.score(winner)  # the sizes changed: re-scored for the validation size
    delta, meter, n_val = race.delta, race.meter, race.n_val
    if not race.scored[winner] or not race.scored[winner][0][0] > -math.inf:
        bound = (conditional_lower_bound(0, 0, 0, 0, confidence=confidence) if delta == 0
                 else epsilon_lower_bound(0, 1, 0, 1, confidence=confidence, delta=delta))
        return SearchResult(bound, None, -math.inf, race.selection, 0, len(race.pairs),
                            race.elapsed(), tuple(race.progress), meter.compile_seconds,
                            meter.rate)
    predicted, cand, _, _ = race.scored[winner][0]
    pair = race.pairs[winner].swapped() if cand.swap else race.pairs[winner]
    if delta == 0.0:
        n1 = int(np.random.default_rng(_subseed(race.seed, 2)).binomial(2 * n_val, 0.5))
        n2 = 2 * n_val - n1
    else:
        n1 = n2 = n_val
    groups = race.groups[winner]
    k1 = cand.event.count(meter(pair, 0, groups, n1, _subseed(race.seed, 3, 0))) if n1 else 0
    k2 = cand.event.count(meter(pair, 1, groups, n2, _subseed(race.seed, 3, 1))) if n2 else 0
    bound = _bound(k1, n1, k2, n2, confidence, delta)
    elapsed = race.elapsed()
    race.progress.append({"stage": "validation", "seconds": round(elapsed, 3),
                          "trials": race.selection + n1 + n2, "pairs": 1, "leader": pair.name,
                          "predicted": _finite(predicted), "bound": bound.epsilon})
    race.say(f"  validated {pair.name}: {k1} of {n1} vs {k2} of {n2} -> epsilon >= "
             f"{bound.epsilon:.4f} ({bound.method}) from {cand.event.describe()}")
    return SearchResult(bound, Witness(pair, cand.event), predicted, race.selection, n1 + n2,
                        len(race.pairs), elapsed, tuple(race.progress), meter.compile_seconds,
                        meter.rate)


def _bound(k1: int, n1: int, k2: int, n2: int, confidence: float, delta: float) -> Bound:
    """The validated bound: conditional for δ = 0, else Clopper–Pearson."""
    if delta == 0.0:
        return conditional_lower_bound(k1, n1, k2, n2, confidence=confidence)
    return epsilon_lower_bound(k1, n1, k2, n2, confidence=confidence, delta=delta)


def _finite(x: float) -> Optional[float]:
    return float(x) if math.isfinite(x) else None
