"""Readers that turn transaction files into item support counts.

Formats (``format=``):

* ``"fimi"`` — FIMI / SPMF transaction databases: one transaction per line, item ids separated by
  blanks (commas and semicolons are accepted too, for CSV copies such as the BMS-POS.csv Ding'19's
  scripts download). Blank lines and SPMF comment/metadata lines (starting with ``#``, ``%`` or
  ``@``) are not transactions. An item listed twice in one transaction counts once.
* ``"libsvm"`` — LIBSVM sparse rows ``label idx:value ...``: one transaction per row, items are
  the indices with a non-zero value (Adult as a9a).
* ``"pairs"`` — one ``transaction item`` pair per line (KDD Cup 2000 BMS-POS.dat).
* ``"aol"`` — the AOL query log (tab-separated ``AnonID Query QueryTime ItemRank ClickURL`` with a
  header line): one transaction per user, items are the distinct blank-separated keywords of the
  user's queries; ``-`` (no query) is skipped. Lines of a user must be contiguous, as they are in
  the released files (sorted by AnonID); a user seen again later is warned about.

Any file may be gzip-compressed (detected from its first bytes, not its name); a zip archive is
read member by member (``.txt``/``.dat``/``.csv``/``.gz`` members, READMEs skipped). Several
files are read as one database (their transactions are concatenated).
"""

from __future__ import annotations

import collections
import gzip
import io
import os
import re
import warnings
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Union

import numpy as np

from svtjax.datasets._types import ItemCounts

__all__ = ["FORMATS", "load_transactions", "count_items"]

PathLike = Union[str, "os.PathLike[str]"]

FORMATS = ("fimi", "libsvm", "pairs", "aol")

_SPLIT = re.compile(r"[\s,;]+")
_COMMENT = ("#", "%", "@")
_MEMBER_SUFFIXES = (".txt", ".dat", ".csv", ".gz", ".data")


def _text(raw: IO[bytes]) -> io.TextIOBase:
    """Wraps a binary stream as text, gunzipping when it starts with the gzip magic."""
    buffered = io.BufferedReader(raw) if not hasattr(raw, "peek") else raw
    if buffered.peek(2)[:2] == b"\x1f\x8b":
        buffered = gzip.GzipFile(fileobj=buffered)
    return io.TextIOWrapper(buffered, encoding="utf-8", errors="replace", newline=None)


def _streams(path: PathLike) -> Iterator[io.TextIOBase]:
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such transaction file: {path!r}")
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            members = sorted(m for m in archive.namelist()
                             if m.lower().endswith(_MEMBER_SUFFIXES) and not m.endswith("/")
                             and "readme" not in os.path.basename(m).lower())
            if not members:
                raise ValueError(f"zip archive {path!r} holds no .txt/.dat/.csv/.gz member")
            for member in members:
                with archive.open(member) as raw, _text(raw) as text:
                    yield text
        return
    with open(path, "rb") as raw, _text(raw) as text:
        yield text


def _lines(paths: Sequence[PathLike]) -> Iterator[str]:
    for path in paths:
        for stream in _streams(path):
            yield from stream


def _fimi(lines: Iterable[str]) -> tuple[collections.Counter, int]:
    counts: collections.Counter = collections.Counter()
    transactions = 0
    for line in lines:
        line = line.strip()
        if not line or line.startswith(_COMMENT):
            continue
        items = set(_SPLIT.split(line))
        items.discard("")
        if items:
            counts.update(items)
            transactions += 1
    return counts, transactions


def _libsvm(lines: Iterable[str]) -> tuple[collections.Counter, int]:
    counts: collections.Counter = collections.Counter()
    transactions = 0
    for number, line in enumerate(lines, 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        items = set()
        for token in line.split()[1:]:
            index, sep, value = token.partition(":")
            if not sep:
                raise ValueError(f"libsvm line {number}: expected 'index:value', got {token!r}")
            if float(value) != 0.0:
                items.add(index)
        counts.update(items)
        transactions += 1
    return counts, transactions


def _pairs(lines: Iterable[str]) -> tuple[collections.Counter, int]:
    seen: set[tuple[str, str]] = set()
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith(_COMMENT):
            continue
        fields = _SPLIT.split(line)
        if len(fields) != 2:
            raise ValueError(f"pairs line {number}: expected 'transaction item', got {line!r}")
        seen.add((fields[0], fields[1]))
    counts = collections.Counter(item for _, item in seen)
    return counts, len({tid for tid, _ in seen})


def _aol(lines: Iterable[str]) -> tuple[collections.Counter, int]:
    counts: collections.Counter = collections.Counter()
    users: set[str] = set()
    current, items = None, set()
    reappeared = 0

    def flush():
        nonlocal reappeared
        if current is None or not items:
            return
        if current in users:
            reappeared += 1
        users.add(current)
        counts.update(items)

    for line in lines:
        fields = line.rstrip("\r\n").split("\t")
        if len(fields) < 2 or fields[0] == "AnonID":
            continue
        user, query = fields[0], fields[1].strip()
        if user != current:
            flush()
            current, items = user, set()
        if query and query != "-":
            items.update(query.lower().split())
    flush()
    if reappeared:
        warnings.warn(f"aol reader: {reappeared} users' lines were not contiguous; their "
                      "keywords may be counted more than once", stacklevel=3)
    return counts, len(users)


_READERS = {"fimi": _fimi, "libsvm": _libsvm, "pairs": _pairs, "aol": _aol}


def count_items(counts: collections.Counter, num_transactions: int) -> ItemCounts:
    """Sorts a counter into :class:`ItemCounts` (count descending, then item id)."""
    keys = list(counts)
    try:
        as_int = [int(k) for k in keys]
        integer = len(set(as_int)) == len(keys)
    except ValueError:
        integer = False
    items = np.asarray(as_int, dtype=np.int64) if integer else np.asarray(keys, dtype=str)
    values = np.fromiter((counts[k] for k in keys), dtype=np.int64, count=len(keys))
    order = np.lexsort((items, -values)) if len(keys) else np.zeros(0, dtype=np.int64)
    return ItemCounts(items[order], values[order], int(num_transactions))


def load_transactions(path: PathLike | Sequence[PathLike], *, format: str = "fimi"
                      ) -> ItemCounts:
    """Reads a transaction database and counts, for each item, the transactions containing it.

    Args:
      path: a file (plain, gzip or zip), or a sequence of files read as one database.
      format: ``"fimi"`` (default; also SPMF transaction files and comma-separated baskets),
        ``"libsvm"``, ``"pairs"`` or ``"aol"`` — see the module docstring.

    Returns:
      :class:`ItemCounts` sorted by count (descending), then item id.

    Raises:
      FileNotFoundError: a path does not exist.
      ValueError: unknown ``format``, a malformed line, or a file without transactions.
    """
    if format not in _READERS:
        raise ValueError(f"unknown transaction format {format!r}; formats are: "
                         f"{', '.join(FORMATS)}")
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    if not paths:
        raise ValueError("load_transactions needs at least one file")
    counts, num_transactions = _READERS[format](_lines(paths))
    if num_transactions == 0:
        raise ValueError(f"no transactions found in {', '.join(map(os.fspath, paths))} "
                         f"(format={format!r})")
    return count_items(counts, num_transactions)
