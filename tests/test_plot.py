"""The utility plot: it says what its shaded bands are, colours and styles each line apart,
keeps its legend off the data, decides the log axis by a stated rule, names what is held fixed,
and never touches the caller's matplotlib backend."""

import pytest

pytest.importorskip("matplotlib")  # the plot extra (installed with dev)


def _rows(labels=(("SVT-S", 0.2), ("EM", 0.4)), epsilons=(0.1, 0.5, 1.0, 2.0), half=0.03,
          extra=None):
    rows = []
    for label, base in labels:
        for eps in epsilons:
            for value in (extra or [None]):
                mean = base + 0.1 * eps + (0.05 * value if value else 0.0)
                row = {"dataset": "zipf", "mechanism": label.lower(), "label": label,
                       "epsilon": eps, "c": 50, "threshold": 1.0, "metric": "f1",
                       "mean": mean, "std": 0.1, "se": 0.01, "ci_low": mean - half,
                       "ci_high": mean + half, "trials": 100, "seconds": 0.0, "seed": 1,
                       "point_id": f"{label}{eps}{value}"}
                if value is not None:
                    row["sensitivity"] = value
                rows.append(row)
    return rows


def _legend_texts(fig):
    (legend,) = fig.legends
    return [t.get_text() for t in legend.get_texts()]


def test_bands_are_labelled_and_visible(tmp_path):
    from matplotlib.collections import PolyCollection

    from svtjax import plot

    fig = plot.utility_curves(_rows(), x="epsilon", y="f1")
    ax = fig.axes[0]
    labels = _legend_texts(fig)
    assert labels[:2] == ["SVT-S", "EM"]
    assert any("95% interval" in t for t in labels), labels  # the band says what it is
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 2 and all(b.get_alpha() >= 0.3 for b in bands)
    width, height = fig.get_size_inches()
    assert width >= 7 and height >= 5
    path = tmp_path / "f1.png"
    plot.utility_curves(_rows(), path, x="epsilon", y="f1")
    from matplotlib.image import imread

    pixels = imread(path)
    assert pixels.shape[0] >= 5 * plot.DPI * 0.95 and pixels.shape[1] >= 7 * plot.DPI * 0.95


def test_the_callers_backend_is_left_alone(tmp_path):
    import matplotlib

    from svtjax import plot

    before = matplotlib.get_backend()
    plot.utility_curves(_rows(), tmp_path / "f1.png", x="epsilon", y="f1")
    assert matplotlib.get_backend() == before
    import matplotlib.pyplot as plt

    assert plt.get_fignums() == []  # nothing registered with pyplot either


def test_many_lines_never_share_a_colour_and_styles_name_the_other_parameter():
    from svtjax import plot

    labels = tuple((f"M{i}", 0.02 * i) for i in range(14))
    fig = plot.utility_curves(_rows(labels=labels, extra=[1.0, 2.0]), x="epsilon", y="f1")
    ax = fig.axes[0]
    colours = {}
    for line in ax.get_lines():
        colours.setdefault(tuple(line.get_color()), set()).add(line.get_linestyle())
    assert len(colours) == 14  # one colour per label
    assert all(len(styles) == 2 for styles in colours.values())  # one style per sensitivity
    texts = _legend_texts(fig)
    assert "sensitivity=1.0" in texts and "sensitivity=2.0" in texts


def test_the_legend_is_outside_every_panel():
    from svtjax import plot

    fig = plot.utility_curves(_rows(), x="epsilon", y="f1")
    fig.draw_without_rendering()  # runs the layout
    (legend,) = fig.legends
    box = legend.get_window_extent()
    for ax in fig.axes:
        assert not box.overlaps(ax.get_window_extent())


@pytest.mark.parametrize("epsilons, log", [((0.05, 0.5, 3.0), True), ((0.1, 0.5, 2.0), True),
                                           ((0.5, 1.0, 4.0), False), ((0.0, 1.0, 2.0), False)])
def test_the_log_axis_follows_the_stated_span_rule(epsilons, log):
    from svtjax import plot

    fig = plot.utility_curves(_rows(epsilons=epsilons), x="epsilon", y="f1")
    assert (fig.axes[0].get_xscale() == "log") is log


def test_the_title_names_the_trials_and_the_fixed_parameters_and_narrow_bands_are_said():
    from svtjax import plot

    fig = plot.utility_curves(_rows(half=1e-5), x="epsilon", y="f1")
    title = fig.get_suptitle()
    assert "100 trials per point" in title and "c=50" in title, title
    assert any("narrower than the lines" in t for t in _legend_texts(fig))
