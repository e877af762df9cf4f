"""Accuracy and run time of the numerical correction term (Liu et al. 2024, Algorithms 3-4).

For Table 5's settings (c = 50, α = 0, exponential query noise with mean cΔ/ε2 and Laplace
threshold noise with the (2c)^(2/3) split, the ones that reproduce Table 5's Mean row) and
k ∈ {10, 200}, compares the FFT r^op at mesh m ∈ {256, ..., 262144} with the closed-form r^op
(``svtjax.correction.optimal(method="closed")``) and times both (best of 5 calls, after one
warm-up). Writes a JSON record (schema ``svtjax-bench-correction/1``) to benchmarks/results/.

    python benchmarks/bench_correction.py [--out DIR]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import platform
import socket
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from svtjax import correction  # noqa: E402
from svtjax.noise import Exponential, Laplace  # noqa: E402

MESHES = (256, 1024, 4096, 16384, 65536, 262144)


def _best(fn, repeats=5):
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - t0)
    return value, min(times)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    c = 50
    w = (2 * c) ** (2 / 3)
    rows = []
    for eps in (0.1, 1.0):
        e1, e2 = eps / (1 + w), eps * w / (1 + w)
        q, t = Exponential(c / e2), Laplace(1 / e1)
        for k in (10, 200):
            closed, t_closed = _best(lambda: correction.optimal(q, t, k, method="closed"))
            for m in MESHES:
                fft, t_fft = _best(lambda: correction.optimal(q, t, k, method="fft", mesh=m))
                rows.append({"epsilon": eps, "k": k, "mesh": m, "r_closed": closed,
                             "r_fft": fft, "rel_error": abs(fft - closed) / closed,
                             "seconds_fft": t_fft, "seconds_closed": t_closed})
                print(f"ε={eps:g} k={k:3d} m={m:6d}: r_fft={fft:.6f} r_closed={closed:.6f} "
                      f"rel.err={abs(fft - closed) / closed:.2e} fft {t_fft * 1e3:.2f} ms, "
                      f"closed {t_closed * 1e3:.2f} ms")
    now = _dt.datetime.now(_dt.timezone.utc)
    record = {"schema": "svtjax-bench-correction/1", "created": now.isoformat(timespec="seconds"),
              "machine": {"host": socket.gethostname(), "platform": platform.platform(),
                          "python": platform.python_version()},
              "default_mesh": correction.DEFAULT_MESH, "tail": correction.DEFAULT_TAIL,
              "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"correction-{socket.gethostname()}-{now:%Y-%m-%dT%H%M%S}.json"
    path.write_text(json.dumps(record, indent=2))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
