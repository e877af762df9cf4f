"""experiments/_common.py: Holm's procedure (its family-wise error on a null simulation), the
claims table's rules (experiments._claims), and row grouping that never loses a label."""

import math

import numpy as np
import pytest

from experiments import _common


def test_holm_step_down():
    # m = 4, α = 0.05: thresholds 0.0125, 0.0167, 0.025, 0.05 for the sorted p-values
    p = [0.04, 0.001, 0.013, 0.03]
    assert _common.holm(p, 0.05) == [False, True, True, False]  # stops at 0.03 > 0.025
    assert _common.holm([0.01, 0.02, 0.03, 0.04], 0.05) == [True, False, False, False]
    assert _common.holm([0.01, 0.015, 0.02, 0.04], 0.05) == [True, True, True, True]
    assert _common.holm([0.2, 0.01], 0.05) == [False, True]
    assert _common.holm([], 0.05) == []


def test_holm_family_wise_error_on_a_null_simulation():
    """All m = 50 hypotheses true (standard normal z, one-sided p), correlated (ρ = 0.5) and
    independent: the rate of families with any rejection stays below α = 0.05. 4,000 families
    each: observed within 0.05 + 5 SE (SE = 0.0034), a failure probability below 1e-6 for a
    correct procedure. The uncorrected 2-SE rule of the old Lyu'17 check rejects in most
    families (shown for contrast)."""
    rng = np.random.default_rng(7)
    families, m, alpha = 4000, 50, 0.05
    for rho in (0.0, 0.5):
        shared = rng.standard_normal((families, 1))
        z = math.sqrt(rho) * shared + math.sqrt(1 - rho) * rng.standard_normal((families, m))
        hits = sum(any(_common.holm([_common.one_sided_p(x) for x in row], alpha))
                   for row in z)
        rate = hits / families
        assert rate <= alpha + 5 * math.sqrt(alpha * (1 - alpha) / families), (rho, rate)
    naive = np.mean(np.any(z > 2.0, axis=1))
    assert naive > 0.3


def test_p_values():
    assert _common.two_sided_p(0.0) == 1.0
    assert _common.two_sided_p(1.959963984540054) == pytest.approx(0.05, rel=1e-9)
    assert _common.one_sided_p(1.6448536269514722) == pytest.approx(0.05, rel=1e-9)
    assert _common.one_sided_p(-math.inf) == 1.0 and _common.one_sided_p(math.inf) == 0.0


def test_claims_table_explains_every_verdict_but_agree(tmp_path):
    from experiments._claims import Claim, Part, const, evaluate, markdown

    up = Part("greater", "all").add("x", const(2.0), const(1.0))
    down = Part("greater", "all").add("y", const(1.0), const(2.0))
    rows = evaluate([Claim("a-1", "it | rises", "P, Sec. 1", "line 1", "q", "t", "c", [up]),
                     Claim("a-2", "it falls", "P, Sec. 2", "line 2", "q", "t", "c", [down])],
                    str(tmp_path))
    assert [r["verdict"] for r in rows] == ["agree", "disagree"]
    assert rows[0]["explanation"] == "" and "1 contradicts" in rows[1]["explanation"]
    text = markdown(rows)
    assert "“it \\| rises”" in text and "| a-1 (1) |" in text
    assert "Verdicts: 1 agree, 1 disagree." in text


def test_group_rows_refuses_to_lose_a_row():
    rows = [{"point_id": "p", "label": "a", "metric": "ncr", "mean": 0.5},
            {"point_id": "p", "label": "b", "metric": "ncr", "mean": 0.5}]
    assert set(_common.group_rows(rows, "point_id", "label")) == {("p", "a"), ("p", "b")}
    with pytest.raises(ValueError, match="group by more columns"):
        _common.group_rows(rows, "point_id")


def test_jsonable_parameters():
    from svtjax.noise import Laplace

    out = _common.dumps({"c": np.int64(3), "x": (1.5, np.float32(2.0)), "n": Laplace(2.0),
                         "bad": float("nan")})
    assert '"c": 3' in out and '"x": [1.5, 2.0]' in out and "Laplace" in out and "nan" in out


def test_unit_axis_shows_small_and_wide_ranges():
    """Issue 59 item 16: Figure 8's panels at ε = 0.1 (every NCR <= 0.08) were drawn on a 0-1
    axis and Figure 7's Zipf/Binary (0.004-1) on a linear one; the axis now fits the data."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (small, wide, zeros) = plt.subplots(1, 3)
    _common.fit_unit_axis(small, [0.01, 0.05, 0.08])
    assert small.get_yscale() == "linear" and small.get_ylim()[1] < 0.1
    _common.fit_unit_axis(wide, [0.004, 0.2, 1.0])
    assert wide.get_yscale() == "log" and wide.get_ylim()[0] < 0.004
    _common.fit_unit_axis(zeros, [0.0, 0.004, 1.0])
    assert zeros.get_yscale() == "symlog"
    plt.close(fig)
