"""A sweep's exact columns (``[sweep] exact = true``): ``svtjax.exact``'s expected metrics of
every point whose mechanism has an exact law, computed on the host in groups of points that
share a law structure, stored with the point's record and reused with it."""

from __future__ import annotations

import contextlib
from typing import Optional, Sequence

from svtjax.sweep.config import SweepConfig
from svtjax.sweep.grid import _threshold

EXACT_METRICS = {
    "ser": "E[SER] (svtjax.exact.expected_metrics, no sampling)",
    "ncr": "E[NCR]",
    "picks": "E[|S|], the expected number of picks (at most c)",
    "correct": "E[|S ∩ Top-c|] (NaN where ties at the c-th score straddle the Top-c boundary)",
    "ncs": "E[NCS] = 1 - E[SER]",
    "recall": "E[recall] = E[|S ∩ Top-c|] / c",
    "fnr": "E[FNR] = 1 - E[recall]",
    "evaluated": "E[fraction of the stream evaluated before halting]",
    "cost": "E[privacy budget charged per trial] (sum of Outcome.cost)",
}
"""Exact columns ``exact_<metric>`` of a sweep with ``exact = true``: the first four always, the
others beside a Monte Carlo metric of the same name (same definition as that metric). Precision
and F1 are ratios of the picks, whose expectation is not linear in the selection law: none."""

_EXACT_ALWAYS = ("ser", "ncr", "picks", "correct")


def exact_columns(config: SweepConfig) -> list[str]:
    """The ``exact_<metric>`` columns of the config's results (none without ``exact = true``)."""
    if not config.exact:
        return []
    names = list(_EXACT_ALWAYS) + [m for m in config.metrics
                                   if m in EXACT_METRICS and m not in _EXACT_ALWAYS]
    return [f"exact_{m}" for m in names]


def _exact_dtype() -> str:
    import jax

    return "float64" if jax.config.jax_enable_x64 else "float32"


def _on_host():
    """Places the exact computation on the CPU (small arrays; no accelerator round trips)."""
    import jax

    try:
        return jax.default_device(jax.local_devices(backend="cpu")[0])
    except RuntimeError:  # no CPU backend in this process
        return contextlib.nullcontext()


def _why(err: Exception) -> str:
    text = " ".join(str(err).split())
    return text.removeprefix("svtjax.exact: ")


_EXACT_GROUP = 16
"""At most this many points per exact call: the call's node weights are [nodes, points], so its
memory grows with the square of the group."""


class _Exact:
    """The exact columns of one run: which points qualify (and why not), computed per point.

    A point's exact values are stored in its record (``"exact"``: the values of
    ``svtjax.exact.expected_metrics``, n, the float dtype and the rule's error targets they were
    computed with) and reused when the record is, unless they were computed in another dtype or
    with other targets (``exact_accuracy``)."""

    def __init__(self, config: SweepConfig, points, mechs, scores_by, log, announce: bool):
        self.config, self.points, self.mechs, self.scores_by = config, points, mechs, scores_by
        self.log, self.announce = log, announce
        self.why: dict[int, str] = {}  # point index -> why it has no exact columns
        self.logged: set = set()
        self.wanted: set[int] = set()  # points this run will ask for (see :meth:`expect`)
        self.ready: dict[int, dict] = {}  # values computed with another point's group
        self.keys: dict[int, tuple] = {}
        if not config.exact:
            return
        rule = config.threshold_rule()
        if rule is not None:
            self.why = {i: "per-trial threshold" for i in range(len(points))}
            if announce:
                log(f"[sweep] exact: threshold = {config.threshold!r} draws a threshold per "
                    "trial, and the exact law needs one threshold per point: every exact "
                    "column is empty")
            return
        if announce and _exact_dtype() != "float64":
            log("[sweep] exact: jax_enable_x64 is off, so the exact columns are computed in "
                "float32 (about 1e-6 rounding); float64 is recommended (dtype = \"float64\")")
        gaps: dict[tuple, list[int]] = {}
        for i, mech in enumerate(mechs):
            reason = self._blocker(mech)
            if reason is not None:
                self.why[i] = reason
                gaps.setdefault((points[i].label, points[i].mechanism, reason), []).append(i)
        for (label, name, reason), which in gaps.items():
            self._say(label, name, reason, len(which))

    def _blocker(self, mech) -> Optional[str]:
        """Why ``svtjax.exact`` has no law for this mechanism in this sweep (None: it has)."""
        from svtjax import exact

        try:
            law = exact.law(mech)
        except ValueError as err:
            return _why(err)
        if self.config.shuffle and (law.resample or law.k_max is not None):
            what = "resamples the threshold" if law.resample else "caps the stream at k_max"
            return (f"random order (shuffle = true) is not supported for a mechanism that "
                    f"{what}")
        return None

    def _say(self, label: str, name: str, reason: str, count: Optional[int] = None) -> None:
        if (label, reason) in self.logged:
            return
        self.logged.add((label, reason))
        total = sum(1 for p in self.points if p.label == label)
        how_many = f"{count} of {total}" if count is not None else "a"
        self.log(f"[sweep] exact: {label} ({name}), {how_many} point(s): exact columns empty: "
                 f"{reason}")

    def current(self, rec: dict) -> bool:
        """Whether ``rec`` holds exact values made the way this sweep makes them, with a
        number (or null) for every exact column (anything else is computed again)."""
        ex = rec.get("exact")
        if not (isinstance(ex, dict) and ex.get("dtype") == _exact_dtype()
                and ex.get("accuracy", {}) == self.config.exact_accuracy):
            return False
        values = ex.get("values")
        number = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)  # noqa: E731
        return (isinstance(values, dict) and number(ex.get("n")) and ex["n"] > 0
                and all(number(values.get(col[len("exact_"):])) or
                        values.get(col[len("exact_"):], 0) is None
                        for col in exact_columns(self.config)))

    def _rules(self, group: Sequence[int], scores, threshold) -> Optional[list]:
        """The quadrature rules of a group's mechanisms at the config's ``exact_accuracy``
        (None: the default rule)."""
        if not self.config.exact_accuracy:
            return None
        from svtjax import exact

        return [exact.quadrature(self.mechs[j], scores, threshold, **self.config.exact_accuracy)
                for j in group]

    def expect(self, indices) -> None:
        """The points whose exact values this run will ask :meth:`compute` for: those sharing a
        dataset, cut-off, threshold and law structure with the one asked for are evaluated
        with it, in one call of ``svtjax.exact.expected_metrics_many`` (one compilation and
        one kernel call per group, not per point)."""
        self.wanted = {i for i in indices if i not in self.why}

    def _key(self, i: int) -> tuple:
        """Points with equal keys can be evaluated together."""
        if i not in self.keys:
            from svtjax import exact

            p = self.points[i]
            law = exact.law(self.mechs[i])
            thr = _threshold(self.config, self.scores_by[p.dataset], p.c)
            self.keys[i] = (p.dataset, p.c, repr(thr), law.c, law.resample, law.k_max,
                            type(law.query_noise))
        return self.keys[i]

    def compute(self, i: int) -> Optional[dict]:
        """Point ``i``'s exact record, or None (it does not qualify; logged once)."""
        if not self.config.exact or i in self.why:
            return None
        if i in self.ready:
            return self.ready.pop(i)
        from svtjax import exact

        p = self.points[i]
        scores = self.scores_by[p.dataset]
        key = self._key(i)
        group = ([i] + [j for j in sorted(self.wanted) if j != i and j not in self.ready
                        and self._key(j) == key])[:_EXACT_GROUP]
        self.wanted -= set(group)
        threshold = _threshold(self.config, scores, p.c)
        try:
            with _on_host():
                many = exact.expected_metrics_many(
                    [self.mechs[j] for j in group], scores, threshold,
                    shuffle=self.config.shuffle, c=p.c,
                    rules=self._rules(group, scores, threshold))
        except ValueError:
            if len(group) == 1:
                many = None
            else:  # one point's own message: evaluate them one by one
                self.wanted |= set(group[1:])
                group = [i]
                many = None
        if many is None:
            try:
                with _on_host():
                    rules = self._rules([i], scores, threshold)
                    many = [exact.expected_metrics(self.mechs[i], scores, threshold,
                                                   shuffle=self.config.shuffle, c=p.c,
                                                   rule=None if rules is None else rules[0])]
            except ValueError as err:
                self.why[i] = _why(err)
                self._say(p.label, p.mechanism, self.why[i])
                return None
        for j, values in zip(group, many):
            self.ready[j] = {"dtype": _exact_dtype(), "n": int(scores.shape[0]),
                             **({"accuracy": dict(self.config.exact_accuracy)}
                                if self.config.exact_accuracy else {}),
                             "values": {k: float(v) for k, v in values.items()}}
        return self.ready.pop(i)

    def cells(self, i: int, rec: dict) -> dict:
        """The ``exact_<metric>`` cells of point ``i``'s rows (None: empty)."""
        cols = exact_columns(self.config)
        ex = rec.get("exact") if i not in self.why and self.current(rec) else None
        if ex is None:
            return {col: None for col in cols}
        values = ex["values"]
        out = {}
        for col in cols:
            m = col[len("exact_"):]
            # the sweep's "evaluated" is a fraction of the stream; exact's, positions read
            out[col] = values[m] / ex["n"] if m == "evaluated" else values[m]
        return out

    def summary(self) -> dict:
        """What results.json says about the exact columns."""
        cols = exact_columns(self.config)
        empty = {}
        for i, reason in self.why.items():
            empty.setdefault(self.points[i].label, reason)
        return {"columns": {c: EXACT_METRICS[c[len("exact_"):]] for c in cols},
                "dtype": _exact_dtype(), "accuracy": dict(self.config.exact_accuracy),
                "empty": empty}
