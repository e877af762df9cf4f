"""The audit's constants: defaults, the padded pair length, the output families' grids and
the search's levels."""


DEFAULT_CONFIDENCE = 0.99
DEFAULT_DELTA = 1e-6
"""δ at which a guarantee that is finite only for δ > 0 is checked, and given to a mechanism
that cannot be calibrated without one."""
DEFAULT_CUTOFF = 2
"""Cut-off (``c``, or ``k``) of an audited mechanism when none is given."""
DEFAULT_SECONDS = 60.0
NUM_QUERIES = 10
"""Length every candidate pair is padded to (one compiled kernel for all pairs); DP-Sniper's
SVT inputs have 10 queries too."""
PAD = -1e9
"""Padding query value (times Δ): far below any threshold, so a padded query is always ⊥ (or
never picked); identical in q and q′."""
CHUNK = 2048
"""Trials per compiled chunk (fixed: one compile per mechanism). Small, so that the first
halving rounds (a few thousand trials per pair) are not padded."""


FAMILIES = ("first-two", "counts", "value", "halt")
"""The output summaries an event is a union of cells of (:func:`output_cells`)."""
VALUE_GRID = (-16.0, -8.0, -4.0, -2.0, -1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0,
              16.0)
"""Bin edges of released values, in units of Δ/ε (the scale of an ε-DP Laplace noise)."""
REST_CAP = 3
"""``counts`` caps the ⊤ count on items the pair does not move at this value."""
MAX_CELLS = 64
"""Most cells one event may be a union of."""
PROPOSALS = 24
"""Events each pair proposes per round (from its earlier samples) for scoring on its fresh
one."""
SEARCH_SHARE = 0.25
"""With a time budget: the share of the time left after compilation given to the search; the
rest goes to validation, whose size sets the margin of the bound."""
_INT32_MAX = 2**31 - 1  # svtjax._validate.INT32_MAX (not imported here: it imports jax)
MAX_TRIALS = _INT32_MAX // 2
"""Most validation trials per side: with δ = 0 one side may get up to twice as many (a fair coin
split of both sides' runs), and one ``svtjax.simulate`` call runs at most 2**31 − 1 trials."""
_PESSIMISM = 0.16  # one-sided 1σ: selection scores use Clopper–Pearson estimates at this level
_RANK_LEVEL = 0.01  # ~2.3σ: cells are ranked by likelihood-ratio estimates at this level
_CHECK_LEVEL = 0.5  # point estimates: on fresh samples, the expected validation bound (a
# pessimistic score would favour frequent, weaker events over rare, stronger ones)
