"""The README's Python example runs as written."""

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no python example"
    for code in blocks:
        exec(compile(code, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    assert "Theorem 7" in printed


def test_readme_quick_start_has_two_commands():
    commands = _quick_start_commands()
    assert len(commands) == 2
    ci = (README.parent / ".ci" / "run").read_text()
    assert commands[1] in ci  # CI runs the README's test command
    assert "--durations=20" in commands[1]  # the slowest tests are listed in CI's log


def _quick_start_commands():
    text = README.read_text()
    quick = text.split("## Quick start", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    return [line for line in quick.strip().splitlines() if line.strip()]


def test_quick_start_runs_the_default_sweep_the_readme_describes():
    import jax

    from svtjax import sweep

    first = _quick_start_commands()[0]
    assert first.endswith("&& svtjax sweep")  # the built-in default config
    config = sweep.load_config("default")
    points = sweep.expand(config)
    text = README.read_text()
    assert f"{len(points)} grid points" in text
    assert config.trials == 1000 and "1,000 trials per point" in text
    structures = {jax.tree_util.tree_structure(p.build()) for p in points}
    assert "five compilations" in text and len(structures) == 5
    assert config.plot == {"x": "epsilon", "y": "f1"} and "f1_vs_epsilon.png" in text


def test_readme_is_short_and_undated():
    """The README is the front door (issue 61): at most 10,000 characters, and no commit hashes,
    dated timings or benchmark record names, which belong in benchmarks/RESULTS.md."""
    text = README.read_text()
    assert len(text) <= 10_000, len(text)
    assert not re.findall(r"\b20\d\d-\d\d-\d\d", text)  # dated numbers and record names
    prose = re.sub(r"https?://\S+", "", text)  # a link's DOI or hash is no commit
    assert not re.findall(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b", prose)


def test_readme_mechanism_table_lists_every_builtin_mechanism():
    from svtjax import mechanisms

    table = README.read_text().split("## Mechanisms", 1)[1].split("\n## ", 1)[0]
    rows = {line.split("|")[1].strip().strip("`") for line in table.splitlines()
            if line.startswith("| `")}
    builtin = {name for name, cls in mechanisms.registry().items()
               if cls.__module__.startswith("svtjax.")}
    assert rows == builtin


def test_readme_links_resolve():
    """Every relative link of the README names a file of the repository."""
    for target in re.findall(r"\]\(([^)#]+)\)", README.read_text()):
        if "://" not in target:
            assert (README.parent / target).exists(), target


def test_the_repository_stands_alone():
    """No tracked file points to files outside the repository (the development notes and paper
    texts beside a checkout are not part of it): papers are cited by authors, venue and
    section, and the docs by their path in docs/."""
    import subprocess

    root = README.parent
    listed = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    names = listed.stdout.split()
    words = ["DESIGN" + ".md", "STYLE" + ".md", "../" + "shared", "seeds" + "/0"]
    found = []
    for name in names:
        path = root / name
        if path.suffix not in (".py", ".md", ".toml", ".cc", ".yml", ".cff", ".txt", ".cfg"):
            continue
        if not path.exists():  # deleted in the working tree, not yet committed
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [f"{name}: {w}" for w in words if w in text]
    assert not found, found
