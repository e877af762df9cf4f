"""svt-s, n = 10,000 queries × 1,000 trials: JAX ``simulate`` vs the numpy reference loop.

Prints query evaluations per second of both (and of the numba / vectorised-numpy baselines and
the RNG floor), their ratios and the compile time, and writes a JSON record (default directory
``benchmarks/out/``, which git ignores; pass ``--out benchmarks/results`` to keep it). Extra
arguments go to ``svtjax bench`` (see ``python -m svtjax.bench --help``); the full multi-size,
every-mechanism benchmark is ``svtjax bench`` itself.

    python benchmarks/bench_simulate.py [--mode fixed] [--repeats 5] [...]
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from svtjax import bench  # noqa: E402

DEFAULTS = {"--only": ["svt-s"], "--size": ["10000x1000"], "--out": [str(HERE / "out")],
            "--no-cache-check": [], "--no-memory-check": []}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    for option, values in DEFAULTS.items():  # a default applies unless the option is given
        if option not in argv:
            argv += [option, *values]
    return bench.main(argv)


if __name__ == "__main__":
    sys.exit(main())
