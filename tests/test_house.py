"""The package's shape, computed: modules small enough to read, functions short enough to follow,
one host loop. A change that grows a module past the bound splits it instead."""

import ast
import inspect
import pathlib

import svtjax
from svtjax import _driver

ROOT = pathlib.Path(svtjax.__file__).parent
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def _modules():
    return sorted(ROOT.rglob("*.py"))


def _functions(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            yield node, node.end_lineno - first + 1


def test_no_module_over_600_lines_and_no_function_over_80():
    """Every module of ``svtjax/`` at most 600 lines and every function (decorators, docstring
    and nested functions included) at most 80."""
    long_modules, long_functions = [], []
    for path in _modules():
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(ROOT.parent)
        if text.count("\n") > MAX_MODULE_LINES:
            long_modules.append(f"{rel}: {text.count(chr(10))} lines")
        for node, lines in _functions(ast.parse(text)):
            if lines > MAX_FUNCTION_LINES:
                long_functions.append(f"{rel}:{node.lineno} {node.name}: {lines} lines")
    assert not long_modules, long_modules
    assert not long_functions, long_functions


def test_the_compiled_chunk_has_one_static_argument_the_plan():
    tree = ast.parse(pathlib.Path(inspect.getsourcefile(_driver)).read_text(encoding="utf-8"))
    (fn,) = [node for node in tree.body
             if isinstance(node, ast.FunctionDef) and node.name == "run_chunk"]
    static = [ast.literal_eval(k.value) for d in fn.decorator_list if isinstance(d, ast.Call)
              for k in d.keywords if k.arg in ("static_argnames", "static_argnums")]
    assert static == [("plan",)], static
    params = inspect.signature(_driver.run_chunk).parameters
    assert [name for name, p in params.items() if p.kind is p.KEYWORD_ONLY] == ["plan"]
    plan = _driver.Plan(chunk=4, shuffle=False)
    assert hash(plan) == hash(_driver.Plan(chunk=4, shuffle=False))  # hashable, by value


def _calls(tree, name):
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call) and (
        getattr(node.func, "attr", None) == name or getattr(node.func, "id", None) == name)]


def test_only_the_driver_loops_over_chunks():
    """The compiled chunk is called in one place, the loop :func:`svtjax._driver.chunks`:
    ``simulate`` and the sweep consume its outputs, and the audits and the command line run
    trials through ``simulate`` and ``sweep`` only (no other module calls ``run_chunk``)."""
    callers = []
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if _calls(tree, "run_chunk"):
            callers.append(path.relative_to(ROOT).as_posix())
    assert callers == ["_driver.py"], callers
