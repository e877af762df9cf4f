"""The command line as a newcomer meets it: --version, --plugin in every help, no stray %%,
a listing with whole summaries, what each None default means, item counts, download-only
datasets, the compiled kernels' state, and parameters the data determine."""

import json

import pytest

import svtjax
from svtjax import cli, sweep
from tests.stand_ins import run_cli


def test_version():
    code, out, err = run_cli(["--version"])
    assert code == 0 and out.strip() == f"svtjax {svtjax.__version__}", err


@pytest.mark.parametrize("command", [[], ["list"], ["simulate"], ["sweep"], ["reproduce"],
                                     ["audit"], ["bench"]])
def test_every_help_lists_plugin_and_has_no_doubled_percent(command):
    code, out, err = run_cli(command + ["--help"])
    assert code == 0, err
    assert "--plugin" in out and "%%" not in out


def test_an_unknown_mechanism_points_to_plugin():
    code, _, err = run_cli(["simulate", "-m", "my-variant", "--trials", "2"])
    assert code == 2 and "--plugin" in err and err.count("\n") == 1, err


def test_list_shows_whole_summaries_default_meanings_counts_and_kernels():
    code, out, err = run_cli(["list"])
    assert code == 0, err
    lines = out.splitlines()
    for n in svtjax.names():
        (line,) = [x for x in lines if x.startswith(f"  {n} ")]
        summary = line[len(n) + 2:].strip()
        assert summary.count("(") == summary.count(")"), line  # never cut mid-parenthesis
    assert any(x.strip().startswith("allocation=None: Lyu's optimum") for x in lines)
    assert any(x.startswith("mechanisms (") and f"({len(svtjax.names())};" in x for x in lines)
    kosarak = next(x for x in lines if x.startswith("  kosarak "))
    assert "41,270 items" in kosarak and "download" in kosarak
    adult = next(x for x in lines if x.startswith("  adult "))
    assert "download" not in adult
    assert any(x.startswith("compiled kernels: ") for x in lines)
    code, out, _ = run_cli(["list", "--json"])
    data = json.loads(out)
    assert data["datasets"]["kosarak"]["shipped"] is False and data["native_kernels"]
    assert "allocation" in data["mechanism_details"]["svt-s"]["none_means"]


def test_svt_exp_takes_its_correction_k_from_the_data():
    """Liu et al. 2024 use k = floor(m/c) for m queries; a sweep sets it from the dataset when
    the table does not (and only for the optimal correction)."""
    raw = {"sweep": {"name": "k", "trials": 8, "datasets": [{"name": "zipf", "n": 120},
                                                            {"name": "zipf", "n": 60}]},
           "grid": {"epsilon": [1.0], "c": [4, 7]},
           "mechanisms": [{"name": "svt-exp"},
                          {"name": "svt-exp", "label": "none", "correction": "none"},
                          {"name": "svt-exp", "label": "given", "correction_k": 3}]}
    points = sweep.load_config(raw).points
    got = {(p.dataset, p.label, p.c): dict(p.params).get("correction_k") for p in points}
    assert got[("zipf[n=120]", "svt-exp", 4)] == 30 and got[("zipf[n=60]", "svt-exp", 7)] == 8
    assert got[("zipf[n=120]", "none", 4)] is None
    assert got[("zipf[n=60]", "given", 7)] == 3
    assert "floor(n/c)" in str(svtjax.mechanisms.parameters("svt-exp")["correction_k"])
    assert cli.PLUGIN_HELP


def test_both_audit_modes_say_proven_epsilon(monkeypatch):
    """One word for the proven ε in the Monte Carlo audit and in the exact one."""
    import inspect

    from svtjax import audit
    from svtjax.exact import _privacy

    assert "proven ε" in inspect.getsource(audit.format_result)
    assert "proven ε" in inspect.getsource(_privacy) and "proved ε" not in \
        inspect.getsource(_privacy)


def test_an_error_inside_the_audit_search_is_not_a_user_error(monkeypatch):
    """A ValueError raised while the audit computes (after every input was checked) is a bug:
    a traceback (AuditFailure), not 'bad input'."""
    from svtjax import audit
    from svtjax.audit import report

    def broken(*args, **kwargs):
        raise ValueError("an internal inconsistency")

    monkeypatch.setattr(report, "search", broken)
    mech = svtjax.get("svt-s", epsilon=1.0, c=2)
    with pytest.raises(audit.AuditFailure, match="after its inputs were checked"):
        audit.audit(mech, trials=100)


def test_reproduce_verify_is_the_experiments_verify(tmp_path):
    code, _, err = run_cli(["reproduce", "--verify", str(tmp_path)])
    assert code == 2 and "no claims.csv" in err, err
    code, _, err = run_cli(["reproduce", "lyu2017", "--verify", str(tmp_path)])
    assert code == 2 and "takes no experiment name" in err, err
    code, _, err = run_cli(["reproduce"])
    assert code == 2 and "--verify OUT" in err, err
