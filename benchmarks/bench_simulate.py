"""The headline alone: svt-s, n = 10,000 queries × 1,000 trials, against the numba baselines.

Prints query evaluations per second of the svtjax engines, the numba loop (one thread and the
process pool), numpy and the RNG floor, their ratios and the compile time, and writes a JSON
record (default directory ``benchmarks/out/``, which git ignores; pass
``--out benchmarks/results`` to keep it). Extra arguments go to ``svtjax bench`` (see
``python benchmarks/harness.py --help``); the full multi-size, every-mechanism benchmark is
``svtjax bench`` itself.

    python benchmarks/bench_simulate.py [--mode fixed] [--repeats 5] [...]
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from benchmarks import harness  # noqa: E402

DEFAULTS = {"--only": ["svt-s"], "--size": ["10000x1000"], "--out": [str(HERE / "out")],
            "--no-mechanisms": [], "--no-rng-floors": [], "--no-cache-check": [],
            "--no-memory-check": []}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    for option, values in DEFAULTS.items():  # a default applies unless the option is given
        if option not in argv:
            argv += [option, *values]
    return harness.main(argv)


if __name__ == "__main__":
    sys.exit(main())
