"""Download a dataset from its public home into a cache, verify it, and load it from there.

Cache layout (``cache_dir()/<name>/``): the downloaded file(s) as served, ``item_counts.csv``
(``item,count``, count descending) and ``record.json`` (urls, sizes, sha256 of every file, the
counts found, the published counts, whether they matched, svtjax version, UTC time). A dataset is
moved into place only after it has been read and verified, so a cache entry is always complete.
"""

from __future__ import annotations

import csv
import datetime
import hashlib
import json
import os
import pathlib
import re
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from svtjax.datasets import _readers, _registry, _shipped
from svtjax.datasets._types import (
    Dataset,
    DatasetNotAvailableError,
    DatasetVerificationError,
    DownloadError,
    ItemCounts,
)

__all__ = ["cache_root", "fetch", "load_cached", "verify_counts", "ENV_VAR"]

#: Environment variable that overrides the default cache directory.
ENV_VAR = "SVTJAX_DATA_DIR"
_RECORD = "record.json"
_COUNTS = "item_counts.csv"
_CHUNK = 1 << 20


def cache_root(path: str | os.PathLike | None = None) -> pathlib.Path:
    """The dataset cache: ``path``, else ``$SVTJAX_DATA_DIR``, else
    ``$XDG_CACHE_HOME/svtjax/datasets`` (``~/.cache/svtjax/datasets``)."""
    if path is not None:
        return pathlib.Path(path).expanduser()
    if os.environ.get(ENV_VAR):
        return pathlib.Path(os.environ[ENV_VAR]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return pathlib.Path(base).expanduser() / "svtjax" / "datasets"


def _file_name(url: str, index: int) -> str:
    name = os.path.basename(urllib.parse.urlparse(url).path) or f"download-{index}"
    name = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    return f"{index}-{name}" if index else name


def _as_url(url: str | os.PathLike) -> str:
    """A local path becomes a ``file://`` URL; anything else is used as given."""
    if isinstance(url, os.PathLike) or (os.path.exists(url) and "://" not in url):
        return pathlib.Path(url).resolve().as_uri()
    return url


def _download(url: str, dest: pathlib.Path, timeout: float) -> dict[str, Any]:
    from svtjax import __version__

    request = urllib.request.Request(url, headers={"User-Agent": f"svtjax/{__version__}"})
    digest, size = hashlib.sha256(), 0
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response, \
                open(dest, "wb") as out:
            while chunk := response.read(_CHUNK):
                digest.update(chunk)
                out.write(chunk)
                size += len(chunk)
    except urllib.error.HTTPError as err:
        raise DownloadError(f"downloading {url} failed: HTTP {err.code} {err.reason}") from err
    except (urllib.error.URLError, OSError, ValueError) as err:
        reason = getattr(err, "reason", err)
        raise DownloadError(f"downloading {url} failed ({reason}); fetch needs network access to "
                            "that host") from err
    return {"url": url, "file": dest.name, "bytes": size, "sha256": digest.hexdigest()}


def verify_counts(spec: _registry.Spec, counts: ItemCounts, *, what: str) -> dict[str, Any]:
    """Compares counts with ``spec``'s published ones; raises (strict) or warns (``"warn"``).

    Returns:
      ``{"verified": bool, "expected": {...}, "found": {...}}``.
    """
    expected = {"num_transactions": spec.num_transactions, "num_items": spec.num_items}
    found = {"num_transactions": counts.num_transactions, "num_items": counts.num_items}
    bad = {k: (expected[k], found[k]) for k in expected
           if expected[k] is not None and expected[k] != found[k]}
    if bad:
        detail = "; ".join(f"{k}: published {e:,}, found {f:,}" for k, (e, f) in bad.items())
        refs = "; ".join(p["ref"] for p in spec.published)
        message = (f"{what} does not match the published counts of {spec.name!r} ({detail}; "
                   f"published in: {refs})")
        if spec.verify == "strict":
            raise DatasetVerificationError(message + ". Check that the file is the complete "
                                           "original (one transaction per line).")
        warnings.warn(message + ". " + spec.notes, stacklevel=3)
    return {"verified": not bad, "expected": expected, "found": found}


def _write_counts(path: pathlib.Path, counts: ItemCounts) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["item", "count"])
        writer.writerows(zip(counts.items.tolist(), counts.counts.tolist()))


def _read_counts(path: pathlib.Path, num_transactions: int) -> ItemCounts:
    with open(path, encoding="utf-8") as f:
        rows = list(csv.reader(f))[1:]
    keys = [r[0] for r in rows if r]
    values = np.array([int(r[1]) for r in rows if r], dtype=np.int64)
    try:
        items = np.array([int(k) for k in keys], dtype=np.int64)
    except ValueError:
        items = np.array(keys, dtype=str)
    return ItemCounts(items, values, num_transactions)


def load_cached(spec: _registry.Spec, directory: str | os.PathLike | None = None) -> Dataset:
    """The dataset as :func:`fetch` stored it.

    Raises:
      DatasetNotAvailableError: it has not been fetched into that cache.
    """
    root = cache_root(directory)
    entry = root / spec.name
    if not (entry / _RECORD).is_file() or not (entry / _COUNTS).is_file():
        shipped = (f" (the package's copy is svtjax.datasets.load({spec.name!r}) without "
                   "from_cache)") if spec.shipped else ""
        raise DatasetNotAvailableError(
            f"dataset {spec.name!r} is not in the cache {str(root)!r}{shipped}. Download it "
            f"with svtjax.datasets.fetch({spec.name!r}) (needs network access to "
            f"{', '.join(spec.urls)}; cache_dir= or ${ENV_VAR} choose the cache), or, if you "
            f"have the file, use svtjax.datasets.from_transactions(path, name={spec.name!r}"
            f"{', format=' + repr(spec.format) if spec.format != 'fimi' else ''}).")
    record = json.loads((entry / _RECORD).read_text(encoding="utf-8"))
    counts = _read_counts(entry / _COUNTS, int(record["num_transactions"]))
    extra = {"origin": f"cache {str(entry)!r}", "files": record["files"],
             "verified": record["verified"], "fetched_at": record["fetched_at"],
             "imputed_items": 0}
    return _shipped.to_dataset(spec, counts, extra)


def fetch(name: str, cache_dir: str | os.PathLike | None = None,
          url: str | os.PathLike | Sequence[str | os.PathLike] | None = None, *,
          sha256: str | Sequence[str] | None = None, force: bool = False,
          timeout: float = 60.0) -> Dataset:
    """Downloads ``name`` from its public home, verifies it and caches its item counts.

    A dataset already in the cache is loaded from there without touching the network unless
    ``force``. The download is read with the dataset's transaction reader, its numbers of
    transactions and distinct items are checked against the published ones (a mismatch raises,
    except for ``aol`` whose preprocessing is unpublished: it warns), and the sha256 of every
    downloaded file is recorded in ``record.json`` (and compared with the sha256 of the copy the
    package's counts were derived from, where known: a difference is a warning).

    Args:
      name: a real dataset (``svtjax.datasets.names()``, not ``zipf``/``binary``).
      cache_dir: the cache root (default: :func:`svtjax.datasets.cache_dir`).
      url: replaces the registered url(s): a mirror, or a local file (path or ``file://`` URL)
        to verify and cache a copy you already have.
      sha256: expected sha256 per file; a mismatch raises :class:`DatasetVerificationError`.
      force: download again even if cached.
      timeout: seconds per network operation.

    Returns:
      The :class:`Dataset` read from the cache.

    Raises:
      DownloadError: no network, HTTP error, bad URL.
      DatasetVerificationError: counts or ``sha256`` differ from the expected ones.
    """
    spec = _registry.spec(name)
    root = cache_root(cache_dir)
    entry = root / spec.name
    if not force and (entry / _RECORD).is_file():
        return load_cached(spec, root)
    if url is None:
        urls = spec.urls
    else:
        urls = tuple(_as_url(u) for u in ([url] if isinstance(url, (str, os.PathLike)) else url))
    if not urls:
        raise ValueError(f"no url for dataset {spec.name!r}; pass url=")
    pins = None if sha256 is None else ((sha256,) if isinstance(sha256, str) else tuple(sha256))
    if pins is not None and len(pins) != len(urls):
        raise ValueError(f"sha256 needs one digest per url ({len(urls)}); got {len(pins)}")
    root.mkdir(parents=True, exist_ok=True)
    staging = pathlib.Path(tempfile.mkdtemp(prefix=f".{spec.name}-", dir=root))
    try:
        files = [_download(u, staging / _file_name(u, i), timeout) for i, u in enumerate(urls)]
        for i, f in enumerate(files):
            if pins is not None and f["sha256"] != pins[i].lower():
                raise DatasetVerificationError(
                    f"sha256 of {f['url']} is {f['sha256']}, expected {pins[i]}")
            known = spec.known_sha256[i] if url is None and i < len(spec.known_sha256) else None
            f["known_sha256"] = known
            if known is not None and f["sha256"] != known:
                warnings.warn(f"{f['url']} differs from the copy svtjax's counts were derived "
                              f"from (sha256 {f['sha256']}, known {known}); its counts are "
                              "verified next", stacklevel=2)
        counts = _readers.load_transactions([staging / f["file"] for f in files],
                                            format=spec.format)
        check = verify_counts(spec, counts, what=f"download of {', '.join(urls)}")
        from svtjax import __version__

        record = {"name": spec.name, "format": spec.format, "files": files,
                  "num_transactions": counts.num_transactions, "num_items": counts.num_items,
                  "published": [dict(p) for p in spec.published], **check,
                  "fetched_at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                  "svtjax_version": __version__}
        _write_counts(staging / _COUNTS, counts)
        (staging / _RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        if entry.exists():
            shutil.rmtree(entry)
        os.replace(staging, entry)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return load_cached(spec, root)
