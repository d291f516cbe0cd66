"""The context-length sweep of an inference plan: time to first token and decode tokens/s against the
context, with the largest context that fits marked (read from ``PlanResult.inference``, never re-planned)."""

from __future__ import annotations

import math

from PySide6.QtWidgets import QVBoxLayout, QWidget

from advisor.gui.safe_text import set_plain
from advisor.gui.widgets import plots
from advisor.gui.widgets.wrapped import WrappedLabel


class ContextSweepWidget(QWidget):
    """A small plot of the plan's context sweep; hidden for training plans. ``show_plan(result)`` updates it."""

    def hasHeightForWidth(self) -> bool:  # noqa: N802 (Qt API)
        # its wrapped text asks for its height through its minimum (WrappedLabel): a height-for-width here
        # makes the page's layout give this widget more than its minimum and squeeze the chart above it
        return False

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.plot = plots.make_plot("Context length: time to first token and decode speed", "time to first token",
                                    "s", x_label="context (log2 tokens)", x_unit="", legend=True, min_height=150,
                                    legend_offset=(-10, 8))
        self.plot.setMouseEnabled(x=False, y=False)
        self.plot.setToolTip("Each point is the plan again at that context on the option named below: the time to "
                             "the first token grows with the prompt, decode slows as the KV cache grows; the dashed "
                             "line is the largest context that fits in memory.")
        self.ttft = plots.add_line(self.plot, "time to first token (s)", 0)
        self.decode = plots.add_line(self.plot, "decode speed (relative; figures below)", 1, dashed=True)
        self.limit = plots.add_limit_line(self.plot, None, "largest that fits", horizontal=False,
                                          label_position=0.9)
        self.caption = WrappedLabel()
        layout.addWidget(self.plot)
        layout.addWidget(self.caption)
        self.points: list[dict] = []

    def show_plan(self, result) -> None:
        """Draw ``result.inference["context_sweep"]`` (or hide the widget for a training plan)."""
        inf = result.inference if result is not None else None
        sweep = (inf or {}).get("context_sweep") or []
        self.setVisible(bool(sweep))
        self.points = list(sweep)
        if not sweep:
            return
        # Only the contexts that fit are drawn: a time for one that does not fit could not be true.
        drawn = [p for p in sweep if p["fits"] and p["ttft_s"] is not None] or []
        xs = [math.log2(p["context"]) for p in drawn]
        ttft = [p["ttft_s"] for p in drawn]
        top = max(ttft, default=0.0) or 1.0
        rates = [p["decode_tokens_per_s"] for p in drawn]
        peak = max(rates, default=0.0) or 1.0
        self.ttft.setData(xs, ttft)
        self.decode.setData(xs, [r / peak * top for r in rates])  # on the time scale: its shape, labelled below
        largest = inf["largest_context"]
        all_xs = [math.log2(p["context"]) for p in sweep]
        self.limit.setValue(math.log2(largest) if largest > 0 else all_xs[0])
        self.limit.setVisible(largest > 0)
        self.plot.getAxis("bottom").setTicks([[(x, _short(p["context"])) for x, p in zip(all_xs, sweep)], []])
        from advisor.planner.summary import inference_sentence

        shape = (f" Decode (scaled to the time axis) goes from {peak:,.1f} tokens/s at {drawn[0]['context']:,} "
                 f"tokens to {rates[-1]:,.1f} at {drawn[-1]['context']:,}, on this one layout." if drawn else "")
        set_plain(self.caption, inference_sentence(result) + shape)  # the option's name holds the GPU's


def _short(tokens: int) -> str:
    return f"{tokens // 1024}k" if tokens >= 1024 and tokens % 1024 == 0 else str(tokens)
