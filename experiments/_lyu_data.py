"""Lyu, Su, Li 2017 (PVLDB 10(6)): the methods, datasets and grid of Figure 3 / Table 3, and
Table 3 itself (``experiments.lyu2017``)."""

from __future__ import annotations

import re
from typing import Any

# The methods, in the paper's column order: label -> (registry name, parameters).
METHODS: dict[str, tuple[str, dict[str, Any]]] = {
    "SVT-DPBook": ("dpbook", {}),
    "SVT-S-1:1": ("svt-s", {"allocation": "1:1", "monotonic": True}),
    "SVT-S-1:3": ("svt-s", {"allocation": "1:3", "monotonic": True}),
    "SVT-S-1:c": ("svt-s", {"allocation": "1:c", "monotonic": True}),
    "SVT-S-1:c^(2/3)": ("svt-s", {"allocation": "1:c^(2/3)", "monotonic": True}),
    "SVT-ReTr-1:1": ("svt-retr", {"allocation": "1:1", "monotonic": True, "raise_by": 1.0,
                                  "max_passes": 10}),
    "SVT-ReTr-1:c^(2/3)": ("svt-retr", {"allocation": "1:c^(2/3)", "monotonic": True,
                                        "raise_by": 1.0, "max_passes": 10}),
    "EM": ("em-peeling", {"monotonic": True}),
}
SVT_S = ("SVT-S-1:1", "SVT-S-1:3", "SVT-S-1:c", "SVT-S-1:c^(2/3)")

PAPER_DATASETS = ("bms-pos", "kosarak", "aol")  # Lyu'17 Table 1
OFFLINE_DATASETS = ("lyu-zipf", "retail", "t40i10d100k", "bms-webview-1")
DEFAULT_DATASETS = OFFLINE_DATASETS + PAPER_DATASETS
PAPER_CS = tuple(range(25, 301, 25))
PAPER_EPSILONS = (0.1, 0.5)
PAPER_TRIALS = 100
EXACT_ACCURACY = {"kink_tol": 1e-4}
"""The sweeps' ``exact_accuracy`` (``svtjax.sweep``): the exact E[SER] columns' quadrature rule."""

# ---------------------------------------------------------------------------------------------
# Lyu'17 Table 3, transcribed from the text extraction of the paper
# (the block of the paper's text before "Table 3: Comparison of ...").
# The extraction prints each cell as "<mean><std>" run together (e.g. "0.0720.051" = 0.072 ±
# 0.051), some as "0 .0010 .001"; every one of the 240 cells (8 columns x 3 datasets x 2 ε x
# 5 c) parses as two 3-decimal numbers. Rows: dataset BMS-POS, Kosarak, AOL at ε = 0.1, then
# the same at ε = 0.5; c = 50, 100, 150, 200, 300 within each. Columns (the paper's order):
# SVT-DPBook; SVT-S 1:1, 1:3, 1:c, 1:c^(2/3); SVT-ReTr 1:1, 1:c^(2/3); EM.
# ---------------------------------------------------------------------------------------------
_TABLE3_COLUMNS = ("SVT-DPBook",) + SVT_S + ("SVT-ReTr-1:1", "SVT-ReTr-1:c^(2/3)", "EM")
_TABLE3_ROWS = [(d, e, c) for e in PAPER_EPSILONS for d in PAPER_DATASETS
                for c in (50, 100, 150, 200, 300)]
_TABLE3_TEXT = """
0.0720.051 0.5610.085 0.6690.073 0.6820.071 0.6210.069 0.7050.142 0.9680.043 0.9720.037
0.9740.037 0.9710.040 0.2250.062 0.9930.008 0.9980.003 0.9990.002 0.9990.002 0.0090.011
0.0400.034 0.1130.047 0.3690.067 0.5160.068 0.0200.044 0.1400.104 0.6400.126 0.8690.075
0.9360.051 0.0080.010 0.0170.015 0.1360.029 0.8000.032 0.9880.007
0.0170.027 0.2550.078 0.5050.079 0.6280.069 0.6310.065 0.0470.061 0.8960.080 0.9560.046
0.9670.044 0.9710.034 0.0160.016 0.7390.046 0.9860.009 0.9960.005 0.9980.003 0.0080.017
0.0110.012 0.0120.014 0.1230.051 0.4290.068 0.0210.053 0.0360.056 0.0420.050 0.4300.112
0.8450.077 0.0050.009 0.0100.009 0.0130.010 0.0160.009 0.7480.031
0.0160.025 0.0960.047 0.3410.080 0.5620.070 0.6070.064 0.0320.062 0.6400.142 0.9040.075
0.9600.034 0.9610.039 0.0130.015 0.0720.029 0.9020.028 0.9870.009 0.9970.003 0.0060.016
0.0090.017 0.0070.005 0.0400.023 0.3120.061 0.0020.005 0.0180.032 0.0080.013 0.0850.061
0.6280.095 0.0050.009 0.0070.007 0.0080.008 0.0080.005 0.0980.017
0.0300.040 0.1010.097 0.2890.221 0.5080.223 0.5350.225 0.0330.063 0.3730.247 0.7720.208
0.8650.177 0.9450.065 0.0230.023 0.0930.093 0.5320.215 0.9240.090 0.9860.033 0.0070.017
0.0130.021 0.0170.019 0.0480.057 0.2840.224 0.0060.028 0.0390.082 0.0620.109 0.0770.102
0.4230.270 0.0060.011 0.0220.018 0.0200.021 0.0320.031 0.0740.070
0.0170.029 0.0630.055 0.2200.083 0.4780.101 0.5810.083 0.0250.049 0.3980.144 0.8180.108
0.9420.045 0.9500.052 0.0110.013 0.0250.017 0.5870.075 0.9550.019 0.9950.005 0.0040.006
0.0080.016 0.0080.008 0.0240.031 0.2370.069 0.0010.003 0.0250.052 0.0150.036 0.0370.045
0.4120.123 0.0040.005 0.0090.009 0.0070.007 0.0080.007 0.0180.012
0.0040.016 0.0540.022 0.1970.057 0.3160.058 0.2920.049 0.0070.018 0.7690.109 0.9000.069
0.9330.063 0.9500.046 0.0020.004 0.5490.047 0.9750.015 0.9940.007 0.9980.003 0.0000.000
0.0020.006 0.0040.001 0.0180.003 0.1100.043 0.0020.012 0.0010.001 0.0090.002 0.1300.081
0.6720.106 0.0010.004 0.0010.000 0.0020.001 0.0050.002 0.5330.031
0.0010.001 0.0100.019 0.0490.012 0.1730.067 0.2240.092 0.0090.034 0.1030.098 0.6270.134
0.8330.107 0.9020.079 0.0020.005 0.0070.006 0.3460.082 0.8940.031 0.9900.006 0.0000.002
0.0000.001 0.0010.001 0.0030.001 0.0340.028 0.0020.012 0.0020.018 0.0010.000 0.0040.003
0.1080.086 0.0010.004 0.0000.001 0.0000.000 0.0010.000 0.0050.002
0.0010.001 0.0070.003 0.0480.006 0.0920.008 0.1410.009 0.0000.000 0.0330.005 0.1390.007
0.2190.008 0.3150.007 0.0010.001 0.0050.002 0.1530.015 0.4120.014 0.6830.014 0.0000.000
0.0000.000 0.0010.000 0.0030.001 0.0220.002 0.0000.000 0.0000.000 0.0010.000 0.0040.001
0.0480.004 0.0000.000 0.0000.000 0.0000.000 0.0010.000 0.0050.001
"""


def _parse_table3() -> dict[tuple[str, float, int, str], tuple[float, float]]:
    cells = re.findall(r"(\d\.\d{3})(\d\.\d{3})", _TABLE3_TEXT)
    assert len(cells) == len(_TABLE3_COLUMNS) * len(_TABLE3_ROWS), len(cells)
    table = {}
    for j, method in enumerate(_TABLE3_COLUMNS):
        for i, (dataset, eps, c) in enumerate(_TABLE3_ROWS):
            mean, std = cells[j * len(_TABLE3_ROWS) + i]
            table[(dataset, eps, c, method)] = (float(mean), float(std))
    return table


#: (dataset, ε, c, method) -> (mean SER, std SER), Lyu'17 Table 3.
TABLE3 = _parse_table3()
