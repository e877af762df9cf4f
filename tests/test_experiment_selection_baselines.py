"""experiments.selection_baselines (beyond the papers): a tiny run writes its table, figure and
claims, every output says it is beyond the papers, ``experiments.verify`` recomputes the
verdicts and catches an altered number or verdict, and the claims can fail."""

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

import experiments
from experiments import selection_baselines as sb
from experiments._claims import VERDICTS, evaluate
from tests.test_verify import assert_verifies_and_catches_tampering

ROOT = Path(__file__).resolve().parents[1]


def _read(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_tiny_run_verifies_and_says_beyond_the_papers(tmp_path, monkeypatch, capsys):
    import matplotlib.figure

    titles = []
    save = matplotlib.figure.Figure.savefig
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda fig, *a, **k: (
        titles.append(fig._suptitle.get_text() if fig._suptitle else ""), save(fig, *a, **k)))
    out = str(tmp_path / "sb")
    assert sb.main(["--quick", "--trials", "8", "--epsilons", "0.01", "--out", out]) == 0
    rows = _read(os.path.join(out, sb.FILE))
    assert [r["method"] for r in rows] == list(sb.METHODS)  # Adult, one ε, every method
    for r in rows:
        assert r["dataset"] == "adult" and int(r["c"]) == 5 and int(r["trials"]) == 8
        assert 0.0 <= float(r["ncr"]) <= 1.0 and 0.0 <= float(r["f1"]) <= 1.0
        assert r["privacy"].startswith("0.01-DP"), r["privacy"]
        if r["method"] != sb.SVT_EXP:  # every selection mechanism releases exactly the top c
            assert float(r["picks"]) == 5.0 and float(r["picks_se"]) == 0.0
    assert os.path.getsize(os.path.join(out, "selection_baselines.png")) > 0
    assert titles == [sb.TITLE] and "beyond the papers" in sb.TITLE
    claims = _read(os.path.join(out, "claims.csv"))
    assert [c["id"] for c in claims] == ["sb-pf-rnmexp", "sb-gumbel-em", "sb-pf-vs-em"]
    for c in claims:
        assert c["verdict"] in VERDICTS
        assert "beyond the papers" in c["claim"] and "beyond the papers" in c["location"]
        assert "not a claim of the four papers" in c["claim"]
    # two parts (NCR, F1) of one cell each for the identities; one cell for the hypothesis
    assert [c["family_size"] for c in claims] == ["2", "2", "1"]
    text = open(os.path.join(out, "summary.md"), encoding="utf-8").read()
    assert text.startswith("# Selection baselines beside SVT-Exp (beyond the papers)")
    assert "## Claims checked (beyond the papers)" in text
    assert_verifies_and_catches_tampering(out, capsys)


def _rows(values):
    """A synthetic table: {(dataset, ε, method): (ncr, se)}, F1 = NCR."""
    c = {"adult": 5, "zipf": 50}
    return [{"dataset": ds, "epsilon": eps, "method": m, "mechanism": sb.METHODS[m][0],
             "c": c[ds], "ncr": v, "ncr_se": se, "f1": v, "f1_se": se}
            for (ds, eps, m), (v, se) in values.items()]


def _verdicts(tmp_path, values):
    rows = _rows(values)
    sb._write_csv(rows, str(tmp_path / sb.FILE))
    return {r["id"]: r["verdict"] for r in evaluate(sb.claims(rows), str(tmp_path))}


@pytest.mark.parametrize("gap, want", [(0.0, "agree"), (0.1, "disagree")])
def test_identity_claims_can_fail(tmp_path, gap, want):
    """Identical laws give equal NCRs within the tolerance 1/c (agree); a gap of 0.1 > 1/50 on
    Zipf at SE 0.005 contradicts the identity at every cell (disagree); Adult's tolerance 1/5
    absorbs the same gap, so Adult alone never decides it."""
    values = {}
    for eps in (0.1, 1.0):
        for m in sb.METHODS:
            values[("zipf", eps, m)] = (0.5, 0.005)
        values[("zipf", eps, "permute-and-flip")] = (0.5 + gap, 0.005)
        values[("zipf", eps, "gumbel-top-k")] = (0.5 - gap, 0.005)
    verdicts = _verdicts(tmp_path, values)
    assert verdicts["sb-pf-rnmexp"] == verdicts["sb-gumbel-em"] == want
    # permute-and-flip far above em-peeling supports the hypothesis; equal is no evidence
    assert verdicts["sb-pf-vs-em"] == ("agree" if gap else "inconclusive")
    adult = {("adult", e, m): v for (_, e, m), v in values.items()}
    assert _verdicts(tmp_path, adult)["sb-pf-rnmexp"] == "agree"


def test_hypothesis_is_contradicted_and_bound_cells_are_no_evidence(tmp_path):
    values = {}
    for eps, (pf, em) in {0.1: (0.40, 0.50), 1.0: (1.0, 1.0)}.items():
        for m in sb.METHODS:
            values[("zipf", eps, m)] = (em, 0.005)
        values[("zipf", eps, "permute-and-flip")] = (pf, 0.005)
        values[("zipf", eps, "report-noisy-max-exp")] = (pf, 0.005)
    assert _verdicts(tmp_path, values)["sb-pf-vs-em"] == "disagree"


@pytest.mark.parametrize("how", ["module", "script"])
def test_entry_points_work_and_name_themselves(how):
    args = (["-m", "experiments.selection_baselines"] if how == "module" else
            [os.path.join("experiments", "selection_baselines.py")])
    res = subprocess.run([sys.executable, *args, "--help"], capture_output=True, text=True,
                         timeout=600, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    shown = "-m experiments.selection_baselines" if how == "module" else args[0]
    assert res.stdout.startswith(f"usage: python {shown} "), res.stdout[:80]


@pytest.mark.parametrize("argv, needle", [
    (["--datasets", "retail"], "--datasets: 'retail' is not one of Liu et al. 2024's"),
    (["--epsilons", "0"], "--epsilons: must be a finite number > 0"),
    (["--epsilons", "0.5", "0.5"], "--epsilons: a value is listed twice"),
])
def test_bad_input_is_one_line(argv, needle, capsys):
    with pytest.raises(SystemExit) as done:
        sb.main([*argv, "--out", "/nonexistent/never-written"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err, err


def test_registered():
    assert "selection_baselines" in experiments.names()
    assert experiments.load("selection_baselines") is sb
