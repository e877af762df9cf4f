"""The claims protocol every experiment's verdicts go through.

A :class:`Claim` is data, declared before anything is computed: the paper's words (quoted
exactly), where they stand (paper, section or figure, and the line of the paper's text the quote
is taken from), the quantity measured, the comparison kind, the tolerance in one sentence, the
settings the paper states it for and those we leave out (with the reason), and its family for
multiplicity control. Its numbers are *references* into the CSVs the experiment writes (file,
row, column, and the column holding the standard error), never numbers copied by hand, so the
verdict can be recomputed from the written files alone (``python -m experiments.verify OUT``).

Verdicts (:data:`VERDICTS`), each computed by :func:`judge` from the claim's numbers only:

* ``agree`` — enough comparisons support the claim for its quantifier (``all``: every one;
  ``most``: more than half; ``half``: at least half; ``any``: one; ``none against``: at least
  one and none contradicts — for statements such as "the ranking is the same", which a
  significant reversal refutes but a tie does not; the comparisons at the bound are not
  counted) and it covers every setting the paper states it for;
* ``partly`` — some support, but fewer than the quantifier needs and more than contradict; or
  the claim agrees on what it covers but leaves out a setting the paper names (an exclusion
  never yields ``agree``);
* ``disagree`` — no comparison supports it and at least one contradicts it, or as many
  contradict it as support it;
* ``inconclusive`` — no comparison supports or contradicts it: every one is within noise, at the
  bound of the metric (the cap, chance level: :attr:`Claim.bounds`; ``greater`` comparisons
  only: two values at the same bound *are* within any tolerance of each other), cut short by a
  cap of the method's own or resting on runs piled at a bound (a comparison's ``censored``
  above 0: :meth:`Part.add`) or too noisy for the tolerance;
* ``not checked`` — the data it needs are missing (no comparisons).

Comparison kinds (one function each, :func:`compare`):

* ``greater`` — the claim is "a exceeds b by more than ``margin``" for each comparison (a, b):
  d = a − b (or log a − log b with ``scale="log"``), z = (d − margin)/SE. The two-sided
  p-values of all the claim's comparisons form one family, Holm at ``alpha`` (default 0.05);
  a rejected hypothesis with z > 0 supports the claim, with z < 0 contradicts it. A comparison
  with SE 0 (an exact number) supports it when d > margin and contradicts it when d < margin.
* ``within`` — the claim is "|a − b − margin| <= tol" (``tol``, or ``rel`` times |b|;
  ``margin`` the claimed difference, usually 0): the comparison
  supports it when the two one-sided tests of equivalence reject (Holm over the family, the
  larger of the two p-values per comparison), contradicts it when |d| > tol significantly, is
  undecided otherwise (which is what too few runs for the tolerance give).

Multi-part claims (``parts``) put every comparison of every part into one Holm family; the
verdict is ``agree`` when the parts that agree meet :attr:`Claim.across` (default ``all``;
``most`` for "most datasets"), ``disagree`` when no part agrees or partly agrees and one
disagrees, ``inconclusive`` when every part is, ``not checked`` when a part is, and ``partly``
otherwise. A comparison whose difference cannot be formed (a log of 0) is undecided.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from ._common import holm  # Holm 1979, tested on null simulations


def read_csv(path: str) -> list[dict]:
    """The rows of a CSV written by an experiment. A claim's spec (every comparison's
    references to the CSVs) is one field of ``claims.csv``, which for a claim over hundreds of
    comparisons outgrows the csv module's default field limit (128 KiB): the limit is lifted."""
    csv.field_size_limit(2**31 - 1)
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))

VERDICTS = ("agree", "partly", "disagree", "inconclusive", "not checked")
KINDS = ("greater", "within")
QUANTIFIERS = ("all", "most", "half", "any", "none against")
ALPHA = 0.05
CLAIM_FIELDS = ("id", "claim", "location", "source", "quantity", "comparison", "tolerance",
                "covers", "excluded", "family", "family_size", "paper", "ours", "verdict",
                "explanation", "spec")
COMPARISON_FIELDS = ("id", "part", "label", "a", "a_se", "b", "b_se", "d", "se", "p",
                     "outcome")
OUTCOMES = ("supports", "contradicts", "undecided", "at bound")


# ---------------------------------------------------------------------------------------------
# Declaring claims
# ---------------------------------------------------------------------------------------------
def ref(file: str, col: str, se: Optional[str] = None, **where) -> dict:
    """One number of a written CSV: column ``col`` of the one row of ``file`` whose columns
    equal ``where`` (numbers compared as floats), its standard error in column ``se`` (none:
    an exact number)."""
    return {"file": file, "where": where, "col": col, "se": se}


def const(value: float, se: float = 0.0) -> dict:
    """A number stated in the claim itself (a paper's printed value)."""
    return {"const": float(value), "se": float(se)}


def best(*operands: dict, lowest: bool = False) -> dict:
    """The largest (``lowest``: smallest) of several operands, with its own standard error."""
    return {"min" if lowest else "max": list(operands)}


@dataclass
class Part:
    """One comparison kind over a list of (label, a, b) comparisons with a quantifier."""

    kind: str
    quantifier: str
    comparisons: list = field(default_factory=list)
    margin: float = 0.0
    tol: Optional[float] = None
    rel: Optional[float] = None
    scale: str = "linear"
    name: str = ""

    def add(self, label: str, a: dict, b: dict, censored: Optional[dict] = None) -> "Part":
        """One comparison; ``censored`` (an operand read from the CSVs, like ``a`` and ``b``)
        makes it ``at bound`` when above 0: the share of runs cut short by a cap of the
        method's own (e.g. a per-stage cap: a truncated mean), or a flag that a side's runs
        pile at a bound of the metric (its normal approximation fails): not evidence either
        way."""
        self.comparisons.append({"label": label, "a": a, "b": b,
                                 **({"censored": censored} if censored is not None else {})})
        return self


@dataclass
class Claim:
    """A paper's claim, declared before its numbers are read (see the module docstring).

    ``bounds``: the metric's range (e.g. (0, 1) for NCR, or (None, cap) for a capped length);
    a comparison whose two sides are both within ``bound_margin`` of the same bound, or either
    side exactly at a cap, is ``at bound``: not evidence either way.
    """

    id: str
    words: str
    location: str
    source: str
    quantity: str
    tolerance: str
    covers: str
    parts: list
    paper: str = ""
    excluded: str = ""
    family: str = ""
    bounds: tuple = (None, None)
    bound_margin: float = 0.0
    alpha: float = ALPHA
    note: str = ""
    across: str = "all"

    def __post_init__(self):
        for p in self.parts:
            if p.kind not in KINDS:
                raise ValueError(f"claim {self.id}: kind must be one of {KINDS}; got {p.kind!r}")
            if p.quantifier not in QUANTIFIERS:
                raise ValueError(f"claim {self.id}: quantifier must be one of {QUANTIFIERS}; "
                                 f"got {p.quantifier!r}")
            if p.kind == "within" and (p.tol is None) == (p.rel is None):
                raise ValueError(f"claim {self.id}: a 'within' part needs exactly one of tol, "
                                 "rel")
        if self.across not in QUANTIFIERS:
            raise ValueError(f"claim {self.id}: across must be one of {QUANTIFIERS}")
        if not self.words.strip() or not self.tolerance.strip():
            raise ValueError(f"claim {self.id}: the paper's words and the tolerance are required")

    def declared(self) -> dict:
        return {"parts": [{"kind": p.kind, "quantifier": p.quantifier, "margin": p.margin,
                           "tol": p.tol, "rel": p.rel, "scale": p.scale, "name": p.name,
                           "comparisons": p.comparisons} for p in self.parts],
                "bounds": list(self.bounds), "bound_margin": self.bound_margin,
                "alpha": self.alpha, "excluded": self.excluded, "note": self.note,
                "across": self.across}


# ---------------------------------------------------------------------------------------------
# Reading the numbers back from the CSVs
# ---------------------------------------------------------------------------------------------
class Tables:
    """The CSVs of one output directory, read once each."""

    def __init__(self, directory: str):
        self.directory = directory
        self._rows: dict[str, list[dict]] = {}
        self._index: dict[tuple, dict[tuple, list[dict]]] = {}

    def rows(self, name: str) -> list[dict]:
        if name not in self._rows:
            path = os.path.join(self.directory, name)
            if not os.path.exists(path):
                raise LookupError(f"{name} is missing from {self.directory}")
            self._rows[name] = read_csv(path)
        return self._rows[name]

    def matching(self, name: str, where: dict) -> list[dict]:
        """The rows of ``name`` (in file order) whose every column ``k`` of ``where`` holds
        ``where[k]`` (as :func:`_same` compares them), found in an index of the file by the
        columns and the kinds of value of ``where``, built once: a claim over hundreds of
        references reads each in one lookup, not one scan of the file."""
        cols = tuple(where)
        numeric = tuple(_numeric(where[k]) for k in cols)
        index = self._index.get((name, cols, numeric))
        if index is None:
            index = {}
            for row in self.rows(name):
                key = tuple(_key(row.get(k), num) for k, num in zip(cols, numeric))
                if not any(part is _NO_MATCH for part in key):
                    index.setdefault(key, []).append(row)
            self._index[(name, cols, numeric)] = index
        want = tuple(_want(where[k], num) for k, num in zip(cols, numeric))
        return [] if any(part is _NO_MATCH for part in want) else index.get(want, [])

    def value(self, r: dict) -> tuple[float, float]:
        rows = self.matching(r["file"], r["where"])
        if len(rows) != 1:
            raise LookupError(f"{r['file']}: {len(rows)} rows match {r['where']} (need one)")
        row = rows[0]
        se = 0.0 if not r.get("se") else _num(row[r["se"]])
        return _num(row[r["col"]]), se


def _num(text) -> float:
    if isinstance(text, (int, float)):
        return float(text)
    if text in ("True", "False"):
        return float(text == "True")
    return float(text)


def _same(cell, want) -> bool:
    if cell is None:
        return False
    if isinstance(want, bool) or not isinstance(want, (int, float)):
        return str(cell) == str(want)
    try:
        return float(cell) == float(want)
    except ValueError:
        return False


_NO_MATCH = object()
"""An index key part that no wanted value equals (see :meth:`Tables.matching`)."""


def _numeric(want) -> bool:
    """Whether :func:`_same` compares a cell with ``want`` as numbers (else as text)."""
    return not isinstance(want, bool) and isinstance(want, (int, float))


def _key(cell, numeric: bool):
    """A cell's index key: equal to :func:`_want`'s key of ``want`` exactly when
    ``_same(cell, want)`` (``float`` keys compare as ``float(cell) == float(want)``; NaN and
    what is not a number equal nothing)."""
    if cell is None:
        return _NO_MATCH
    if not numeric:
        return str(cell)
    try:
        x = float(cell)
    except ValueError:
        return _NO_MATCH
    return _NO_MATCH if math.isnan(x) else x


def _want(want, numeric: bool):
    if not numeric:
        return str(want)
    x = float(want)
    return _NO_MATCH if math.isnan(x) else x


def resolve(operand: dict, tables: Tables) -> tuple[float, float]:
    """(value, standard error) of an operand: a CSV reference, a constant, a max or min."""
    if "const" in operand:
        return operand["const"], operand.get("se", 0.0)
    if "max" in operand or "min" in operand:
        values = [resolve(o, tables) for o in operand.get("max", operand.get("min"))]
        pick = max if "max" in operand else min
        return pick(values, key=lambda v: v[0])
    return tables.value(operand)


# ---------------------------------------------------------------------------------------------
# The verdict: one function per comparison kind, one for the quantifier, one for the claim
# ---------------------------------------------------------------------------------------------
def _upper_p(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def compare(kind: str, d: float, se: float, *, margin: float = 0.0,
            tol: float = 0.0) -> tuple[float, int]:
    """(p-value, direction) of one comparison: direction +1 when the estimate lies on the
    claim's side, −1 on the other; the p-value is that of the hypothesis on the other side
    (0 or 1 for an exact number)."""
    if kind == "greater":
        x = d - margin
        if se <= 0.0:
            return (0.0 if x != 0 else 1.0), (1 if x > 0 else -1 if x < 0 else 0)
        z = x / se
        return math.erfc(abs(z) / math.sqrt(2.0)), (1 if z > 0 else -1 if z < 0 else 0)
    d -= margin  # 'within': margin is the centre (the claimed value of d)
    if se <= 0.0:
        return 0.0, (1 if abs(d) <= tol else -1)
    if abs(d) <= tol:  # equivalence: both one-sided tests must reject
        return max(_upper_p((d + tol) / se), _upper_p((tol - d) / se)), 1
    return _upper_p((abs(d) - tol) / se), -1


def quantify(quantifier: str, outcomes: Sequence[str], excluded: str = "") -> str:
    """A part's verdict from its comparisons' outcomes (see the module docstring)."""
    if not outcomes:
        return "not checked"
    n = len(outcomes) - outcomes.count("at bound")  # at the bound: not evidence, not counted
    sup, con = outcomes.count("supports"), outcomes.count("contradicts")
    need = {"all": n, "most": n // 2 + 1, "half": (n + 1) // 2, "any": 1,
            "none against": 1 if con == 0 else n + 1}[quantifier]
    if n > 0 and sup >= need:
        return "partly" if excluded else "agree"
    if sup == 0 and con == 0:
        return "inconclusive"
    if sup == 0 or con >= sup:
        return "disagree"
    return "partly"


def combine(verdicts: Sequence[str], across: str = "all") -> str:
    """A multi-part claim's verdict from its parts' verdicts: ``agree`` when the parts that
    agree meet ``across`` (a quantifier over the parts), ``not checked`` when a part has no
    data, ``inconclusive`` when every part is, ``disagree`` when no part agrees or partly
    agrees, ``partly`` otherwise."""
    n = len(verdicts)
    if not verdicts or "not checked" in verdicts:
        return "not checked"
    need = {"all": n, "most": n // 2 + 1, "half": (n + 1) // 2, "any": 1,
            "none against": n}[across]
    if sum(v == "agree" for v in verdicts) >= need:
        return "agree"
    if all(v == "inconclusive" for v in verdicts):
        return "inconclusive"
    if "disagree" in verdicts and not {"agree", "partly"} & set(verdicts):
        return "disagree"
    return "partly"


def _at_bound(a: float, b: float, bounds, margin: float) -> bool:
    lo, hi = bounds
    if hi is not None and a >= hi - margin and b >= hi - margin:
        return True
    return lo is not None and a <= lo + margin and b <= lo + margin


def judge(spec: dict, tables: Tables) -> tuple[str, list[dict]]:
    """The verdict of a claim (its :meth:`Claim.declared`) from the CSVs, and one row per
    comparison (numbers, Holm-tested p-value, outcome). Every verdict in every claims table
    is this function of that table's CSVs."""
    rows, ps = [], []
    for k, part in enumerate(spec["parts"]):
        for c in part["comparisons"]:
            a, a_se = resolve(c["a"], tables)
            b, b_se = resolve(c["b"], tables)
            if part["scale"] == "log":
                d = math.log(a / b) if a > 0 and b > 0 else math.nan
                se = math.hypot(a_se / a, b_se / b) if a > 0 and b > 0 else math.inf
            else:
                d, se = a - b, math.hypot(a_se, b_se)
            tol = part["tol"] if part["tol"] is not None else (
                (part["rel"] or 0.0) * abs(b))
            p, direction = compare(part["kind"], d, se, margin=part["margin"], tol=tol)
            if not (math.isfinite(p) and math.isfinite(d)):  # e.g. a log of 0: cannot tell
                p, direction = 1.0, 0
            rows.append({"part": k, "label": c["label"], "a": a, "a_se": a_se, "b": b,
                         "b_se": b_se, "d": d, "se": se, "p": p, "direction": direction,
                         "bound": (part["kind"] == "greater" and _at_bound(
                             a, b, spec["bounds"], spec["bound_margin"]))
                         or ("censored" in c and resolve(c["censored"], tables)[0] > 0)})
            ps.append(1.0 if rows[-1]["bound"] else p)
    for row, rejected in zip(rows, holm(ps, spec["alpha"])):
        row["outcome"] = ("at bound" if row["bound"] else "undecided" if not rejected
                          or row["direction"] == 0 else
                          "supports" if row["direction"] > 0 else "contradicts")
    verdicts = [quantify(part["quantifier"], [r["outcome"] for r in rows if r["part"] == k],
                         spec["excluded"]) for k, part in enumerate(spec["parts"])]
    return combine(verdicts, spec.get("across", "all")), rows


# ---------------------------------------------------------------------------------------------
# Writing and printing
# ---------------------------------------------------------------------------------------------
def _counts(rows) -> str:
    parts = [f"{sum(r['outcome'] == o for r in rows)} {o}" for o in OUTCOMES]
    return ", ".join(p for p in parts if not p.startswith("0 "))


def evaluate(claims: Sequence[Claim], directory: str, ours: Optional[dict] = None,
             explain: Optional[dict] = None) -> list[dict]:
    """Judges every claim from the CSVs in ``directory`` and writes ``claims.csv`` and
    ``claims_comparisons.csv`` there. ``ours`` / ``explain`` map a claim id to extra text for
    its "ours" / explanation cells (reading aids; the verdict never depends on them).
    Returns the claims table rows."""
    tables = Tables(directory)
    out, comps = [], []
    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        raise ValueError(f"claim ids repeat: {ids}")
    for c in claims:
        spec = c.declared()
        verdict, rows = judge(spec, tables)
        out.append(_row(c, spec, verdict, rows, (ours or {}).get(c.id, ""),
                        (explain or {}).get(c.id, "")))
        comps += [{"id": c.id, **{k: r[k] for k in COMPARISON_FIELDS[1:]}} for r in rows]
    _write(os.path.join(directory, "claims.csv"), CLAIM_FIELDS, out)
    _write(os.path.join(directory, "claims_comparisons.csv"), COMPARISON_FIELDS, comps)
    return out


def explanation(verdict: str, rows, excluded: str, extra: str) -> str:
    """The explanation every non-``agree`` verdict carries: the outcome counts, the
    exclusions and the experiment's own reading aid."""
    if verdict == "agree":
        return extra
    text = [f"outcomes: {_counts(rows)}" if rows else "no data for this claim"]
    if excluded:
        text.append(f"not covered: {excluded}")
    if extra:
        text.append(extra)
    return "; ".join(text)


def _row(c: Claim, spec, verdict, rows, ours_extra, explain_extra) -> dict:
    kinds = "; ".join(
        f"{p.kind} ({p.quantifier}" + (f", margin {p.margin:g}" if p.margin else "")
        + (f", tol {p.tol:g}" if p.tol is not None else "")
        + (f", rel {p.rel:g}" if p.rel is not None else "")
        + (", log scale" if p.scale == "log" else "") + ")" for p in c.parts)
    ours = (f"{len(rows)} comparison(s): {_counts(rows)}" if rows else "no data")
    if ours_extra:
        ours += f"; {ours_extra}"
    return {"id": c.id, "claim": c.words, "location": c.location, "source": c.source,
            "quantity": c.quantity, "comparison": kinds, "tolerance": c.tolerance,
            "covers": c.covers, "excluded": c.excluded, "family": c.family or c.id,
            "family_size": len(rows), "paper": c.paper, "ours": ours, "verdict": verdict,
            "explanation": explanation(verdict, rows, c.excluded, explain_extra),
            "spec": json.dumps(spec, sort_keys=True)}


def _write(path, fields, rows) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(fields), lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: (repr(v) if isinstance(v, float) else v) for k, v in r.items()})


def markdown(rows: Sequence[dict]) -> str:
    """The claims table of a summary: the quote and its place, the tolerance, the family and
    its size (Holm over all of a claim's comparisons), ours, the verdict, the explanation."""
    def cell(text: Any) -> str:
        return " ".join(str(text).split()).replace("|", "\\|")

    lines = ["| id | paper's words (location) | tolerance | covers / not covered | "
             "Holm family (size) | ours | verdict | explanation |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        line = re.search(r"line ([\d, ]+)", r["source"])
        where = r["location"] + (f"; the paper's text, line {line.group(1)}" if line else "")
        lines.append(
            f"| {r['id']} | “{cell(r['claim'])}” ({cell(where)}) | "
            f"{cell(r['tolerance'])} | {cell(r['covers'])}"
            + (f" / **not covered:** {cell(r['excluded'])}" if r["excluded"] else "")
            + f" | {cell(r['family'])} ({r['family_size']}) | {cell(r['ours'])} | "
            f"**{r['verdict']}** | {cell(r['explanation']) or '—'} |")
    counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}
    lines += ["", "Verdicts: " + ", ".join(f"{n} {v}" for v, n in counts.items() if n)
              + f". Family-wise error: Holm at {ALPHA:g} over all comparisons of each claim "
              "(the family and its size are in the table and in claims.csv; every comparison "
              "is in claims_comparisons.csv). `python -m experiments.verify DIR` recomputes "
              "every verdict from the CSVs."]
    return "\n".join(lines)
