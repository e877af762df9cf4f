"""What svtjax knows about each real dataset: provenance, published counts, paper thresholds,
public home.

Published counts come from the papers: Lyu et al. 2017 Table 1 (and its
slides), Ding et al. 2019 Table 2, Liu et al. 2024 Table 2, and from the FIMI repository's data
descriptions. ``num_transactions``/``num_items`` of a :class:`Spec` are what a complete copy of the
data must give; :func:`svtjax.datasets.fetch` and :func:`svtjax.datasets.from_transactions` check
them.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from typing import Any

__all__ = ["Spec", "SPECS", "SYNTHETIC", "canonical", "spec", "paper_thresholds"]

LYU17 = "Lyu, Su, Li 2017 (PVLDB 10(6)), Table 1"
LYU17_SLIDES = "Lyu, Su, Li 2017, slides (dataset table)"
DING19 = "Ding, Wang, Zhang, Kifer 2019 (PVLDB 13(3)), Table 2"
LIU24 = "Liu, Wang, Liu, Li, Chen 2024 (PVLDB 18(2)), Table 2"
FIMI = "FIMI repository data description (fimi.uantwerpen.be/data)"

_FIMI_URL = "http://fimi.uantwerpen.be/data/"

#: Lyu'17 Sec. 5: c from 25 to 300 (Fig. 3 ticks every 25; Table 3 uses 50..300). The threshold
#: is the mean of the c-th and (c+1)-th largest scores; the extracted paper text does not state
#: the rule, Ding'19 footnote 7 attributes it to Lyu'17 ("averaging the answer to the top k-th
#: and k+1-th queries as was done in prior work [32]").
LYU17_RULE = types.MappingProxyType({
    "rule": "lyu", "c": tuple(range(25, 301, 25)),
    "ref": "Lyu et al. 2017 Sec. 5 (c = 25..300, 100 runs, items shuffled each run); rule "
           "attributed by Ding et al. 2019 footnote 7; see svtjax.datasets.lyu_threshold"})

#: Ding'19 Sec. 7.2/7.3: "The threshold ... is randomly picked from the top 2k to top 8k in each
#: dataset for each run"; k = 2..22 in Fig. 3 (the authors' code runs k = 2..24).
DING19_RULE = types.MappingProxyType({
    "rule": "ding", "k": tuple(range(2, 23)), "low": 2, "high": 8,
    "ref": "Ding et al. 2019 Sec. 7 (threshold from the top 2k..8k, redrawn each run; k = 2..22 "
           "in Fig. 3); see svtjax.datasets.ding_threshold"})


def _liu(threshold: float, c: int) -> Mapping[str, Any]:
    return types.MappingProxyType({
        "rule": "fixed", "threshold": float(threshold), "c": c,
        "ref": f"{LIU24} (threshold); c = {c} in Figs. 7-8"})


@dataclasses.dataclass(frozen=True)
class Spec:
    """One real dataset.

    Attributes:
      name: registry name (lower case).
      title: human-readable name.
      source: where the data comes from.
      num_transactions: the number of transactions a complete copy has (what is verified).
      num_items: the number of distinct items a complete copy has (what is verified).
      published: each publication's counts: ``{"ref", "num_transactions", "num_items"}``.
      thresholds: per paper (``"lyu17"``, ``"ding19"``, ``"liu24"``), the threshold rule or value.
      urls: the public home(s) :func:`fetch` downloads (several files are concatenated).
      format: the reader for the downloaded files (see :func:`load_transactions`).
      shipped: name of the item-count file inside the package, or ``None``.
      known_sha256: per url, the sha256 of the copy the shipped counts were derived from (``None``
        where unknown); a different download is reported, not rejected (mirrors differ in
        trailing blanks).
      verify: ``"strict"`` (a count mismatch is an error) or ``"warn"`` (the published
        preprocessing is unknown, so a mismatch is only reported).
      notes: caveats.
      aliases: other accepted names.
    """

    name: str
    title: str
    source: str
    num_transactions: int | None
    num_items: int
    published: tuple[Mapping[str, Any], ...]
    thresholds: Mapping[str, Mapping[str, Any]]
    urls: tuple[str, ...]
    format: str = "fimi"
    shipped: str | None = None
    known_sha256: tuple[str | None, ...] = ()
    verify: str = "strict"
    notes: str = ""
    aliases: tuple[str, ...] = ()


def _pub(ref: str, num_transactions: int | None, num_items: int) -> Mapping[str, Any]:
    return types.MappingProxyType({"ref": ref, "num_transactions": num_transactions,
                                   "num_items": num_items})


_T40_NOTES = (
    "Only the 755 items with support >= 1,000 are known exactly (the one-item lines of an "
    "FP-Growth output at absolute support 1,000 for the full data, repository peter-toth/fim). "
    "The other 187 items (942 - 755) are imputed: counts spread linearly from about 907 down to "
    "1, summing with the known counts to 3,956,400 occurrences = 4.20% density x 942 items x "
    "100,000 transactions (the data set's .desc file says density 4.20%). Imputed items get "
    "placeholder ids -1..-187. Every imputed count is < 1,000 <= every known count, so any "
    "top-c set with c <= 755, lyu_threshold for c <= 754, ding_threshold for k <= 94 (rank "
    "<= 8k + 1 <= 755) and Liu'24's fixed threshold 11,850 are the same for every imputation "
    "with counts in [1, 999]. load('t40i10d100k', rare_items='drop') returns the 755 known "
    "items only; fetch('t40i10d100k') downloads the FIMI file and gives the exact counts "
    "(then load('t40i10d100k', from_cache=True)).")

SPECS: dict[str, Spec] = {s.name: s for s in (
    Spec(
        name="adult", title="Adult (UCI), LIBSVM one-hot a9a + a9a.t",
        source="UCI Adult (Becker & Kohavi 1996) in LIBSVM's one-hot encoding a9a (32,561 rows) "
               "+ a9a.t (16,281 rows), 123 binary features; item = feature, count = records "
               "having it",
        num_transactions=48_842, num_items=123,
        published=(_pub(LIU24, 48_843, 123), _pub("UCI Adult (48,842 instances)", 48_842, 123)),
        thresholds={"liu24": _liu(200, 5)},
        urls=("https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/a9a",
              "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/a9a.t"),
        format="libsvm", shipped="item_counts.csv",
        known_sha256=("f5d5ffd8d865ff41328e7ee043e4b020816914ff6843ff15b98905ddbedce906",
                      "1f448a153f0320399a7e40836eb207655b0bde0f21fc941cc472193daa9f5de9"),
        notes="Liu'24 Table 2 lists 48,843 records; UCI Adult (train 32,561 + test 16,281) has "
              "48,842, which is what the data gives. Liu'24 uses c = 5 on Adult.",
        aliases=("a9a", "adult-a9a")),
    Spec(
        name="t40i10d100k", title="T40I10D100K (IBM Quest synthetic, FIMI)",
        source="IBM Almaden Quest generator (T=40, I=10, D=100K) via the FIMI repository",
        num_transactions=100_000, num_items=942,
        published=(_pub(LIU24, 100_000, 942), _pub(DING19, 100_000, 942),
                   _pub(FIMI, 100_000, 942)),
        thresholds={"liu24": _liu(11_850, 50), "ding19": DING19_RULE},
        urls=(_FIMI_URL + "T40I10D100K.dat",), shipped="item_counts_support_ge_1000.csv",
        notes=_T40_NOTES, aliases=("t40",)),
    Spec(
        name="retail", title="retail (Belgian market baskets, FIMI)",
        source="Brijs et al. 1999, FIMI repository retail.dat",
        num_transactions=88_162, num_items=16_470, published=(_pub(FIMI, 88_162, 16_470),),
        thresholds={}, urls=(_FIMI_URL + "retail.dat",), shipped="item_counts.csv",
        known_sha256=("d967431ba522e32f0fbb243f2ee113ecd4cb374cb0234c1b0858dae1d499a055",),
        notes="Not used by the seed papers; use lyu_threshold or ding_threshold."),
    Spec(
        name="bms-webview-1", title="BMS-WebView-1 (KDD Cup 2000 click-stream)",
        source="KDD Cup 2000 / Blue Martini (Zheng, Kohavi, Mason 2001), transaction format; "
               "copy from repository mohameddouad/ClosedOverlap data/BMS1.dat",
        num_transactions=59_602, num_items=497,
        published=(_pub("Zheng, Kohavi, Mason 2001; BMS1.desc", 59_602, 497),),
        thresholds={},
        urls=("https://raw.githubusercontent.com/mohameddouad/ClosedOverlap/"
              "8a09e92def3d6ba80c7663732fec2cc767a918f9/data/BMS1.dat",),
        shipped="item_counts.csv",
        known_sha256=("f875156ca34e8612a6555c1ffc15a313d9fdfe8074a5bc0feda1c6cfd7e922f5",),
        notes="Not used by the seed papers; use lyu_threshold or ding_threshold.",
        aliases=("bms1", "bms-webview1", "bmswebview1")),
    Spec(
        name="t10i4d100k", title="T10I4D100K (IBM Quest synthetic, FIMI)",
        source="IBM Almaden Quest generator via the FIMI repository T10I4D100K.dat",
        num_transactions=100_000, num_items=870, published=(_pub(FIMI, 100_000, 870),),
        thresholds={}, urls=(_FIMI_URL + "T10I4D100K.dat",), shipped="item_counts.csv",
        known_sha256=("464d7b87aa7fdc0dc432ddad0493515569b2968b0f229ce39399c454a8c62e0c",),
        notes="Not used by the seed papers; use lyu_threshold or ding_threshold.",
        aliases=("t10",)),
    Spec(
        name="chess", title="chess (UCI King-Rook vs King-Pawn, FIMI)",
        source="UCI chess (kr-vs-kp) via the FIMI repository chess.dat",
        num_transactions=3_196, num_items=75, published=(_pub(FIMI, 3_196, 75),),
        thresholds={}, urls=(_FIMI_URL + "chess.dat",), shipped="item_counts.csv",
        known_sha256=("a12ea887df58a396709430af5bf0a9a32d1f6eba8e7c13dd41f28b98572c5db2",),
        notes="Not used by the seed papers; dense (every transaction has 37 items)."),
    Spec(
        name="mushroom", title="mushroom (UCI, FIMI)",
        source="UCI Mushroom via the FIMI repository mushroom.dat",
        num_transactions=8_124, num_items=119, published=(_pub(FIMI, 8_124, 119),),
        thresholds={}, urls=(_FIMI_URL + "mushroom.dat",), shipped="item_counts.csv",
        known_sha256=("6cf94bc482712c3936f0b40c921381ab2b776c3d9941880fecac4d83ca5cbeb5",),
        notes="Not used by the seed papers; dense (every transaction has 23 items)."),
    Spec(
        name="bms-pos", title="BMS-POS (KDD Cup 2000 point-of-sale)",
        source="KDD Cup 2000 / Blue Martini point-of-sale data (Zheng, Kohavi, Mason 2001); "
               "downloaded from the copy Ding'19's scripts use (cmla-psu/freegap "
               "scripts/download_datasets.sh): cpearce/HARM datasets/BMS-POS.csv",
        num_transactions=515_597, num_items=1_657,
        published=(_pub(LYU17, 515_597, 1_657), _pub(DING19, 515_597, 1_657),
                   _pub(LIU24, 515_597, 1_657), _pub(LYU17_SLIDES, 515_597, 1_657)),
        thresholds={"lyu17": LYU17_RULE, "ding19": DING19_RULE, "liu24": _liu(13_600, 50)},
        urls=("https://raw.githubusercontent.com/cpearce/HARM/master/datasets/BMS-POS.csv",),
        notes="Not shipped (no copy was obtainable when svtjax was built). The KDD Cup 2000 "
              "original (assoc/BMS-POS.dat.gz, one 'transaction item' pair per line) reads "
              "with format='pairs'.",
        aliases=("bmspos", "bms_pos")),
    Spec(
        name="kosarak", title="Kosarak (Hungarian news portal click-stream, FIMI)",
        source="Ferenc Bodon's click-stream data via the FIMI repository kosarak.dat",
        num_transactions=990_002, num_items=41_270,
        published=(_pub(LYU17, 990_002, 41_270), _pub(DING19, 990_002, 41_270),
                   _pub(LIU24, 990_002, 41_270), _pub(FIMI, 990_002, 41_270)),
        thresholds={"lyu17": LYU17_RULE, "ding19": DING19_RULE, "liu24": _liu(10_500, 50)},
        urls=(_FIMI_URL + "kosarak.dat",),
        notes="Not shipped (no copy was obtainable when svtjax was built)."),
    Spec(
        name="aol", title="AOL search log 2006 (users x query keywords)",
        source="AOL search query log (Pass, Chowdhury, Torgeson 2006), archive.org copy of "
               "AOL-user-ct-collection (10 tab-separated files)",
        num_transactions=647_377, num_items=2_290_685,
        published=(_pub(LYU17, 647_377, 2_290_685), _pub(LYU17_SLIDES, 647_337, 2_290_685)),
        thresholds={"lyu17": LYU17_RULE},
        urls=("https://archive.org/download/AOL_search_data_leak_2006/"
              "AOL_search_data_leak_2006.zip",),
        format="aol", verify="warn",
        notes="Lyu'17 does not state its preprocessing (the slides say 647,337 transactions, the "
              "paper 647,377). svtjax's 'aol' reader makes one transaction per user (AnonID) "
              "whose items are the distinct whitespace-separated keywords of the user's queries "
              "('-' = no query); a count mismatch is therefore reported as a warning, not an "
              "error.",
        aliases=("aol-log",)),
)}

#: Synthetic datasets, built by the functions in ``svtjax.datasets``.
SYNTHETIC = ("zipf", "binary", "lyu-zipf")

_ALIASES = {a: s.name for s in SPECS.values() for a in s.aliases}


def canonical(name: str) -> str:
    """Lower-cases ``name``, maps ``_`` to ``-`` and resolves aliases."""
    if not isinstance(name, str):
        raise TypeError(f"dataset name must be a string; got {name!r}")
    key = name.strip().lower().replace("_", "-")
    return _ALIASES.get(key, key)


def spec(name: str) -> Spec:
    """The :class:`Spec` registered as ``name`` (aliases accepted)."""
    key = canonical(name)
    if key not in SPECS:
        hint = (" (a synthetic dataset: it has no transaction file)" if key in SYNTHETIC
                else "")
        raise ValueError(f"unknown real dataset {name!r}{hint}; real datasets are: "
                         f"{', '.join(SPECS)}")
    return SPECS[key]


def paper_thresholds(s: Spec) -> dict[str, dict[str, Any]]:
    """Plain-dict copy of ``s.thresholds`` (for metadata)."""
    return {paper: dict(rule) for paper, rule in s.thresholds.items()}
