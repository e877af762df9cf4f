"""Issue 20, items 2 and 3: numbers the computing dtype cannot hold are refused before anything
compiles, for every mechanism (a mechanism of one's own included); ``privacy()`` never reports a
NaN or underflowed ε, and says that its guarantee is the paper's for the idealised mechanism,
not for svtjax's floating-point samplers."""

import importlib
import pathlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import svtjax
from svtjax import _driver, _validate, accounting, cli, sweep
from svtjax._pytree import pytree_dataclass
from svtjax.mechanisms import ThresholdMechanism, Written
from svtjax.noise import Laplace
from tests.stand_ins import no_kernels, run_cli

sim = importlib.import_module("svtjax.simulate")
Q32 = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 0.5], np.float32)
ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytree_dataclass
class OwnRule(ThresholdMechanism):
    """A mechanism of one's own (not registered): one Laplace stream of scale ``b``."""

    b: Any = 1.0
    name = "own-rule-for-a-test"

    def streams(self):
        return {"query": Laplace(self.b)}

    def init(self, noise):
        del noise
        return jnp.zeros((), jnp.int32)

    def step(self, state, x):
        return state, Written(x.query + x.noise["query"] >= x.threshold)

    def privacy(self):
        return accounting.PureDP("a test rule", 1.0)


FLOAT32_CASES = [
    ("epsilon too large", svtjax.get("svt-s", epsilon=1e39, c=3),
     "svt-s cannot run in float32: epsilon = 1e\\+39 overflows float32"),
    ("epsilon too small", svtjax.get("svt-s", epsilon=1e-40, c=3),
     "epsilon = 1e-40 is below float32's smallest normal number"),
    ("noise scale overflows", svtjax.get("report-noisy-max", epsilon=1e-37, k=2),
     "report-noisy-max cannot run in float32: its query noise scale is 4e\\+37"),
    ("sensitivity", svtjax.get("lyu-alg1", epsilon=1.0, c=2, sensitivity=1e39),
     "sensitivity = 1e\\+39 overflows"),
    ("a noise object's scale", svtjax.get("generalized-svt", c=2,
                                          threshold_noise=Laplace(1e-39),
                                          query_noise=Laplace(1.0)),
     "threshold_noise.scale = 1e-39 is below"),
    ("own rule, huge scale", OwnRule(b=1e38), "own-rule-for-a-test cannot run in float32: its "
                                              "query noise scale is 1e\\+38"),
    ("own rule, tiny scale", OwnRule(b=1e-39), "own-rule-for-a-test cannot run in float32: b = "
                                               "1e-39"),
]


@pytest.mark.parametrize("label,mech,message", FLOAT32_CASES, ids=[c[0] for c in FLOAT32_CASES])
def test_simulate_refuses_what_float32_cannot_compute(label, mech, message):
    """These used to run and return F1 = 0 and inf costs ("nan-DP" in the CLI); now one line,
    before compiling, saying what to do. float64 holds the same numbers."""
    before = _driver.run_chunk._cache_size()
    with pytest.raises(ValueError, match=message) as err:
        svtjax.simulate(mech, Q32, 3.0, trials=2)
    assert "\n" not in str(err.value) and "float64" in str(err.value)
    assert _driver.run_chunk._cache_size() == before
    if not label.startswith("noise"):
        _validate.computable(mech, np.float64)  # float64 holds them


def test_a_mechanism_is_checked_once_per_dtype_and_a_refusal_every_time(monkeypatch):
    """``computable`` checks a hashable mechanism's parameters once per dtype (equal mechanisms
    alike) and never remembers a refusal; queries and thresholds are checked at every call."""
    equal = [svtjax.get("svt-s", epsilon=0.75, c=3) for _ in range(3)]
    ok, bad = equal[0], svtjax.get("svt-s", epsilon=1e39, c=3)
    calls = []
    real = _validate._mechanism_computable
    monkeypatch.setattr(_validate, "_mechanism_computable",
                        lambda m, d, w: (calls.append((m.name, np.dtype(d).name)), real(m, d, w)))
    _validate._mechanism_computable_once.cache_clear()
    for mech in equal:
        _validate.computable(mech, np.float32)
    _validate.computable(ok, np.float64)
    assert calls == [("svt-s", "float32"), ("svt-s", "float64")]
    for _ in range(2):
        with pytest.raises(ValueError, match="overflows float32"):
            _validate.computable(bad, np.float32)
    assert calls[2:] == [("svt-s", "float32")] * 2
    with pytest.raises(ValueError, match="queries = 9.99995e-41 is below float32"):
        _validate.computable(ok, np.float32, queries=np.array([1e-40, 1.0], np.float32))


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_queries_and_thresholds_float32_cannot_hold_are_refused():
    mech = svtjax.get("svt-s", epsilon=1.0, c=2)
    with pytest.raises(ValueError, match="thresholds = 1e\\+39 overflows float32"):
        svtjax.simulate(mech, Q32, 1e39, trials=2)
    with pytest.raises(ValueError, match="queries = 9.99995e-41 is below float32"):
        svtjax.simulate(mech, np.array([1e-40, 1.0]).astype(np.float32), 0.0, trials=2)


def test_sweep_checks_its_dtype_before_running():
    raw = {"sweep": {"trials": 2, "datasets": [{"name": "zipf", "n": 20}], "dtype": "float32"},
           "grid": {"epsilon": [1e39], "c": [3]}, "mechanisms": [{"name": "svt-s"}]}
    with pytest.raises(sweep.SweepConfigError, match="cannot run in float32: epsilon = 1e\\+39"):
        sweep.load_config(raw)
    raw["sweep"]["dtype"] = "float64"
    assert sweep.expand(sweep.load_config(raw))[0].build().epsilon == 1e39
    raw["grid"]["epsilon"] = [1.0]
    raw["sweep"].update(dtype="float32", threshold=1e39)
    with pytest.raises(sweep.SweepConfigError, match="threshold = 1e\\+39 overflows float32"):
        sweep.load_config(raw)


@pytest.mark.parametrize("eps,needle", [("1e39", "overflows float32"),
                                        ("1e-40", "below float32's smallest normal")])
def test_cli_refuses_epsilon_float32_cannot_hold(eps, needle, capsys):
    assert cli.main(["simulate", "-m", "svt-s", "-e", eps, "--trials", "2", "--c", "3",
                     "-d", "binary"]) == 2
    err = capsys.readouterr()
    assert needle in err.err and len(err.err.strip().splitlines()) == 1 and not err.out


def test_privacy_never_reports_nan_or_an_underflowed_epsilon():
    """The guarantee is computed on the host in float64 from the parameters as given: 1e-40-DP
    for ε = 1e-40 (it printed "0-DP"); a NaN ε is refused."""
    assert svtjax.get("svt-s", epsilon=1e-40, c=3).privacy().epsilon() == pytest.approx(1e-40)
    assert svtjax.get("svt-s", epsilon=1e39, c=3).privacy().epsilon() == pytest.approx(1e39)
    with pytest.raises(ValueError, match="epsilon must be a number >= 0; got nan"):
        accounting.PureDP("x", float("nan"))
    with pytest.raises(ValueError, match="epsilon must be a number >= 0"):
        accounting.ApproxDP("x", -1.0, 1e-6)
    with pytest.raises(ValueError, match="cannot run in float64"):
        svtjax.get("lee-clifton", epsilon=1e308, c=3)  # its noise scale underflows to 0


def test_guarantees_say_they_are_the_papers_for_the_idealised_mechanism():
    """Issue 20, item 3: ``privacy()`` (its ``scope``), the Guarantee docs, the CLI table and
    the README say that the guarantee is the paper's for the idealised mechanism and that the
    floating-point samplers are for simulation, not for releasing real data (Mironov 2012)."""
    for name in svtjax.names():
        mech = svtjax.get(name, **svtjax.mechanisms.registry()[name].example_params(n=20))
        scope = mech.privacy().scope
        assert "idealised mechanism" in scope and "not for releasing real data" in scope
        assert "Mironov 2012" in scope
    assert "Mironov" in accounting.Guarantee.__doc__ and "simulation" in accounting.__doc__
    readme = (ROOT / "README.md").read_text()
    assert "Mironov 2012" in readme and "not for releasing real data" in readme
    with pytest.MonkeyPatch.context() as mp, no_kernels(mp):
        code, out, _ = run_cli(["simulate", "-m", "svt-s", "-e", "1", "--trials", "2", "--c",
                                "3", "-d", "binary"])
    assert code == 0 and "not for releasing real data" in out


# -- issue 58, item 7: outputs that overflow although every input fits -----------------------------

HUGE = np.linspace(3.3e38, 3.0e38, 200).astype(np.float32)  # every score fits, the top-50 sum not


def test_svt_gap_refuses_gaps_float32_cannot_hold():
    """Queries 3e38 with a threshold −3e38 fit float32, their gaps (6e38) do not: refused in
    one line before anything is compiled (it released +inf gaps); gaps that fit still run."""
    mech = svtjax.get("svt-gap", epsilon=1.0, c=2)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_driver, "run_chunk", lambda *a, **k: pytest.fail("compiled before refusing"))
        with pytest.raises(ValueError, match="svt-gap cannot run in float32: a released gap "
                                             "q_i \\+ noise - \\(T_i \\+ noise\\) can reach 6e"
                                             "\\+38") as err:
            svtjax.simulate(mech, np.full(8, 3e38, np.float32), -3e38, trials=2)
    assert len(str(err.value).splitlines()) == 1
    out = svtjax.simulate(mech, np.full(8, 1e38, np.float32), -1e38, trials=2)
    gaps = np.asarray(out.values)[np.asarray(out.answers) == 1]
    assert gaps.size == 4 and np.all(np.isfinite(gaps)) and np.all(gaps > 1.9e38)


def test_support_metrics_do_not_overflow_and_score_a_true_top_c_exactly():
    """SER and NCS were NaN when the top-c support overflows float32, and SER of a true top-c
    was −7e-8 when its items came in another order than the sort's: the sums are exact now."""
    # Every call below has one shape (64 selections of 50 items, 200 float32 scores): one
    # compiled program for the three checks.
    rng = np.random.default_rng(58)
    perfect = np.stack([rng.permutation(50) for _ in range(64)])
    shifted = np.tile(np.arange(1, 51), (64, 1))  # misses the top item, takes the 51st
    got = svtjax.metrics.evaluate(perfect, HUGE, 50)
    assert np.all(np.asarray(got["ser"]) == 0) and np.all(np.asarray(got["ncs"]) == 1)
    want = 1 - HUGE[1:51].astype(float).sum() / HUGE[:50].astype(float).sum()
    ser = np.asarray(svtjax.metrics.ser(shifted, HUGE, 50))
    assert ser[0] == pytest.approx(want, rel=1e-6) and np.all(ser == ser[0])
    zipf = np.asarray(svtjax.datasets.zipf(HUGE.size).scores, np.float32)
    top = np.argsort(-zipf, kind="stable")[:50]
    orders = np.stack([rng.permutation(top) for _ in range(64)])
    got = svtjax.metrics.evaluate(orders, zipf, 50)
    assert np.all(np.asarray(got["ser"]) == 0) and np.all(np.asarray(got["ncs"]) == 1)


def test_a_perfect_selection_has_ser_zero_inside_simulate():
    """The reducer's path (``evaluate_outcome``, shuffled and fixed order): an exact top-c
    selection (noise far below the gaps) scores SER 0 and finite NCS on scores whose top-50 sum
    overflows float32."""
    mech = svtjax.get("svt-s", epsilon=1e6, c=50, sensitivity=1e30)
    threshold = float((HUGE[49].astype(float) + HUGE[50]) / 2)

    def reduce(scores, out):
        got = svtjax.metrics.evaluate_outcome(out, scores, 50)
        return got["ser"], got["ncs"], got["picks"]

    fn = jax.tree_util.Partial(reduce, jnp.asarray(HUGE))
    for shuffle in (True, False):
        ser, ncs, picks = svtjax.simulate(mech, HUGE, threshold, trials=16, shuffle=shuffle,
                                          reduce=fn)
        assert int(picks) == 16 * 50 and float(ser) == 0.0 and float(ncs) == 16.0
