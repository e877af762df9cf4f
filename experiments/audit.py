"""Empirical privacy audit of every registered mechanism (``svtjax reproduce audit``).

Runs :func:`svtjax.audit.audit` on each name in ``svtjax.mechanisms.names()`` at ε = 1 (with
the parameters ``svtjax.audit.mechanism_params`` gives: each mechanism class's
``example_params`` plus the audit's generic rules) and prints, per mechanism: the claimed
guarantee, the ε its ``privacy()`` proves, the best lower bound on ε found at 99% confidence and
how it was computed (``method``), the witness (the neighbouring inputs and the output event), the
trials used and ``exceeds_nominal`` — True when the bound exceeds the nominal ε the mechanism is
run at (``status`` is ``audited``, or ``skipped`` when the mechanism could not be built). Lyu,
Su, Li (2017) prove Algorithms 3 (``roth11``), 5 (``stoddard``) and 6 (``chen``) are not ε′-DP
for any ε′ and Algorithm 4 (``lee-clifton``, claimed ε-DP) only ((1+6c)/4)ε-DP; those four
should be flagged, and no mechanism's bound may exceed what its ``privacy()`` proves (column
``exceeds_proven``; a True there is a bug in a kernel or a privacy formula, or a 1% accident).

Outputs (``--out``, default ``results/audit/``): ``audit.csv`` (one row per mechanism),
``claims.csv`` and ``audit.md`` (the table, each witness in full, and the claims table: the four
mechanisms Lyu'17 shows are not private as claimed must be flagged, no other may exceed its
proven ε).

Not a configuration of the sweep engine (``svtjax.sweep``): an audit is a per-mechanism search
over pairs of neighbouring inputs and output events (selection trials choose the event, fresh
validation trials count it on both inputs, Clopper–Pearson turns the two counts into a bound on
ε), not a mean of per-trial utilities over a dataset × parameter grid, so it keeps its own
runner, ``svtjax.audit``.

Sizes (``--paper``): 16,384 first-round search trials per side per candidate pair and 10^6
validation trials per side. The validation size sets the Clopper–Pearson margin of the bound,
2.33 standard errors of logit θ̂, SE = 1/√(s θ̂(1 − θ̂)) over the s validation trials in the
chosen event (the search scores events at that size too, so it can choose another event). At
10^6 per side (the search unchanged, the same seed) every verdict is the one 2·10^6 per side
gives, and each claim's distance stays a large multiple of its SE: the flagged bounds lie
≥ 0.25 above their nominal ε = 1 (``roth11``: 1.25 with SE 0.04, 6.4 SE; ``lee-clifton`` and
``chen`` ≥ 17 SE; ``stoddard`` 11.4, no q′ run in its event), every other bound ≥ 0.12 below its
proven ε (≥ 8 SE; at 2·10^6 per side: 9.6 SE for ``roth11``, ≥ 9.5 SE for the others), at
three quarters of the trials.

Usage::

    svtjax reproduce audit --quick            # 2e5 validation trials per side
    svtjax reproduce audit --paper            # 1e6 validation trials per side (default)
    svtjax reproduce audit --trials 300000 --mechanisms roth11 chen
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import sys
import time
from typing import Any, Optional, Sequence

if not __package__:  # run as a script, ``python experiments/NAME.py``: import as the package
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    __package__ = "experiments"  # noqa: A001
    import experiments  # noqa: F401,E402

from ._claims import Claim, Part, evaluate, markdown, ref
from ._common import (  # noqa: E402
    count_at_least,
    dumps,
    enable_cache,
    experiment_parser,
)

EPSILON = 1.0
QUICK = dict(trials=200_000, search_trials=4096)
PAPER = dict(trials=1_000_000, search_trials=16_384)
COLUMNS = ("mechanism", "params", "claim", "nominal_epsilon", "proven_epsilon", "delta",
           "lower_bound", "confidence", "method", "count", "validation_trials", "count_prime",
           "validation_trials_prime", "selection_trials", "num_pairs", "total_trials",
           "seconds", "status", "exceeds_nominal", "exceeds_proven", "witness_pair",
           "witness_event", "witness")


@dataclasses.dataclass
class Config:
    mechanisms: Optional[Sequence[str]] = None  # default: every registered name
    epsilon: float = EPSILON
    trials: int = PAPER["trials"]  # validation trials per side
    search_trials: int = PAPER["search_trials"]  # selection trials per side per pair
    confidence: float = 0.99
    seed: int = 0
    out: str = os.path.join("results", "audit")
    verbose: bool = False


def _row(name: str, result=None, params=None, error: Optional[str] = None) -> dict[str, Any]:
    if result is None:
        return {"mechanism": name, "params": dumps(params or {}),
                "claim": f"not audited: {error}", "status": "skipped"}
    d = result.to_dict()
    w = result.witness
    return {
        "mechanism": name, "params": json.dumps(d["params"]), "claim": d["statement"],
        "nominal_epsilon": d["nominal_epsilon"], "proven_epsilon": d["proven_epsilon"],
        "delta": d["delta"], "lower_bound": d["lower_bound"], "confidence": d["confidence"],
        "method": d["method"], "count": d["count"], "validation_trials": d["validation_trials"],
        "count_prime": d["count_prime"], "validation_trials_prime": d["validation_trials_prime"],
        "selection_trials": d["selection_trials"], "num_pairs": d["num_pairs"],
        "total_trials": d["total_trials"], "seconds": d["seconds"], "status": "audited",
        "exceeds_nominal": d["exceeds_nominal"], "exceeds_proven": d["exceeds_proven"],
        "witness_pair": w.pair.describe() if w else "", "witness_event":
        w.event.describe() if w else "", "witness": json.dumps(d["witness"]),
    }


def run(config: Config, log=print) -> list[dict[str, Any]]:
    """Audits every mechanism of ``config`` (default: the whole registry); one row each.

    A mechanism that cannot be built from ``svtjax.audit.mechanism_params`` gets a row with
    status ``"skipped"`` naming the problem, so the table always covers the registry.
    """
    import svtjax
    from svtjax import audit as audit_mod

    names = list(config.mechanisms) if config.mechanisms else svtjax.names()
    rows = []
    for name in names:
        params = None
        try:
            params = audit_mod.mechanism_params(name, config.epsilon)
            mech = svtjax.get(name, **params)
        except (TypeError, ValueError) as err:
            log(f"[audit] {name}: skipped ({err})")
            rows.append(_row(name, params=params, error=str(err)))
            continue
        say = log if config.verbose else None
        result = audit_mod.audit(mech, trials=config.trials, search_trials=config.search_trials,
                                 confidence=config.confidence, seed=config.seed, log=say)
        row = _row(name, result)
        rows.append(row)
        flag = {True: "exceeds nominal ε", False: "within nominal ε", None: "no nominal ε"}
        log(f"[audit] {name}: ε ≥ {result.lower_bound:.3f} (nominal {result.nominal_epsilon}, "
            f"proven {result.proven_epsilon}) -> {flag[result.exceeds_nominal]}, "
            f"{result.seconds:.1f} s")
    return rows


def _fmt(x, digits=3) -> str:
    if x is None or x == "":
        return "—"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def table_markdown(rows: Sequence[dict[str, Any]], config: Config, seconds: float) -> str:
    """The printed table: one line per mechanism, then each witness."""
    lines = [
        f"# Empirical privacy audit (ε = {config.epsilon}, confidence "
        f"{100 * config.confidence:g}%)",
        "",
        f"{config.trials} validation trials per side; {config.search_trials} first-round "
        f"search trials per side per candidate pair; seed {config.seed}; {seconds:.0f} s in all.",
        "A lower bound is valid with probability ≥ the confidence. exceeds nominal = it exceeds "
        "the nominal ε (the claim is violated); exceeds proven = it exceeds what privacy() "
        "proves (a bug, or a 1 − confidence accident).",
        "",
        "| mechanism | params | claimed guarantee | nominal ε | proven ε | lower bound | method | "
        "counts (q vs q′) | total trials | seconds | status | exceeds nominal | exceeds proven |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        proven = r.get("proven_epsilon")
        proven = "not private" if proven is None and r["status"] != "skipped" else proven
        counts = (f"{r['count']} / {r['validation_trials']} vs {r['count_prime']} / "
                  f"{r['validation_trials_prime']}" if "count" in r else "—")
        lines.append(
            f"| {r['mechanism']} | {r['params']} | {r['claim']} | {_fmt(r.get('nominal_epsilon'))}"
            f" | {_fmt(proven)} | {_fmt(r.get('lower_bound'))} | {_fmt(r.get('method'))} | "
            f"{counts} | {_fmt(r.get('total_trials'))} | {_fmt(r.get('seconds'), 1)} | "
            f"{r['status']} | {_fmt(r.get('exceeds_nominal'))} | "
            f"{_fmt(r.get('exceeds_proven'))} |")
    lines += ["", "## Witnesses", ""]
    for r in rows:
        if r.get("witness_pair"):
            lines.append(f"* **{r['mechanism']}**: {r['witness_pair']}; E: {r['witness_event']}")
    flagged = [r["mechanism"] for r in rows if r.get("exceeds_nominal") is True]
    wrong = [r["mechanism"] for r in rows if r.get("exceeds_proven") is True]
    skipped = [r["mechanism"] for r in rows if r["status"] == "skipped"]
    lines += ["", f"flagged (bound above nominal ε): {', '.join(flagged) or 'none'}",
              f"bound above the proved ε: {', '.join(wrong) or 'none'}",
              f"skipped: {', '.join(skipped) or 'none'}", ""]
    return "\n".join(lines)


SEED = "seed 002_8d07cd5bae315f2f.txt"
#: Lyu, Su, Li 2017 (Sec. 3, Fig. 2): Algorithms 3, 5 and 6 are not ε′-DP for any ε′ and
#: Algorithm 4, claimed ε-DP, is only ((1 + 6c)/4)ε-DP; every other mechanism is as private as
#: its paper proves. name -> (the paper's words, where, line).
NOT_AS_CLAIMED = {
    "roth11": ("THEOREM 3. Algorithm 3 is not ǫ′-DP for any ﬁnite ǫ′.", "Sec. 3, Theorem 3",
               978),
    "stoddard": ("THEOREM 4. Algorithm 5 is not ǫ′-DP for any ﬁnite ǫ′.",
                 "Sec. 3, Theorem 4", 1234),
    "chen": ("THEOREM 5. Algorithm 6 is not ǫ′-DP for any ﬁnite ǫ′.", "Sec. 3, Theorem 5",
             1267),
    "lee-clifton": ("the noise it adds to each query is a factor of 2c smaller than necessary "
                    "for ǫ-DP.", "Sec. 3.3 (Algorithm 4; it concludes: ((1 + 6c)/4)ε-DP, a "
                    "formula the text extraction garbles)", 1220)}


def _bound(name, col):
    return ref("audit.csv", col, mechanism=name)


def claims(rows: Sequence[dict[str, Any]]) -> list[Claim]:
    """The papers' privacy statements checked by the audit, on the protocol
    (``experiments._claims``): the four mechanisms Lyu'17 shows are not private as claimed
    are flagged (the audit's 99% lower confidence bound on ε above the nominal ε), and no
    other mechanism's bound exceeds what its ``privacy()`` proves. The bound is the audit's
    own statistic (its confidence is already spent), so each comparison is exact."""
    out = []
    by = {r["mechanism"]: r for r in rows if r["status"] != "skipped"}
    for name, (words, where, line) in NOT_AS_CLAIMED.items():
        part = Part("greater", "all")
        if name in by:
            part.add(name, _bound(name, "lower_bound"), _bound(name, "nominal_epsilon"))
        out.append(Claim(
            f"audit-{name}", words, f"Lyu, Su, Li 2017, {where}", f"{SEED} line {line}",
            "the audit's 99% lower confidence bound on ε against the nominal ε",
            "the lower bound above the nominal ε (a violation witnessed)",
            f"{name} at nominal ε = 1", [part] if part.comparisons else []))
    part = Part("greater", "all")
    for name, r in by.items():
        if name not in NOT_AS_CLAIMED and r.get("proven_epsilon") not in (None, ""):
            part.add(name, _bound(name, "proven_epsilon"), _bound(name, "lower_bound"))
    out.append(Claim(
        "audit-proven", "(each mechanism's own privacy statement, with its paper and theorem: "
        "audit.csv, column claim)", "each mechanism's paper (audit.csv, column claim)",
        "audit.csv, column claim (svtjax's privacy(), citing the theorem)",
        "the audit's 99% lower confidence bound on ε against the proven ε",
        "every lower bound below the proven ε; each is a 99% bound, so over n mechanisms about "
        "n% of runs flag one by chance",
        "every audited mechanism but the four above", [part] if part.comparisons else []))
    return out


def write_outputs(rows, config: Config, seconds: float, log=print) -> str:
    os.makedirs(config.out, exist_ok=True)
    path = os.path.join(config.out, "audit.csv")
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        for r in rows:
            writer.writerow({k: r.get(k, "") for k in COLUMNS})
    rows_claims = evaluate(claims(rows), config.out)
    text = (table_markdown(rows, config, seconds) + "\n## Claims checked\n\n"
            + markdown(rows_claims) + "\n")
    md = os.path.join(config.out, "audit.md")
    with open(md, "w", encoding="utf-8") as f:
        f.write(text)
    log(text)
    log(f"[audit] wrote {path} and {md}")
    return text


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = experiment_parser(
        "audit", __doc__.splitlines()[0], quick=f"{QUICK['trials']} validation trials per side",
        paper=f"{PAPER['trials']} validation trials per side (default)",
        trials="validation trials per side", out=os.path.join("results", "audit"))
    parser.add_argument("--search-trials", type=count_at_least(1),
                        help="selection trials per side per candidate pair")
    parser.add_argument("--mechanisms", nargs="+", help="default: every registered mechanism")
    parser.add_argument("--epsilon", type=float, default=EPSILON)
    parser.add_argument("--confidence", type=float, default=0.99)
    parser.add_argument("--verbose", action="store_true", help="log every candidate pair")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else PAPER
    config = Config(mechanisms=args.mechanisms, epsilon=args.epsilon, confidence=args.confidence,
                    seed=args.seed, out=args.out, verbose=args.verbose, **sizes)
    if args.trials is not None:
        config.trials = args.trials
    if args.search_trials is not None:
        config.search_trials = args.search_trials
    enable_cache("audit")
    start = time.perf_counter()
    try:
        rows = run(config)
    except (TypeError, ValueError) as err:
        print(f"[audit] error: {err}", file=sys.stderr)
        return 2
    write_outputs(rows, config, time.perf_counter() - start)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
