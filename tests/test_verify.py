"""The claims protocol (experiments._claims) and ``python -m experiments.verify``: every
verdict is recomputed from the written CSVs, and an altered number or verdict is caught."""

import csv
import json
import os

import pytest

from experiments import _claims, verify
from experiments._claims import Claim, Part, const, evaluate, ref


def _read(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _write(path, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["cell"],
                           lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def _first_ref(operand):
    if "file" in operand:
        return operand
    for o in operand.get("max", operand.get("min", [])):
        found = _first_ref(o)
        if found:
            return found
    return None


def assert_verifies_and_catches_tampering(out, capsys):
    """``verify`` passes on ``out``; altering one CSV number a claim reads, or one verdict,
    makes it fail naming that claim (both restored afterwards)."""
    assert verify.main([out]) == 0
    claims_path = os.path.join(out, "claims.csv")
    claims = _read(claims_path)
    target = None
    for c in claims:
        for part in json.loads(c["spec"])["parts"]:
            for comp in part["comparisons"]:
                target = target or (_first_ref(comp["a"]) and (c["id"], _first_ref(comp["a"])))
    assert target is not None, "no claim reads a CSV number"
    cid, r = target
    path = os.path.join(out, r["file"])
    original = open(path, encoding="utf-8").read()
    rows = _read(path)
    (row,) = [x for x in rows if all(_claims._same(x.get(k), v) for k, v in r["where"].items())]
    row[r["col"]] = repr(float(row[r["col"]]) * 1.5 + 0.25)
    _write(path, rows)
    capsys.readouterr()
    assert verify.main([out]) == 1
    assert f"claim {cid} " in capsys.readouterr().err
    with open(path, "w", encoding="utf-8") as f:
        f.write(original)
    original = open(claims_path, encoding="utf-8").read()
    other = "disagree" if claims[-1]["verdict"] != "disagree" else "agree"
    claims[-1]["verdict"] = other
    _write(claims_path, claims)
    assert verify.main([out]) == 1
    assert f"claim {claims[-1]['id']} " in capsys.readouterr().err
    with open(claims_path, "w", encoding="utf-8") as f:
        f.write(original)
    assert verify.main([out]) == 0


def _table(tmp_path, values):
    rows = [{"cell": i, "a": a, "a_se": sa, "b": b, "b_se": sb}
            for i, (a, sa, b, sb) in enumerate(values)]
    _write(str(tmp_path / "t.csv"), rows)


def _claim(values, kind="greater", quantifier="all", **kw):
    part = Part(kind, quantifier, **{k: kw.pop(k) for k in ("margin", "tol", "rel", "scale")
                                     if k in kw})
    for i in range(len(values)):
        part.add(f"cell {i}", ref("t.csv", "a", "a_se", cell=i), ref("t.csv", "b", "b_se", cell=i))
    return Claim("t-1", "the words", "Paper, Sec. 1", "line 1", "a − b", "one sentence",
                 "every cell", [part], **kw)


def _verdict(tmp_path, values, **kw):
    _table(tmp_path, values)
    (row,) = evaluate([_claim(values, **kw)], str(tmp_path))
    return row


def test_synthetic_table_verifies_and_catches_tampering(tmp_path, capsys):
    _verdict(tmp_path, [(0.9, 0.01, 0.5, 0.01), (0.8, 0.01, 0.79, 0.01)])
    assert_verifies_and_catches_tampering(str(tmp_path), capsys)


def test_verdicts_of_the_greater_kind(tmp_path):
    up, tie, down = (0.9, 0.01, 0.5, 0.01), (0.5, 0.01, 0.5, 0.01), (0.5, 0.01, 0.9, 0.01)
    assert _verdict(tmp_path, [up, up])["verdict"] == "agree"
    assert _verdict(tmp_path, [up, tie, tie])["verdict"] == "partly"
    assert _verdict(tmp_path, [tie, tie])["verdict"] == "inconclusive"
    assert _verdict(tmp_path, [up, down])["verdict"] == "disagree"
    assert _verdict(tmp_path, [down, tie])["verdict"] == "disagree"
    assert _verdict(tmp_path, [up, tie], quantifier="most")["verdict"] == "partly"
    assert _verdict(tmp_path, [up, up, tie], quantifier="most")["verdict"] == "agree"
    assert _verdict(tmp_path, [])["verdict"] == "not checked"


def test_an_exclusion_never_gives_agree(tmp_path):
    up = (0.9, 0.01, 0.5, 0.01)
    row = _verdict(tmp_path, [up, up], excluded="dataset X (not available offline)")
    assert row["verdict"] == "partly" and "dataset X" in row["explanation"]


def test_both_sides_at_the_bound_are_not_evidence(tmp_path):
    """Issue 59 items 10 and 17: every method at the cap (NCR >= 0.996) is inconclusive, not
    a disagreement."""
    capped = [(0.997, 0.001, 1.0, 0.0), (0.999, 0.001, 0.996, 0.001)]
    row = _verdict(tmp_path, capped, bounds=(0.0, 1.0), bound_margin=0.005)
    assert row["verdict"] == "inconclusive"
    assert _verdict(tmp_path, capped)["verdict"] != "inconclusive"


def test_holm_is_over_every_comparison_of_the_claim(tmp_path):
    """Issue 59 item 3: z = −2.38 was significant with Holm per cell of 5 one-sided tests
    (p 0.0087 <= 0.05/5) but is not in the claim's family of 20 (two-sided p 0.017 > 0.05/20)."""
    against = (0.5, 0.01 / 2 ** 0.5, 0.5238, 0.01 / 2 ** 0.5)  # z = -2.38
    tie = (0.5, 0.01, 0.5, 0.01)
    row = _verdict(tmp_path, [against] + [tie] * 19)
    assert row["family_size"] == 20 and row["verdict"] == "inconclusive"
    outcomes = [r["outcome"] for r in _read(str(tmp_path / "claims_comparisons.csv"))]
    assert outcomes == ["undecided"] * 20
    alone = _verdict(tmp_path, [(0.5, 0.001, 0.5238, 0.001)])
    assert alone["verdict"] == "disagree"


def test_within_kind_needs_enough_runs_for_its_tolerance(tmp_path):
    close = [(0.50, 0.001, 0.51, 0.001)]
    assert _verdict(tmp_path, close, kind="within", tol=0.05)["verdict"] == "agree"
    noisy = [(0.50, 0.05, 0.51, 0.05)]  # SE 0.07 against a tolerance of 0.05: cannot tell
    assert _verdict(tmp_path, noisy, kind="within", tol=0.05)["verdict"] == "inconclusive"
    far = [(0.50, 0.001, 0.70, 0.001)]
    assert _verdict(tmp_path, far, kind="within", tol=0.05)["verdict"] == "disagree"
    exact = [(100.0, 0.0, 100.04, 0.0)]
    assert _verdict(tmp_path, exact, kind="within", rel=5e-4)["verdict"] == "agree"


def test_constants_and_declaration_errors(tmp_path):
    _table(tmp_path, [(1.0, 0.0, 0.0, 0.0)])
    part = Part("within", "all", tol=0.01).add("x", ref("t.csv", "a", cell=0), const(1.005))
    claim = Claim("t-2", "w", "l", "s", "q", "t", "c", [part])
    assert evaluate([claim], str(tmp_path))[0]["verdict"] == "agree"
    with pytest.raises(ValueError, match="kind must be one of"):
        Claim("t-3", "w", "l", "s", "q", "t", "c", [Part("less", "all")])
    with pytest.raises(ValueError, match="exactly one of tol, rel"):
        Claim("t-3", "w", "l", "s", "q", "t", "c", [Part("within", "all")])


def test_verify_command_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as err:
        verify.main([str(tmp_path)])
    assert err.value.code == 2 and "no claims.csv" in capsys.readouterr().err
    sub = tmp_path / "exp"
    sub.mkdir()
    _verdict(sub, [(0.9, 0.01, 0.5, 0.01)])
    assert verify.main([str(tmp_path)]) == 0  # found below the directory given


def test_a_difference_that_cannot_be_formed_is_undecided(tmp_path):
    """A log-scale comparison with a zero side has no difference: undecided, never a
    contradiction, and it does not disturb Holm's ordering of the others."""
    row = _verdict(tmp_path, [(0.0, 0.0, 0.5, 0.01), (0.9, 0.001, 0.5, 0.001)],
                   kind="within", tol=0.1, scale="log")
    outcomes = [r["outcome"] for r in _read(str(tmp_path / "claims_comparisons.csv"))]
    assert outcomes == ["undecided", "contradicts"] and row["verdict"] == "disagree"


def test_a_claim_over_many_comparisons_verifies(tmp_path, capsys):
    """A claim's spec is one field of claims.csv; over many comparisons it outgrows the csv
    module's default field limit (the --paper Lyu table did), and verify still reads it.

    120 comparisons whose columns have 300-character names make a spec of ~165 kB (800 with
    one-letter names made 137 kB): the field is as long, and evaluating and verifying the claim,
    which look each reference up among the table's rows, do 1/44 of the work."""
    long = {k: k + "_" + "x" * 300 for k in ("a", "a_se", "b", "b_se")}
    values = [(0.5 + i * 1e-4, 0.01, 0.4, 0.01) for i in range(120)]
    _write(str(tmp_path / "t.csv"), [
        {"cell": i, long["a"]: a, long["a_se"]: sa, long["b"]: b, long["b_se"]: sb}
        for i, (a, sa, b, sb) in enumerate(values)])
    part = Part("greater", "all")
    for i in range(len(values)):
        part.add(f"cell {i}", ref("t.csv", long["a"], long["a_se"], cell=i),
                 ref("t.csv", long["b"], long["b_se"], cell=i))
    claim = Claim("t-1", "the words", "Paper, Sec. 1", "line 1", "a − b", "one sentence",
                  "every cell", [part])
    (row,) = evaluate([claim], str(tmp_path))
    assert row["verdict"] == "agree", row
    csv.field_size_limit(2**31 - 1)
    spec = max(len(v) for row in _read(tmp_path / "claims.csv") for v in row.values())
    assert spec > 131072, spec
    csv.field_size_limit(131072)  # the csv module's default, whatever an earlier test set
    assert verify.main([str(tmp_path)]) == 0, capsys.readouterr().err
