"""The README's Python example runs as written."""

import pathlib
import re

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


def test_sweeps_section_config_is_valid(tmp_path):
    from svtjax import plot, sweep

    text = README.read_text().split("## Sweeps", 1)[1]
    toml = text.split("```toml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "eps-c.toml"
    path.write_text(toml)
    config = sweep.load_config(path)
    assert len(sweep.expand(config)) == 3 * 5 * 3 * 3  # datasets x eps x c x (2 SVT-S + EM)
    assert callable(sweep.run) and callable(plot.utility_curves)
    assert "srun svtjax sweep" in text and "--distributed" in text
