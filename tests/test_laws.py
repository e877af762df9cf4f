"""The tests' fast noise laws (``tests/laws.py``) against scipy.stats, on scalars and arrays,
into both tails: the exact oracles that integrate them are only as right as they are."""

import numpy as np
import pytest
from scipy import stats

from tests.laws import fast

FROZEN = [stats.laplace(scale=1.7), stats.laplace(loc=0.3, scale=0.5), stats.norm(scale=2.0),
          stats.norm(1.0, 0.5), stats.expon(scale=3.0), stats.gumbel_r(scale=2.0)]


@pytest.mark.parametrize("frozen", FROZEN, ids=lambda f: f"{f.dist.name}-{f.kwds or f.args}")
def test_fast_laws_equal_scipy(frozen):
    law = fast(frozen)
    x = np.concatenate([np.linspace(-60, 60, 1201), [-1e-9, 0.0, 1e-9, -700, 700, -2000, 2000]])
    with np.errstate(over="ignore", under="ignore"):
        for name in ("pdf", "cdf", "sf"):
            want = getattr(frozen, name)(x)
            np.testing.assert_allclose(getattr(law, name)(x), want, rtol=1e-15, atol=0,
                                       err_msg=name)
            scalars = np.array([getattr(law, name)(float(v)) for v in x])
            np.testing.assert_allclose(scalars, want, rtol=1e-13, atol=0, err_msg=name)


def test_other_laws_are_refused():
    with pytest.raises(ValueError, match="no fast law"):
        fast(stats.cauchy())
