"""Log-axis labels: only as many as fit, so they never run together (``plots.pick_log_ticks``)."""

import math

from advisor.gui.widgets import plots


def _px(text: str) -> float:
    return 8.0 * len(text)  # a monospace stand-in: 8 px a character


def test_decades_first_then_fives_then_twos_as_room_allows():
    # 100 h .. 100,000 h is 3 decades; at 300 px a decade is 100 px. "100 h" (40 px) centred at 0 px and
    # "100,000 h" at 300 px would stick out of the ends; "1,000 h" (56 px) at 100 px and "10,000 h" (64 px) at
    # 200 px are 100 >= 28 + 32 + 12 apart: both kept. "500 h" at 69.9 px is 30 px from "1,000 h" (< 20 + 28 +
    # 12): dropped; "200 h" at 30.1 px is 69.9 px from it (>= 60) and 30.1 >= its half width 20: kept.
    got = plots.pick_log_ticks(plots.USE_HOUR_TICKS, 100, 1e5, 300, _px)
    assert [t for _, t in got] == ["200 h", "1,000 h", "10,000 h"]
    wide = plots.pick_log_ticks(plots.USE_HOUR_TICKS, 100, 1e5, 1500, _px)  # 500 px a decade: 1-2-5 all fit
    assert [t for _, t in wide][:4] == ["200 h", "500 h", "1,000 h", "2,000 h"]


def test_labels_never_overlap_at_any_width():
    for length in range(60, 2000, 37):
        got = plots.pick_log_ticks(plots.USE_HOUR_TICKS, 100, 1e5, length, _px)
        spots = [((v - 2) / 3 * length, _px(t) / 2) for v, t in got]
        for (c1, h1), (c2, h2) in zip(spots, spots[1:], strict=False):
            assert c2 - c1 >= h1 + h2 + plots.TICK_GAP_PX - 1e-9
        assert all(h <= c <= length - h for c, h in spots)


def test_positions_are_log10_of_the_values():
    got = dict((t, v) for v, t in plots.pick_log_ticks(plots.HOUR_TICKS, 0.5, 1000, 800, _px))
    assert math.isclose(got["1 day"], math.log10(24), abs_tol=1e-9)
    assert "1 h" in got and "1 week" in got  # rank-0 labels are placed before the rank-1 ones
