"""A sweep's result tables on disk: written with a schema, read back by it.

``results.csv`` (and ``results.parquet`` with pyarrow) holds one row per point and metric:
the parameters, the statistics of the metric, the seconds and the point's id. A sweep with
``exact = true`` writes its exact expected metrics once per point, in ``exact.csv`` (and
``exact.parquet``): ``point_id`` joins the two. ``results.json`` records the type of every
column of both tables (``schema``), so that :func:`read` converts each cell by its column's
type: a label ``nan`` stays a string and an ε column stays a number.

Statistics are written at the precision of the run's dtype (the shortest decimal that gives
back the same float32 in a float32 run: ``0.98``, not ``0.9799999952316284``); exact values,
computed in float64, are written in full.
"""

from __future__ import annotations

import csv
import json
import pathlib
from typing import Any, Callable, Optional, Sequence

import numpy as np

__all__ = ["schema", "write", "read", "STATISTICS"]

STATISTICS = ("threshold", "mean", "std", "se", "ci_low", "ci_high")
"""Columns computed from the run's per-trial values (written at the run's precision)."""

RESULTS, EXACT = "results", "exact"


def _kind(values: Sequence[Any]) -> str:
    kinds = {type(v) for v in values if v is not None}
    if not kinds:
        return "float"  # an all-empty column: exact values no point has
    if kinds == {bool}:
        return "bool"
    if kinds == {int}:
        return "int"
    if kinds <= {int, float}:
        return "float"
    return "str"


def schema(rows: Sequence[dict]) -> dict[str, str]:
    """Column -> ``"int"``, ``"float"``, ``"bool"`` or ``"str"`` (empty cells are None)."""
    columns = list(dict.fromkeys(k for r in rows for k in r))
    return {c: _kind([r.get(c) for r in rows]) for c in columns}


def _cell(value: Any, column: str, float32: bool, quantile: Callable[[str], bool]) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if float32 and (column in STATISTICS or quantile(column)):
            return str(np.float32(value))
        return repr(value)
    return str(value)


def _split(rows: Sequence[dict], quantile: Callable[[str], bool]
           ) -> tuple[list[dict], list[dict]]:
    """(rows without exact columns, one row of exact values per point)."""
    plain, exact = [], {}
    for r in rows:
        cells = {k: v for k, v in r.items() if k.startswith("exact_")}
        plain.append({k: v for k, v in r.items() if not k.startswith("exact_")})
        if cells and r["point_id"] not in exact:
            keep = {k: v for k, v in r.items() if not k.startswith("exact_") and k not in
                    ("metric", "mean", "std", "se", "ci_low", "ci_high", "trials", "seconds")
                    and not quantile(k)}
            exact[r["point_id"]] = {**keep, **cells}
    return plain, list(exact.values())


def write(rows: Sequence[dict], outdir: pathlib.Path, *, float32: bool,
          atomic_write: Callable, quantile: Callable[[str], bool],
          empty_columns: Sequence[str]) -> tuple[list[str], dict]:
    """Writes the tables; returns (the files written, their schema by file name)."""
    plain, exact = _split(rows, quantile)
    files, schemas = [], {}
    for stem, table in ((RESULTS, plain), (EXACT, exact)):
        if stem == EXACT and not table:
            continue
        fields = list(table[0]) if table else list(empty_columns)
        path = outdir / f"{stem}.csv"

        def write_csv(f, table=table, fields=fields):
            w = csv.writer(f, lineterminator="\n")
            w.writerow(fields)
            for r in table:
                w.writerow([_cell(r.get(k), k, float32, quantile) for k in fields])

        atomic_write(path, write_csv)
        files.append(str(path))
        schemas[path.name] = schema(table) if table else {k: "str" for k in fields}
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            continue
        arrow = pa.Table.from_pylist([{k: r.get(k) for k in fields} for r in table])
        parquet = outdir / f"{stem}.parquet"
        atomic_write(parquet, lambda tmp, arrow=arrow: pq.write_table(arrow, tmp), to_path=True)
        files.append(str(parquet))
    return files, schemas


_CONVERT = {"int": int, "float": float, "bool": lambda s: s == "True", "str": str}


def _typed(rows: list[dict], types: dict[str, str]) -> list[dict]:
    out = []
    for r in rows:
        row = {}
        for k, v in r.items():
            kind = types.get(k, "str")
            if isinstance(v, str) and kind != "str":
                row[k] = None if v == "" else _CONVERT[kind](v)
            else:
                row[k] = v
        out.append(row)
    return out


def _guess(rows: list[dict]) -> dict[str, str]:
    """Column types of a table without a schema (a CSV from elsewhere), column by column: a
    column is numeric only if every non-empty cell of it is."""
    types = {}
    for col in (rows[0] if rows else {}):
        cells = [r[col] for r in rows if r[col] not in ("", None)]
        for kind, parse in (("int", int), ("float", float)):
            try:
                [parse(c) for c in cells]
            except (TypeError, ValueError):
                continue
            types[col] = kind if cells else "float"
            break
        else:
            types[col] = "bool" if cells and set(cells) <= {"True", "False"} else "str"
    return types


def _load(path: pathlib.Path) -> list[dict]:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def read(path: str | pathlib.Path) -> list[dict]:
    """Rows of a ``results.csv`` / ``results.parquet`` (or the directory holding one), each
    cell converted by the column types recorded in ``results.json`` (by column otherwise), with
    the exact columns of ``exact.csv`` / ``exact.parquet`` joined back by ``point_id``."""
    path = pathlib.Path(path)
    if path.is_dir():
        path = path / "results.csv"
    sidecar = path.parent / "results.json"
    schemas: Optional[dict] = None
    try:
        schemas = json.loads(sidecar.read_text(encoding="utf-8")).get("schema")
    except (OSError, ValueError, AttributeError):
        schemas = None
    rows = _load(path)
    csv_name = path.with_suffix(".csv").name
    types = (schemas or {}).get(csv_name) if isinstance(schemas, dict) else None
    rows = _typed(rows, types if isinstance(types, dict) else _guess(rows))
    exact_path = path.with_name(EXACT + path.suffix)
    if exact_path.exists():
        exact = _load(exact_path)
        types = (schemas or {}).get(EXACT + ".csv") if isinstance(schemas, dict) else None
        exact = _typed(exact, types if isinstance(types, dict) else _guess(exact))
        by_id = {r["point_id"]: {k: v for k, v in r.items() if k.startswith("exact_")}
                 for r in exact}
        rows = [{**r, **by_id.get(r["point_id"], {})} for r in rows]
    return rows
