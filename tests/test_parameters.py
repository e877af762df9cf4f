"""Mechanism parameters: built once, without mutation, and one noise-scale function each.

Construction is a step from the values given to the values stored (``svtjax._pytree``: a class's
``_normalize``); nothing is set on a built object, unflattening skips construction, a stored
form round-trips through ``svtjax.get``, and SVT-S / SVT-Exp write their noise scales once
(``noise_laws``), read by the rule and by ``svtjax.exact.law_at_share`` alike.
"""

from __future__ import annotations

import dataclasses
import pathlib
import re
from typing import Any

import jax
import pytest

import svtjax
from svtjax import correction, exact
from svtjax._pytree import pytree_dataclass, static_field
from svtjax.mechanisms.classic import SVTS
from svtjax.mechanisms.exponential import SVTExp
from svtjax.noise import Laplace


@pytree_dataclass
class _Scaled:
    """A parameter object whose construction canonicalises (the ``_pytree`` hook)."""

    scale: Any = 1.0
    kind: str = static_field(default="a")
    calls = []

    @classmethod
    def _normalize(cls, values):
        cls.calls.append(dict(values))
        return {**values, "scale": float(values["scale"]), "kind": values["kind"].lower()}

    def __post_init__(self):
        assert isinstance(self.scale, float) and self.kind.islower()  # sees the stored values


def test_normalize_hook_sets_values_once_and_unflatten_skips_it():
    _Scaled.calls.clear()
    obj = _Scaled(3, kind="B")
    assert (obj.scale, obj.kind) == (3.0, "b") and type(obj.scale) is float
    assert _Scaled.calls == [{"scale": 3, "kind": "B"}]  # every field, defaults applied
    leaves, treedef = jax.tree_util.tree_flatten(obj)
    rebuilt = jax.tree_util.tree_unflatten(treedef, [-7])  # no _normalize, no __post_init__
    assert rebuilt.scale == -7 and len(_Scaled.calls) == 1
    jax.jit(lambda o: o.scale * 2)(obj)  # traced leaves rebuild without construction
    assert len(_Scaled.calls) == 1


@pytest.mark.parametrize("name,params", [
    ("svt-s", {"c": 3, "allocation": (0.2, 0.5), "eps3": 0.1}),
    ("svt-gap", {"c": 2, "allocation": (0.25, 0.75), "monotonic": True}),
    ("svt-exp", {"c": 3, "allocation": (0.3, 0.7), "correction": "mean"}),
    ("svt-exp", {"epsilon": 1.0, "c": 3, "correction": 2.5, "noise": "laplace"}),
])
def test_stored_form_is_the_given_form(name, params):
    """An explicit split and a given correction r are stored without a string sentinel: the
    parameters read back as given (allocation=(eps1, eps2), correction=r) and rebuild an equal
    mechanism."""
    mech = svtjax.get(name, **params)
    assert "explicit" not in repr(mech) and "'value'" not in repr(mech)
    shown = mech.params()
    for key in ("allocation", "correction"):
        if key in params:
            assert shown[key] == params[key]
    assert svtjax.get(name, **shown) == mech
    assert dataclasses.replace(mech) == mech  # the stored form is a valid input too


def test_svt_exp_correction_is_computed_at_construction_by_correction_term():
    mech = svtjax.get("svt-exp", epsilon=0.8, c=4, correction_k=6, noise="gumbel")
    rho, nu = SVTExp.noise_laws(*mech.budgets(), c=4, noise="gumbel")
    assert mech.correction_value == correction.term("optimal", nu, rho, 6)
    assert mech.threshold_shift() is mech.correction_value  # the rule reads the leaf
    mean = svtjax.get("svt-exp", epsilon=0.8, c=4, correction="mean", noise="laplace")
    assert mean.correction_value == correction.term("mean", mean.query_noise(), None)


def test_rule_and_law_at_share_read_one_scale_function(monkeypatch):
    """Replacing SVT-S's noise_laws changes the rule's streams and law_at_share's traced law
    alike: neither writes the scales itself."""
    def doubled(eps1, eps2, *, c, sensitivity=1.0, monotonic=False):
        return Laplace(2.0 * sensitivity / eps1), Laplace(3.0 * c * sensitivity / eps2)

    monkeypatch.setattr(SVTS, "noise_laws", staticmethod(doubled))
    mech = svtjax.get("svt-s", c=2, allocation=(0.25, 0.5))
    assert mech.initial_streams()["threshold"] == Laplace(8.0)
    assert mech.streams()["query"] == Laplace(12.0)
    law = jax.jit(lambda s: exact.law_at_share("svt-s", s, epsilon=1.0, c=2))(0.25)
    assert float(law.threshold_noise.scale) == pytest.approx(8.0, rel=1e-12)
    assert float(law.query_noise.scale) == pytest.approx(8.0, rel=1e-12)


def test_no_mechanism_mutates_itself_after_construction():
    """No ``object.__setattr__`` on a built mechanism in the modules built this way."""
    root = pathlib.Path(svtjax.__file__).parent / "mechanisms"
    for module in ("classic", "exponential", "generalized", "selection", "figure1", "_checks"):
        text = (root / f"{module}.py").read_text()
        assert not re.search(r"object\.__setattr__", text), module
