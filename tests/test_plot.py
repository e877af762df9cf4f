"""Issue 20, item 9: the utility plot says what its shaded bands are (the 95% interval of each
mean) and draws them visibly at the default size."""

import pytest

pytest.importorskip("matplotlib")  # the plot extra (installed with dev)


def _rows():
    rows = []
    for label, base in (("SVT-S", 0.2), ("EM", 0.4)):
        for eps in (0.1, 0.5, 1.0, 2.0):
            mean = base + 0.1 * eps
            rows.append({"dataset": "zipf", "mechanism": label.lower(), "label": label,
                         "epsilon": eps, "c": 50, "threshold": 1.0, "metric": "f1",
                         "mean": mean, "std": 0.1, "se": 0.01, "ci_low": mean - 0.03,
                         "ci_high": mean + 0.03, "trials": 100, "seconds": 0.0, "seed": 1,
                         "point_id": f"{label}{eps}"})
    return rows


def test_bands_are_labelled_and_visible(tmp_path):
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection

    from svtjax import plot

    fig = plot.utility_curves(_rows(), x="epsilon", y="f1")
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[:2] == ["SVT-S", "EM"]
    assert any("95% interval" in t for t in labels), labels  # the band says what it is
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 2 and all(b.get_alpha() >= 0.3 for b in bands)
    width, height = fig.get_size_inches()
    assert width >= 7 and height >= 5  # was 5 x 3.6 in, bands hard to see
    plt.close(fig)
    path = tmp_path / "f1.png"
    plot.utility_curves(_rows(), path, x="epsilon", y="f1")
    from matplotlib.image import imread

    pixels = imread(path)
    assert pixels.shape[0] >= 5 * plot.DPI * 0.95 and pixels.shape[1] >= 7 * plot.DPI * 0.95
