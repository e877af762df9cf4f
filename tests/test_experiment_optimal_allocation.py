"""experiments/optimal_allocation.py: an optimum on the searched share range is searched
again on a wider one and, if still on it, flagged ``at_bound`` with the loss a lower bound
(issue 59 item 15); Lyu'17's rows use Lyu's Zipf."""

import types

import pytest

from experiments import optimal_allocation as oa


def _stub(monkeypatch, shares):
    """exact.optimal_allocation returning the given share per call (its lower bound when
    ``None``); the heuristic's E[SER] fixed at 0.2."""
    calls = []

    def optimal_allocation(name, q, t, *, bounds, **kw):
        share = shares[len(calls)]
        calls.append(tuple(bounds))
        return types.SimpleNamespace(share=bounds[0] if share is None else share, value=0.1,
                                     grid=[], evaluations=3)

    monkeypatch.setattr(oa.exact, "optimal_allocation", optimal_allocation)
    monkeypatch.setattr(oa.exact, "law_at_share", lambda *a, **k: None)
    monkeypatch.setattr(oa.exact, "expected_metrics", lambda *a, **k: {"ser": 0.2})
    return calls


def test_an_optimum_on_the_bound_is_searched_wider_then_flagged(monkeypatch):
    calls = _stub(monkeypatch, [None, None])
    row = oa.row_for("svt-s-monotonic", "chess", 25, 0.1, True)
    assert calls == list(oa.SEARCH_BOUNDS) and row["at_bound"] is True
    assert row["bounds"] == list(oa.SEARCH_BOUNDS[-1])
    text = oa.markdown([dict(row, ser_lost_relative=1.0)])
    assert "(at bound)" in text and "≥ 100.0%" in text and "lower bound" in text


def test_an_interior_optimum_is_not_flagged(monkeypatch):
    calls = _stub(monkeypatch, [None, 0.05])  # on the first range's bound, inside the second
    row = oa.row_for("svt-s-monotonic", "chess", 25, 0.1, True)
    assert len(calls) == 2 and row["at_bound"] is False
    calls = _stub(monkeypatch, [0.05])
    assert oa.row_for("svt-s-monotonic", "chess", 25, 0.1, True)["at_bound"] is False
    assert len(calls) == 1
    assert oa.on_bound(1e-3, (1e-3, 0.8)) and not oa.on_bound(0.05, (1e-3, 0.8))


def test_search_runs_at_the_modules_tolerance(monkeypatch):
    seen = []
    monkeypatch.setattr(oa.exact, "optimal_allocation", lambda *a, **kw: seen.append(kw) or
                        types.SimpleNamespace(share=0.05, value=0.1, grid=[], evaluations=3))
    monkeypatch.setattr(oa.exact, "law_at_share", lambda *a, **k: None)
    monkeypatch.setattr(oa.exact, "expected_metrics", lambda *a, **k: {"ser": 0.2})
    oa.row_for("svt-s-monotonic", "chess", 25, 0.1, True)
    assert [kw["xtol"] for kw in seen] == [oa.XTOL]


def test_lyu_rows_run_on_lyus_zipf():
    plan = oa._rows(("svt-s-monotonic", "svt-exp"), ("zipf",), (25,), True)
    assert {(k, d) for k, d, _, _ in plan} == {("svt-s-monotonic", "lyu-zipf"),
                                                ("svt-exp", "zipf")}


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
