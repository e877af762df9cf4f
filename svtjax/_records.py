"""A sweep's point records (``OUT/points/<id>.json``), checked before they are reused.

A record is reused by a resumed sweep only when it is exactly what this sweep would have
written for the point: the same id, a seed equal to the point's, and statistics for every
metric of the config over exactly ``trials`` trials. Anything else (a truncated file, ``[]``,
``null``, missing or malformed statistics, a count that is not the trial count) is reported and
the point is recomputed: a stored number is never trusted on its name alone.
"""

from __future__ import annotations

import json
import math
import pathlib
from typing import Any, Optional, Sequence

__all__ = ["read", "problem"]


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def problem(rec: Any, pid: str, *, seed: int, metrics: Sequence[str], trials: int,
            quantiles: Sequence[float] = ()) -> Optional[str]:
    """Why ``rec`` cannot be reused as point ``pid`` (None when it can).

    Args:
      rec: the parsed JSON record.
      pid: the point's id; seed: its seed.
      metrics: the config's metrics (each needs ``[n, mean, m2]`` statistics).
      trials: the trial count each statistic must cover.
      quantiles: the config's quantile levels (each metric then needs one value per level).
    """
    if not isinstance(rec, dict):
        return f"not a JSON object ({type(rec).__name__})"
    if rec.get("point_id") != pid:
        return f"its point_id {rec.get('point_id')!r} is not the file's name"
    if rec.get("seed") != seed:
        return f"its seed {rec.get('seed')!r} is not the point's ({seed})"
    stats = rec.get("stats")
    if not isinstance(stats, dict):
        return "no 'stats' object"
    for m in metrics:
        entry = stats.get(m)
        if not (isinstance(entry, list) and len(entry) == 3 and all(map(_number, entry))):
            return f"no [n, mean, m2] statistics for metric {m!r}"
        n, mean, m2 = entry
        if n != trials:
            return f"metric {m!r} covers {n!r} trials, not {trials}"
        if math.isinf(mean) or not (m2 >= 0 or math.isnan(m2)) or math.isinf(m2):
            return f"metric {m!r} has impossible statistics (mean {mean!r}, m2 {m2!r})"
    if quantiles:
        q = rec.get("quantiles")
        if not isinstance(q, dict) or any(
                not (isinstance(q.get(m), list) and len(q[m]) == len(quantiles)
                     and all(map(_number, q[m]))) for m in metrics):
            return f"no quantiles {list(quantiles)} for every metric"
    for key in ("seconds", "threshold"):
        if not _number(rec.get(key)):
            return f"its {key} {rec.get(key)!r} is not a number"
    return None


def read(path: pathlib.Path, pid: str, **expect) -> tuple[Optional[dict], Optional[str]]:
    """``(record, None)`` for a reusable record at ``path``; ``(None, None)`` when there is no
    file; ``(None, why)`` when there is one that cannot be reused (see :func:`problem`)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError) as err:
        return None, f"cannot be read ({getattr(err, 'strerror', None) or err})"
    try:
        rec = json.loads(text)
    except (ValueError, RecursionError) as err:
        return None, f"is not valid JSON ({' '.join(str(err).split())})"
    why = problem(rec, pid, **expect)
    return (None, why) if why else (rec, None)
