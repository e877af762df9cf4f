"""How the command line reports failures: a problem with the input or the file system is one
line and exit status 2; a failure while computing is a bug in svtjax and keeps its traceback;
an unusable compilation cache never adds a line to an error."""

import pytest

from svtjax import cli
from svtjax.cli import errors, simulate
from tests.stand_ins import run_cli


def _unusable_cache(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.delenv("SVTJAX_NO_CACHE", raising=False)
    monkeypatch.setenv("SVTJAX_CACHE_DIR", str(blocker / "xla"))  # cannot be created


def test_an_unusable_cache_does_not_make_an_error_two_lines(tmp_path, monkeypatch):
    """The compilation cache's note was printed on start, so every error of the command had
    two lines."""
    _unusable_cache(tmp_path, monkeypatch)
    code, out, err = run_cli(["simulate", "--trials", "0"])
    assert code == 2 and out == "", err
    assert err.count("\n") == 1 and err.startswith("svtjax simulate: error: --trials "), err


def test_an_unusable_cache_is_said_after_a_successful_command(tmp_path, monkeypatch):
    _unusable_cache(tmp_path, monkeypatch)
    code, out, err = run_cli(["simulate", "--help"])
    assert code == 0 and out.startswith("usage: svtjax simulate"), err
    assert err.count("\n") == 1 and err.startswith("svtjax: compilation cache disabled ("), err
    assert "SVTJAX_CACHE_DIR" in err


@pytest.mark.parametrize("error", [ValueError("boom"), TypeError("boom"), KeyError("boom"),
                                   ZeroDivisionError("boom")])
def test_a_failure_while_computing_keeps_its_traceback(error, monkeypatch):
    """Every ValueError, TypeError, LookupError and ArithmeticError was reported as bad input
    ("error: ...", exit status 2), bugs included: raised after the input is checked, it now
    propagates (the ``svtjax`` command prints its traceback and exits with status 1)."""
    def fail(*args, **kwargs):
        raise error

    monkeypatch.setenv("SVTJAX_NO_CACHE", "1")
    monkeypatch.setattr(simulate, "run_simulation", fail)
    with pytest.raises(type(error), match="boom"):
        run_cli(["simulate", "--trials", "5", "-m", "svt-s", "-e", "1"])


def test_input_checks_are_user_errors():
    """``with cli.user_input():`` marks a command's input checks: what they raise is one line
    (a UsageError); svtjax's own input errors and anything else pass through unchanged."""
    from svtjax import sweep

    with pytest.raises(cli.UsageError, match="^seed must be in range; got -1$") as info:
        with cli.user_input():
            raise ValueError("seed must be in range;\n  got -1")
    assert isinstance(info.value.__cause__, ValueError)
    for error in (sweep.SweepConfigError("bad key"), RuntimeError("bug"), OSError(28, "full")):
        with pytest.raises(type(error)):
            with cli.user_input():
                raise error
    with cli.user_input():  # nothing raised: nothing happens
        pass


def test_which_errors_are_the_users():
    from svtjax import _plugins, sweep
    from svtjax.datasets import DatasetNotAvailableError, DatasetVerificationError

    for err in (cli.UsageError("x"), OSError(13, "Permission denied"), FileNotFoundError("x"),
                sweep.SweepConfigError("x"), sweep.SweepLockedError("x"),
                _plugins.PluginError("x"), DatasetNotAvailableError("x"),
                DatasetVerificationError("x")):
        assert errors._user_error(err), err
    for err in (ValueError("x"), TypeError("x"), KeyError("x"), IndexError("x"),
                ZeroDivisionError("x"), OverflowError("x"), RuntimeError("x"),
                AssertionError("x")):
        assert not errors._user_error(err), err
