"""A new mechanism of the package is one module: its rule, its numpy reference and its declared
cases (equivalence cases, privacy claims, distribution runs), and no edit anywhere else.

The test copies the package into a temporary directory, writes one module there (a variant of
Lyu, Su & Li 2017's Algorithm 1 whose cut-off c is 3 unless given), and runs the repository's
registry-driven privacy, distribution and equivalence tests (copied beside it) on the new name in
a subprocess that imports the copy; every one of them must find it and pass. The other tests
check that the suite refuses a package mechanism registered without its declarations.
"""

import dataclasses
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from svtjax.mechanisms import base
from svtjax.mechanisms.classic import LyuAlg1
from tests import test_distribution, test_privacy
from tests.conftest import subprocess_env

ROOT = Path(__file__).resolve().parent.parent
NAME = "acceptance-svt"
MODULE = '''"""acceptance-svt: Lyu, Su & Li (2017)'s Algorithm 1, cut-off c = 3 unless given."""

from typing import Any

from svtjax.mechanisms.base import register
from svtjax.mechanisms.classic import LyuAlg1
from svtjax.reference import classic as ref
from svtjax.testing import Q6, Case, Claim, Distribution, DistributionCase, Figure1Law, eps


def _law(p):  # Figure 2: rho = Lap(2 Delta / eps), nu = Lap(4 c Delta / eps)
    c, delta = p.get("c", 3), p.get("sensitivity", 1.0)
    return Figure1Law(2 * delta / p["epsilon"], 4 * c * delta / p["epsilon"], c)


@register(reference=ref.lyu_alg1, cases=[Case("acceptance-svt", {}, eps)],
          privacy=[Claim("eps0.7", {"epsilon": 0.7}, 0.7, "PureDP", ("Lyu", "Theorem 2"))],
          distribution=Distribution(_law, (
              DistributionCase("acceptance-svt-c3", {"epsilon": 4.0}, Q6, 1.0, 17),)))
class AcceptanceSVT(LyuAlg1):
    c: Any = 3
    name = "acceptance-svt"
'''
SELECTED = {"test_privacy.py": 4, "test_distribution.py": 3, "test_equivalence.py": 4}
"""Tests of each file that must run on the new name: privacy (its claim, its two parameter-error
tests, the declarations check), distribution (its oracle, its run, the declarations check),
equivalence (the three harness tests on its case: float64 and float32 in the given order, with the
lazy run, and shuffled; the references check)."""


def test_a_new_module_is_registered_and_tested(tmp_path):
    shutil.copytree(ROOT / "svtjax", tmp_path / "svtjax")
    (tmp_path / "svtjax" / "mechanisms" / "acceptance_svt.py").write_text(MODULE)
    # the tests (the distribution tests check the modules that mechanisms name as theirs)
    shutil.copytree(ROOT / "tests", tmp_path / "tests", ignore=shutil.ignore_patterns("data"))
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    selection = f"{NAME} or declares or fully_referenced"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", *(f"tests/{f}" for f in SELECTED), "-k", selection,
         "-q", "-p", "no:cacheprovider", "-rA", "--durations=0"],
        cwd=tmp_path, env=subprocess_env(PYTHONPATH=str(tmp_path)), capture_output=True,
        text=True, timeout=600)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    for test_file, count in SELECTED.items():
        passed = re.findall(rf"^PASSED tests/{test_file}::(\S+)", out, re.M)
        assert len(passed) == count, (test_file, passed, out)
        assert sum(NAME in t for t in passed) >= count - 1, (test_file, passed)
    assert f"{sum(SELECTED.values())} passed" in out, out


@pytest.fixture
def undeclared(monkeypatch):
    """A package mechanism registered with its reference and cases but no privacy claims or
    distribution tests (the registry is restored afterwards)."""
    cls = type("Undeclared", (LyuAlg1,), {"name": "undeclared-svt", "__module__":
                                           "svtjax.mechanisms.undeclared"})
    entry = dataclasses.replace(base.entry("lyu-alg1"), cls=cls, privacy=(), distribution=None)
    monkeypatch.setitem(base._REGISTRY, "undeclared-svt", entry)


def test_privacy_tests_refuse_a_mechanism_without_claims(undeclared):
    with pytest.raises(AssertionError, match="undeclared-svt"):
        test_privacy.test_every_package_mechanism_declares_privacy_claims()


def test_distribution_tests_refuse_a_mechanism_without_a_law(undeclared):
    with pytest.raises(AssertionError, match="undeclared-svt"):
        test_distribution.test_every_package_mechanism_declares_a_distribution_test()
