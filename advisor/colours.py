"""One colour per meaning, declared once: the app's charts and the reports read them from here.

The colours are the Okabe-Ito set (Okabe & Ito, "Color Universal Design", 2008, https://jfly.uni-koeln.de/color/),
distinguishable with the common forms of colour blindness, plus one from Paul Tol's colour-blind-safe
"muted" scheme (https://personal.sron.nl/~pault/, 2021) for the ninth to twelfth cost parts. Each cost part and each memory
part keeps its colour in every chart, whatever parts a chart happens to show. Pure data: no Qt.
"""

from __future__ import annotations

OKABE_ITO = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "bluish_green": "#009E73",
    "reddish_purple": "#CC79A7",
    "sky_blue": "#56B4E9",
    "vermillion": "#D55E00",
    "yellow": "#F0E442",
    "grey": "#999999",  # Okabe-Ito's black, lightened so it reads on dark backgrounds too
}
TOL_WINE = "#882255"
TOL_OLIVE = "#999933"
TOL_SAND = "#DDCC77"
TOL_INDIGO = "#332288"

# Cost parts (the names of advisor.cost.breakdown.PART_NAMES) -> colour.
COST_PART_COLOURS = {
    "rent": OKABE_ITO["blue"],
    "spot_rework": OKABE_ITO["sky_blue"],
    "storage": OKABE_ITO["grey"],
    "egress": OKABE_ITO["yellow"],
    "capex_share": OKABE_ITO["bluish_green"],
    "depreciation": OKABE_ITO["orange"],
    "energy": OKABE_ITO["vermillion"],
    "wear": TOL_OLIVE,
    "colocation": OKABE_ITO["reddish_purple"],
    "support": TOL_WINE,
    "idle_power": TOL_SAND,  # not rose: it read as colocation's reddish purple beside it
    "financing": TOL_INDIGO,
}

# Memory parts (the ``*_bytes`` fields of advisor.estimate.memory.MemoryBreakdown, without the suffix) -> colour.
MEMORY_PART_COLOURS = {
    "weights": OKABE_ITO["blue"],
    "gradients": OKABE_ITO["orange"],
    "optimizer": OKABE_ITO["bluish_green"],
    "activations": OKABE_ITO["reddish_purple"],
    "kv_cache": OKABE_ITO["sky_blue"],
    "overhead": OKABE_ITO["vermillion"],
}

# A tornado's two ends (an input at its low value, at its high value), in the app and the reports.
TORNADO_COLOURS = {"low": OKABE_ITO["sky_blue"], "high": OKABE_ITO["vermillion"]}

# Series without a fixed meaning (live GPU lines, scenario bars) cycle through this order.
SERIES = tuple(OKABE_ITO.values())

UNKNOWN = "#7F7F7F"


def cost_part_colour(part: str) -> str:
    """The colour of a cost part (``"rent"``, ``"energy"``, ...; spaces read as underscores)."""
    return COST_PART_COLOURS.get(part.replace(" ", "_"), UNKNOWN)


def memory_part_colour(part: str) -> str:
    """The colour of a memory part (``"weights"``, ``"KV cache"``, ``"kv_cache_bytes"``, ...)."""
    key = part.lower().replace(" ", "_").removesuffix("_bytes")
    return MEMORY_PART_COLOURS.get(key, UNKNOWN)


def part_label(part: str) -> str:
    """A part name as people read it: ``spot_rework`` -> ``spot rework``, ``kv_cache`` -> ``KV cache``."""
    text = part.removesuffix("_bytes").replace("_", " ")
    return "KV cache" if text.lower() == "kv cache" else text
