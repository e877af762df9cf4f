"""svtjax.datasets: shipped counts against published ones, the T40I10D100K completion, threshold
rules, transaction readers, and fetch() against a local HTTP server (no external network)."""

import dataclasses
import functools
import gzip
import hashlib
import http.server
import importlib.resources
import json
import pathlib
import threading
import warnings
import zipfile

import numpy as np
import pytest

from svtjax import datasets
from svtjax.datasets import _registry

SHARED = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"

# name: (transactions, distinct items, item occurrences, most frequent item, its count,
#        sha256 of the shipped count file as recorded in shared/data/<dir>/SOURCE.md)
PUBLISHED = {
    "adult": (48_842, 123, 677_323, 76, 46_560,
              "556664d0f7eef682e83f0eb2303af6cb644d8fbb45e846bcdae56b5d17199109"),
    "retail": (88_162, 16_470, 908_576, 39, 50_675,
               "4f7cce720f091cd02bbff0872b93755ad2f30d9ce71d8e57d0ee8a9f87d127af"),
    "bms-webview-1": (59_602, 497, 149_639, 33450, 3_658,
                      "2f08c5cb9cadb71d7988160d7f5e7386ac20a60d4a6ed8049b7e1e6184b46641"),
    "t10i4d100k": (100_000, 870, 1_010_228, 368, 7_828,
                   "34f6929a8e3228f9754f8218c90a3aa75f742c54da676483c287e002ac11b2d8"),
    "chess": (3_196, 75, 118_252, None, None,
              "7c3ac4efa557ca07d97d2fcae91d23887925a2e86d6623e66e44d673998c6893"),
    "mushroom": (8_124, 119, 186_852, 85, 8_124,
                 "aee394751fb2d9cc37fbd9c90ba8a97ef971499cace519ac2922d110f7b3dbd3"),
    # T40I10D100K: published 100,000 transactions / 942 items (Liu'24, Ding'19, FIMI); the
    # occurrences are the imputed total 3,956,400 (density 4.20%).
    "t40i10d100k": (100_000, 942, 3_956_400, 368, 28_738,
                    "4f3daecf6a9bb0273b81856e72a64bc3fbc30e397fa785d81fff260abbac73ad"),
}
# Seed papers' tables: Lyu'17 Table 1, Ding'19 Table 2, Liu'24 Table 2.
PAPER_COUNTS = {
    "bms-pos": (515_597, 1_657), "kosarak": (990_002, 41_270), "aol": (647_377, 2_290_685),
    "t40i10d100k": (100_000, 942), "adult": (48_842, 123),
}
LIU24_THRESHOLDS = {"binary": 500, "zipf": 200, "t40i10d100k": 11_850, "bms-pos": 13_600,
                    "kosarak": 10_500, "adult": 200}
SHIPPED_FILES = {"t40i10d100k": "item_counts_support_ge_1000.csv"}


# --- registry, synthetic data ---------------------------------------------------------------

def test_names_and_metadata_keys():
    names = datasets.names()
    assert names[:2] == ["zipf", "binary"]
    assert set(PUBLISHED) | {"bms-pos", "kosarak", "aol"} <= set(names)
    for name in names[:-3]:
        ds = datasets.load(name)
        for key in ("source", "num_items", "num_transactions", "thresholds", "notes"):
            assert key in ds.metadata, (name, key)
        assert ds.metadata["num_items"] == ds.num_items == ds.scores.shape[0]
        assert ds.scores.dtype == np.float64 and np.all(np.isfinite(ds.scores))
    assert [datasets.load(a).name for a in ("A9A", "T40", "bms1", "BMS_WebView_1")] == [
        "adult", "t40i10d100k", "bms-webview-1", "bms-webview-1"]


def test_unknown_dataset_and_argument():
    with pytest.raises(ValueError, match="available datasets are: zipf, binary, lyu-zipf, adult"):
        datasets.load("nope")
    with pytest.raises(ValueError, match="rare_items"):
        datasets.load("adult", rare_items="drop")


def test_zipf_and_binary():
    z = datasets.load("zipf")
    assert z.num_items == 10_000 and z.scores[0] == 10_000 and z.scores[49] == 200
    assert np.sum(z.scores >= datasets.fixed_threshold(z)) == 50
    b = datasets.load("binary")
    assert b.num_items == 10_000 and b.metadata["positives"] == 50
    assert set(np.unique(b.scores)) == {0.0, 1000.0} and np.sum(b.scores == 1000) == 50
    assert datasets.fixed_threshold("binary") == 500
    assert np.sum(datasets.binary(positives=7).scores > 0) == 7
    with pytest.raises(ValueError, match="at most n"):
        datasets.binary(n=5, positives=6)


def test_lyu_zipf_is_lyus_dataset_not_lius():
    """Lyu'17 slides: zipf with 1,000,000 records over 10,000 items (Zipf exponent 1, expected
    supports rounded by largest remainder), about 10.2x the scores of Liu'24's s_i = 10,000/i."""
    lyu, liu = datasets.load("lyu-zipf"), datasets.load("zipf")
    s = lyu.scores
    assert lyu.name == "lyu-zipf" and datasets.is_synthetic("Lyu_Zipf")
    assert lyu.num_items == 10_000 and s.sum() == 1_000_000 and np.all(s == np.round(s))
    h = np.sum(1.0 / np.arange(1, 10_001))
    expected = 1e6 / (h * np.arange(1, 10_001))
    np.testing.assert_allclose(lyu.metadata["expected"], expected, rtol=1e-12)
    assert np.max(np.abs(s - expected)) < 1.0
    assert (s[0], s[49], s[299]) == (102_170, 2_043, 341)
    assert np.all(np.diff(s[:328]) < 0) and s[327] == s[328]  # the first rounding tie
    assert s[0] / liu.scores[0] == pytest.approx(1e6 / (h * 1e4), rel=1e-5)  # 10.2x
    assert "lyu17" in lyu.metadata["thresholds"] and "lyu17" not in liu.metadata["thresholds"]
    assert datasets.lyu_threshold(s, 50) == (2_043 + 2_003) / 2
    small = datasets.load("lyu-zipf", records=100, n=7)
    assert small.scores.sum() == 100 and small.metadata["thresholds"] == {}


# --- shipped real datasets --------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_shipped_counts_match_published(name):
    transactions, items, occurrences, top_item, top_count, sha = PUBLISHED[name]
    ds = datasets.load(name)
    assert ds.metadata["num_transactions"] == transactions
    assert ds.num_items == items and len(np.unique(ds.items)) == items
    assert ds.scores.sum() == occurrences
    assert np.all(ds.scores >= 1) and np.all(ds.scores <= transactions)
    if top_item is not None:
        assert ds.items[ds.top(1)[0]] == top_item and ds.scores.max() == top_count
    resource = importlib.resources.files("svtjax.datasets").joinpath(
        "data", name, SHIPPED_FILES.get(name, "item_counts.csv"))
    assert hashlib.sha256(resource.read_bytes()).hexdigest() == sha
    assert importlib.resources.files("svtjax.datasets").joinpath(
        "data", name, "SOURCE.md").read_text().count(sha) == 1


def test_published_counts_in_registry():
    for name, (transactions, items) in PAPER_COUNTS.items():
        spec = _registry.spec(name)
        assert (spec.num_transactions, spec.num_items) == (transactions, items), name
    # Documented disagreements between publications.
    liu_adult = [p for p in _registry.spec("adult").published if p["ref"] == _registry.LIU24]
    assert liu_adult[0]["num_transactions"] == 48_843
    slides = [p["num_transactions"] for p in _registry.spec("aol").published]
    assert slides == [647_377, 647_337]
    for name in ("bms-pos", "kosarak"):
        refs = {p["ref"] for p in _registry.spec(name).published}
        assert {_registry.LYU17, _registry.DING19, _registry.LIU24} <= refs


def test_fixed_thresholds_liu24():
    for name, value in LIU24_THRESHOLDS.items():
        assert datasets.fixed_threshold(name) == value, name
    assert datasets.load("adult").metadata["thresholds"]["liu24"]["c"] == 5
    with pytest.raises(ValueError, match="no fixed threshold"):
        datasets.fixed_threshold("retail")
    with pytest.raises(ValueError, match="no fixed threshold"):
        datasets.fixed_threshold("kosarak", paper="ding19")


# --- T40I10D100K completion -----------------------------------------------------------------

def _with_rare(known, rare):
    """T40 scores as load() lays them out (known items by id, then the rare ones)."""
    return np.concatenate([known.scores, np.asarray(rare, dtype=np.float64)])


def test_t40_imputation_is_documented_and_consistent():
    ds = datasets.load("t40i10d100k")
    known = datasets.load("t40i10d100k", rare_items="drop")
    rare = ds.scores[ds.items < 0]
    assert known.num_items == 755 and known.scores.min() == 1_002
    assert known.scores.sum() == 3_871_471
    assert rare.shape == (187,) and np.all(np.diff(rare) <= 0)
    assert rare.min() >= 1 and rare.max() <= 999 and rare.max() < known.scores.min()
    total = ds.scores.sum()
    assert total == datasets.T40_TOTAL_OCCURRENCES
    assert round(100 * total / (942 * 100_000), 2) == 4.20  # the .desc file's density
    np.testing.assert_array_equal(ds.items[ds.items < 0], -np.arange(1, 188))
    np.testing.assert_array_equal(ds.scores[:755], known.scores)


def test_t40_imputation_cannot_change_paper_results():
    """Every completion with rare counts in [1, 999] gives the same top-c sets (c <= 755), Lyu
    thresholds (c <= 754), Ding thresholds (k <= 94) and Liu'24 selections at 11,850."""
    known = datasets.load("t40i10d100k", rare_items="drop")
    ds = datasets.load("t40i10d100k")
    rng = np.random.default_rng(0)
    alternatives = [np.ones(187), np.full(187, 999), rng.integers(1, 1000, 187),
                    np.sort(rng.integers(1, 1000, 187)), ds.scores[755:]]
    base = ds.scores
    order = np.argsort(-base, kind="stable")
    t_liu = datasets.fixed_threshold(ds)
    base_lyu = [datasets.lyu_threshold(base, c) for c in range(1, 755)]
    for rare in alternatives:
        alt = _with_rare(known, rare)
        alt_order = np.argsort(-alt, kind="stable")
        np.testing.assert_array_equal(alt_order[:755], order[:755])  # top-c for all c <= 755
        assert [datasets.lyu_threshold(alt, c) for c in range(1, 755)] == base_lyu
        np.testing.assert_array_equal(alt >= t_liu, base >= t_liu)
        for k in (2, 22, 94):  # Ding'19 uses k = 2..22 (code: 2..24)
            a = datasets.ding_threshold(alt, k, rng=k, size=200)
            b = datasets.ding_threshold(base, k, rng=k, size=200)
            np.testing.assert_array_equal(a.threshold, b.threshold)
            np.testing.assert_array_equal(a.rank, b.rank)
    assert np.sum(base >= t_liu) == 49  # Liu'24 c = 50: 49 items reach 11,850
    # The lowest threshold any paper rule puts on T40 (Ding, k = 22, rank 176) leaves every
    # imputed item more than 5,000 below it.
    assert datasets.lyu_threshold(base, 8 * 22) - 999 > 5_000
    with pytest.raises(ValueError, match="rare_items"):
        datasets.load("t40i10d100k", rare_items="zero")


# --- threshold rules --------------------------------------------------------------------------

def test_lyu_threshold():
    assert datasets.lyu_threshold([1.0, 5.0, 3.0, 4.0], 2) == 3.5
    z = datasets.load("zipf").scores
    assert datasets.lyu_threshold(z, 50) == (200 + 10_000 / 51) / 2
    with pytest.raises(ValueError, match="smaller than the number of items"):
        datasets.lyu_threshold([1.0, 2.0], 2)


def test_ding_threshold_follows_the_authors_code():
    z = datasets.load("zipf").scores
    k = 3
    draws = datasets.ding_threshold(z, k, rng=1, size=20_000)
    assert draws.rank.min() == 2 * k + 1 and draws.rank.max() == 8 * k
    np.testing.assert_array_equal(np.unique(draws.rank), np.arange(2 * k + 1, 8 * k + 1))
    counts = np.bincount(draws.rank)[2 * k + 1:]
    assert counts.min() > 0.8 * 20_000 / (6 * k)  # uniform: each of 18 ranks ~1111 times
    for rank, t in zip(draws.rank[:50], draws.threshold[:50]):
        assert t == datasets.lyu_threshold(z, int(rank))
        assert np.sum(z > t) == rank
    one = datasets.ding_threshold(z, k, rng=np.random.default_rng(5))
    assert isinstance(one.threshold, float) and 2 * k < one.rank <= 8 * k
    with pytest.raises(ValueError, match="at least high"):
        datasets.ding_threshold(np.arange(16.0), 2)
    datasets.ding_threshold(np.arange(17.0), 2)


# --- readers ----------------------------------------------------------------------------------

FIMI_TEXT = "1 2 3\n\n# SPMF comment\n@CONVERTED_FROM_TEXT\n2 3 3\n3,4;5 \n  7\n"


def test_fimi_reader(tmp_path):
    plain = tmp_path / "t.dat"
    plain.write_text(FIMI_TEXT)
    packed = tmp_path / "t.dat.gz"
    packed.write_bytes(gzip.compress(FIMI_TEXT.encode()))
    for path in (plain, packed):
        counts = datasets.load_transactions(path)
        assert counts.num_transactions == 4  # blank and comment lines are not transactions
        assert counts.items.tolist() == [3, 2, 1, 4, 5, 7]  # count desc, then id
        assert counts.counts.tolist() == [3, 2, 1, 1, 1, 1]  # "2 3 3" counts item 3 once
    both = datasets.load_transactions([plain, packed])
    assert both.num_transactions == 8 and both.counts[0] == 6
    words = tmp_path / "w.dat"
    words.write_text("a b\nb\n")
    assert datasets.load_transactions(words).items.tolist() == ["b", "a"]


def test_other_readers(tmp_path):
    svm = tmp_path / "x.svm"
    svm.write_text("+1 3:1 5:1\n-1 3:1 7:0\n")
    c = datasets.load_transactions(svm, format="libsvm")
    assert (c.num_transactions, c.items.tolist(), c.counts.tolist()) == (2, [3, 5], [2, 1])
    pairs = tmp_path / "p.dat"
    pairs.write_text("1\t10\n1\t11\n2\t10\n2\t10\n3\t12\n")
    c = datasets.load_transactions(pairs, format="pairs")
    assert (c.num_transactions, c.items.tolist(), c.counts.tolist()) == (3, [10, 11, 12],
                                                                         [2, 1, 1])
    with pytest.raises(ValueError, match="unknown transaction format"):
        datasets.load_transactions(pairs, format="arff")
    with pytest.raises(FileNotFoundError):
        datasets.load_transactions(tmp_path / "missing.dat")
    empty = tmp_path / "e.dat"
    empty.write_text("\n# nothing\n")
    with pytest.raises(ValueError, match="no transactions"):
        datasets.load_transactions(empty)


AOL_HEADER = "AnonID\tQuery\tQueryTime\tItemRank\tClickURL\n"
AOL_1 = AOL_HEADER + "1\tcheap flights\t2006-03-01\t\t\n1\tflights\t2006-03-02\t1\thttp://a\n" \
                     "2\t-\t2006-03-01\t\t\n"
AOL_2 = AOL_HEADER + "3\tCheap hotels\t2006-03-01\t\t\n3\thotels paris\t2006-03-01\t\t\n"


def _aol_zip(path):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("AOL-user-ct-collection/U500k_README.txt", "readme")
        archive.writestr("AOL-user-ct-collection/user-ct-test-collection-01.txt.gz",
                         gzip.compress(AOL_1.encode()))
        archive.writestr("AOL-user-ct-collection/user-ct-test-collection-02.txt.gz",
                         gzip.compress(AOL_2.encode()))


def test_aol_reader_reads_a_zip_of_gzip_logs(tmp_path):
    _aol_zip(tmp_path / "aol.zip")
    c = datasets.load_transactions(tmp_path / "aol.zip", format="aol")
    assert c.num_transactions == 2  # user 2 only has "-" (no query)
    assert dict(zip(c.items.tolist(), c.counts.tolist())) == {
        "cheap": 2, "flights": 1, "hotels": 1, "paris": 1}


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared/data not present")
@pytest.mark.parametrize("name,files,fmt", [
    ("chess", ["chess/chess.dat.gz"], "fimi"),
    ("mushroom", ["mushroom/mushroom.dat.gz"], "fimi"),
    ("bms-webview-1", ["BMS-WebView-1/BMS-WebView-1.dat.gz"], "fimi"),
    ("retail", ["retail/retail.dat.gz"], "fimi"),
    ("t10i4d100k", ["T10I4D100K/T10I4D100K.dat.gz"], "fimi"),
    ("adult", ["adult_a9a/a9a.gz", "adult_a9a/a9a.t.gz"], "libsvm"),
])
def test_readers_reproduce_shipped_counts(name, files, fmt):
    ds = datasets.from_transactions([SHARED / f for f in files], name=name)
    assert ds.metadata["verified"] and ds.metadata["num_transactions"] == PUBLISHED[name][0]
    shipped = datasets.load(name)
    np.testing.assert_array_equal(ds.items, shipped.items)
    np.testing.assert_array_equal(ds.scores, shipped.scores)
    assert all(len(f["sha256"]) == 64 for f in ds.metadata["files"])


def test_from_transactions(tmp_path):
    path = tmp_path / "mine.dat"
    path.write_text(FIMI_TEXT)
    mine = datasets.from_transactions(path, name="my-basket")
    assert mine.name == "my-basket" and mine.metadata["num_transactions"] == 4
    assert mine.metadata["thresholds"] == {} and mine.items.tolist() == [1, 2, 3, 4, 5, 7]
    with pytest.raises(datasets.DatasetVerificationError, match="990,002"):
        datasets.from_transactions(path, name="kosarak")
    unchecked = datasets.from_transactions(path, name="kosarak", verify=False)
    assert unchecked.metadata["thresholds"]["liu24"]["threshold"] == 10_500
    assert unchecked.metadata["verified"] is False


# --- fetch ------------------------------------------------------------------------------------

class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        del args


@pytest.fixture
def server(tmp_path, monkeypatch):
    """Serves tmp_path/www on 127.0.0.1; yields (base url, directory, stop)."""
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    root = tmp_path / "www"
    root.mkdir()
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    stopped = []

    def stop():
        if not stopped:
            httpd.shutdown()
            httpd.server_close()
            stopped.append(True)

    yield f"http://127.0.0.1:{httpd.server_address[1]}", root, stop
    stop()


def _tiny_kosarak(monkeypatch):
    """Pretends Kosarak's published counts are those of FIMI_TEXT (4 transactions, 6 items)."""
    spec = dataclasses.replace(_registry.SPECS["kosarak"], num_transactions=4, num_items=6)
    monkeypatch.setitem(_registry.SPECS, "kosarak", spec)


def test_fetch_rejects_counts_that_differ_from_published(server, tmp_path):
    base, www, _ = server
    (www / "kosarak.dat.gz").write_bytes(gzip.compress(FIMI_TEXT.encode()))
    cache = tmp_path / "cache"
    with pytest.raises(datasets.DatasetVerificationError, match="990,002"):
        datasets.fetch("kosarak", cache_dir=cache, url=f"{base}/kosarak.dat.gz")
    assert list(cache.iterdir()) == []  # nothing half-written
    with pytest.raises(datasets.DatasetNotAvailableError, match=r"fetch\('kosarak'\)"):
        datasets.load("kosarak", cache_dir=cache)


def test_fetch_downloads_verifies_records_and_caches(server, tmp_path, monkeypatch):
    base, www, stop = server
    payload = gzip.compress(FIMI_TEXT.encode())
    (www / "kosarak.dat.gz").write_bytes(payload)
    _tiny_kosarak(monkeypatch)
    cache = tmp_path / "cache"
    monkeypatch.setenv(datasets.ENV_VAR, str(cache))
    assert datasets.cache_dir() == cache
    ds = datasets.fetch("kosarak", url=f"{base}/kosarak.dat.gz")
    record = json.loads((cache / "kosarak" / "record.json").read_text())
    assert record["files"][0]["sha256"] == hashlib.sha256(payload).hexdigest()
    assert record["files"][0]["bytes"] == len(payload)
    assert record["verified"] and record["num_transactions"] == 4 and record["num_items"] == 6
    assert (cache / "kosarak" / "kosarak.dat.gz").read_bytes() == payload
    assert ds.items.tolist() == [1, 2, 3, 4, 5, 7] and ds.scores.tolist() == [1, 2, 3, 1, 1, 1]
    assert ds.metadata["files"][0]["sha256"] == record["files"][0]["sha256"]
    assert ds.metadata["thresholds"]["liu24"]["threshold"] == 10_500
    loaded = datasets.load("kosarak")
    np.testing.assert_array_equal(loaded.scores, ds.scores)
    stop()  # offline from here on
    again = datasets.fetch("kosarak")  # cached: no network needed
    np.testing.assert_array_equal(again.scores, ds.scores)
    with pytest.raises(datasets.DownloadError, match="network"):
        datasets.fetch("kosarak", url=f"{base}/kosarak.dat.gz", force=True)
    np.testing.assert_array_equal(datasets.load("kosarak").scores, ds.scores)  # cache intact


def test_fetch_errors_and_local_files(server, tmp_path, monkeypatch):
    base, www, _ = server
    (www / "k.dat").write_text(FIMI_TEXT)
    _tiny_kosarak(monkeypatch)
    cache = tmp_path / "cache"
    with pytest.raises(datasets.DownloadError, match="HTTP 404"):
        datasets.fetch("kosarak", cache_dir=cache, url=f"{base}/missing.dat")
    with pytest.raises(datasets.DatasetVerificationError, match="sha256"):
        datasets.fetch("kosarak", cache_dir=cache, url=f"{base}/k.dat", sha256="0" * 64)
    with pytest.raises(ValueError, match="synthetic"):
        datasets.fetch("zipf", cache_dir=cache)
    ds = datasets.fetch("kosarak", cache_dir=cache, url=www / "k.dat")  # a local copy
    assert ds.metadata["files"][0]["url"].startswith("file://")
    assert sorted(p.name for p in cache.iterdir()) == ["kosarak"]


def test_fetch_multi_file_and_aol_warning(server, tmp_path, monkeypatch):
    base, www, _ = server
    (www / "a9a").write_text("+1 3:1 5:1\n")
    (www / "a9a.t").write_text("-1 3:1\n")
    spec = dataclasses.replace(_registry.SPECS["adult"], num_transactions=2, num_items=2)
    monkeypatch.setitem(_registry.SPECS, "adult", spec)
    cache = tmp_path / "cache"
    adult = datasets.fetch("adult", cache_dir=cache, url=[f"{base}/a9a", f"{base}/a9a.t"])
    assert adult.scores.tolist() == [2, 1] and len(adult.metadata["files"]) == 2
    assert datasets.load("adult", from_cache=True, cache_dir=cache).scores.tolist() == [2, 1]
    assert datasets.load("adult").num_items == 123  # the package's copy is unaffected
    _aol_zip(www / "aol.zip")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        aol = datasets.fetch("aol", cache_dir=cache, url=f"{base}/aol.zip")
    assert any("647,377" in str(w.message) for w in caught)
    assert aol.metadata["verified"] is False and aol.metadata["num_transactions"] == 2
