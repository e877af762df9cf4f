"""``svtjax.sweep.picks``: the em-peeling points of a sweep share one compiled chunk across c,
with the same numbers as one chunk per c."""
import jax
import jax.numpy as jnp
import numpy as np

import svtjax
from svtjax import sweep
from svtjax.sweep import picks, runner

N = 40


def _config(metrics=("ser", "ncr", "f1", "picks")):
    return {
        "sweep": {"name": "p", "trials": 200, "datasets": [{"name": "zipf", "n": N}],
                  "metrics": list(metrics), "seed": 5, "shuffle": True, "threshold": "lyu"},
        "grid": {"epsilon": [0.5, 2.0], "c": [2, 3, 7]},
        "mechanisms": [{"name": "em-peeling", "monotonic": True, "label": "EM"}],
    }


CASES = [(monotonic, c) for monotonic in (True, False) for c in (1, 4, 9)]


def _mech(monotonic, c):
    return svtjax.get("em-peeling", epsilon=0.7, c=c, monotonic=monotonic)


@jax.jit
def _items(keys, q):
    """Every case's c-peeling and shared 12-pick batches, in one program (run eagerly, each
    of their operations would be a program of its own)."""
    return [(_mech(m, c).run_batch(keys, q, jnp.zeros(N), shuffle=True).items,
             picks.shared(_mech(m, c), 12).run_batch(keys, q, jnp.zeros(N), shuffle=True).items)
            for m, c in CASES]


def test_first_c_picks_are_em_peelings_bit_for_bit():
    q = np.asarray(svtjax.datasets.load("zipf", n=N).scores, np.float32)
    keys = jax.random.split(jax.random.PRNGKey(11), 64)
    for (monotonic, c), (want, got) in zip(CASES, _items(keys, q)):
        mech = _mech(monotonic, c)
        assert got.shape == (64, 12)
        np.testing.assert_array_equal(np.asarray(got)[:, :c], np.asarray(want))
        assert float(picks.shared(mech, 12).scale()) == float(mech.scale())


def test_sweep_compiles_em_peeling_once_with_the_same_numbers(monkeypatch):
    shared = sweep.run(_config(), progress=False, log=lambda m: None)
    assert shared.compiles == {"em-peeling": 1}
    monkeypatch.setattr(runner, "share_picks", lambda points, mechs, *a: list(mechs))
    alone = sweep.run(_config(), progress=False, log=lambda m: None)
    assert alone.compiles == {"em-peeling": 3}  # one chunk per c without sharing

    def stats(res):
        return [{k: v for k, v in r.items() if k != "seconds"} for r in res.rows]

    assert stats(shared) == stats(alone)


def test_metrics_reading_the_whole_outcome_keep_one_chunk_per_c():
    points = sweep.expand(sweep.load_config(_config(("ser", "cost"))))
    mechs = [p.build() for p in points]
    assert picks.share_picks(points, mechs, ["ser", "cost"]) == mechs
    assert picks.share_picks(points, mechs, ["ser"], own=["ser"]) == mechs
    got = picks.share_picks(points, mechs, ["ser"])
    assert {type(m) for m in got} == {picks.SharedPicks}
    assert {m.bound for m in got} == {7}
