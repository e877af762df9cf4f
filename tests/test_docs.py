"""The documentation site: its guides' code runs as written, its sweep TOML is valid and
complete, and it builds with warnings as errors, with an API reference generated from the
docstrings and a command-line reference that lists every flag of every parser.

Convention: a ```python block of ``docs/**/*.md`` is executed here (all blocks of a page in
order, in one fresh interpreter, from the repository's root); a ```py block is an excerpt that
is shown, not run.
"""

import importlib.util
import pathlib
import re
import subprocess
import sys

import pytest

from tests.conftest import subprocess_env

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _python_blocks(page: pathlib.Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", page.read_text(), flags=re.S | re.M)


PAGES = sorted(p for p in DOCS.rglob("*.md") if _python_blocks(p))


def test_every_guide_with_code_is_collected():
    names = {p.relative_to(DOCS).as_posix() for p in PAGES}
    assert {"guides/first-simulation.md", "guides/sweeps.md", "guides/own-mechanism.md",
            "guides/exact.md", "guides/audits.md", "guides/mechanisms.md"} <= names


_RUNNER = r"""
import pathlib, re, sys
for path in sys.argv[1:]:
    page = pathlib.Path(path)
    blocks = re.findall(r"^```python\n(.*?)^```", page.read_text(), flags=re.S | re.M)
    exec(compile("\n\n".join(blocks), str(page), "exec"), {"__name__": "__main__"})
    print(f"== {page.name} ran", flush=True)
"""


def test_guides_code_runs():
    """Every ```python block of every page, page by page in a fresh namespace, in one fresh
    interpreter (the pages may register a mechanism or switch on float64 without touching the
    test process; one interpreter imports JAX once). Pages that switch on float64 run last, so
    the others run in the default float32 a reader gets."""
    pages = sorted(PAGES, key=lambda p: "jax_enable_x64" in p.read_text())
    out = subprocess.run([sys.executable, "-c", _RUNNER, *map(str, pages)], cwd=ROOT,
                         capture_output=True, text=True, env=subprocess_env(), timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    ran = re.findall(r"^== (\S+) ran$", out.stdout, flags=re.M)
    assert ran == [p.name for p in pages]


def _sweeps_toml() -> str:
    text = (DOCS / "guides" / "sweeps.md").read_text()
    return text.split("```toml\n", 1)[1].split("```", 1)[0]


def test_sweeps_guide_config_is_valid(tmp_path):
    from svtjax import sweep

    path = tmp_path / "eps-c.toml"
    path.write_text(_sweeps_toml())
    config = sweep.load_config(path)
    assert len(sweep.expand(config)) == 3 * 5 * 3 * 3  # datasets x eps x c x (2 SVT-S + EM)
    assert "135 points" in (DOCS / "guides" / "sweeps.md").read_text()


def test_sweeps_guide_toml_reference_names_every_key():
    """The TOML reference has a row for every [sweep] key the loader accepts, a section for
    every top-level table and the keys of exact_accuracy."""
    from svtjax import sweep
    from svtjax.sweep import config

    text = (DOCS / "guides" / "sweeps.md").read_text()
    reference = text.split("## TOML reference", 1)[1].split("\n## ", 1)[0]
    rows = set(re.findall(r"^\| `(\w+)` \|", reference, flags=re.M))
    assert rows == set(config._SWEEP_KEYS)
    for table in config._TOP_KEYS:
        assert f"### `[{table}]`" in reference or f"### `[[{table}]]`" in reference, table
    for key in sweep.EXACT_ACCURACY_KEYS:
        assert f"`{key}`" in reference, key


def _hooks():
    spec = importlib.util.spec_from_file_location("svtjax_docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_build_strict(tmp_path):
    """``mkdocs build --strict`` (warnings are errors: broken links, objects mkdocstrings cannot
    find); the CLI page holds every option of every parser, the API pages the docstrings."""
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(module.split(".")[0]) is None or (
                "." in module and importlib.util.find_spec(module) is None):
            pytest.skip(f"{module} is not installed: pip install -e '.[docs]' builds the docs")
    site = tmp_path / "site"
    out = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(ROOT / "mkdocs.yml"), "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env=subprocess_env(NO_MKDOCS_2_WARNING="1"))
    assert out.returncode == 0, out.stderr[-5000:]

    cli = (site / "reference" / "cli" / "index.html").read_text()
    flags = 0
    for command, parser in _hooks().parsers():
        assert f"<code>{command}</code>" in cli, command
        for action in parser._actions:
            for flag in action.option_strings:
                assert f"<code>{flag}" in cli, f"{command} {flag}"
                flags += 1
    assert flags > 60
    assert "%%" not in cli

    simulate = importlib.import_module("svtjax.simulate").simulate
    api = (site / "reference" / "api" / "core" / "index.html").read_text()
    first_line = simulate.__doc__.strip().splitlines()[0]
    assert first_line.split("``")[0] in api
    for page in ("core", "mechanisms", "privacy", "data", "sweep", "exact", "audit", "testing"):
        html = (site / "reference" / "api" / page / "index.html").read_text()
        assert html.count("doc doc-heading") >= 10, page  # objects rendered from docstrings


def test_guides_commands_use_existing_flags():
    """Every ``svtjax SUBCOMMAND ... --flag`` written in the README or a guide (code blocks and
    inline code) names a flag that subcommand's parser has."""
    parsers = dict(_hooks().parsers())
    options = {command: {flag for action in parser._actions for flag in action.option_strings}
               for command, parser in parsers.items()}
    texts = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted(DOCS.rglob("*.md"))]
    checked = 0
    for path in texts:
        for line in path.read_text().splitlines():
            for match in re.finditer(r"svtjax (list|simulate|sweep|reproduce|audit|bench)\b"
                                     r"([^`#]*)", line):
                command = f"svtjax {match.group(1)}"
                for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", match.group(2)):
                    assert flag in options[command] | {"--plugin"}, f"{path.name}: {line}"
                    checked += 1
    assert checked > 20
