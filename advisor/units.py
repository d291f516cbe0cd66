"""Units: constants, parsing of human numbers and formatting at the edge.

Inside the code every quantity stays in SI base units (bytes, seconds, FLOPs, USD).
GB means 1e9 bytes and GiB means 2**30 bytes; both are labelled where shown.

The display policy, the same in the app, the reports and the CLI tables:
- memory (RAM, device memory, model and plan sizes) in GB of 1e9 bytes (:func:`fmt_mem`), GiB only when
  the user's setting asks for it (:func:`set_memory_binary`);
- every number with its unit, three significant figures (:func:`sig3`);
- dates in ISO 8601 form, ``2026-03-15`` (:func:`fmt_date`).
"""

from __future__ import annotations

import datetime as _dt
import math

KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12
KIB = 2**10
MIB = 2**20
GIB = 2**30
TFLOPS = 1e12
SECONDS_PER_HOUR = 3600.0
HOURS_PER_DAY = 24.0
DAYS_PER_MONTH = 365.25 / 12
HOURS_PER_YEAR = 365.25 * 24

_SUFFIXES = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12, "p": 1e15}


def parse_quantity(text: str | float | int) -> float:
    """Parse a count such as ``7e9``, ``7B``, ``1.5T``, ``200M`` or ``2,000``.

    Args:
        text: the number, optionally with a k/M/B/G/T/P suffix (case-insensitive).
    Returns:
        The value as a float.
    Raises:
        ValueError: when the text is not a finite number.
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        s = str(text).strip().replace(",", "").replace("_", "")
        if not s:
            raise ValueError("empty number")
        mult = 1.0
        if s[-1].lower() in _SUFFIXES and not s[-1].isdigit():
            mult = _SUFFIXES[s[-1].lower()]
            s = s[:-1]
        try:
            value = float(s) * mult
        except ValueError:
            raise ValueError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {text!r}")
    return value


_memory_binary = False  # the one display preference: memory in GiB instead of GB (a setting)


def set_memory_binary(binary: bool) -> None:
    """Show memory in GiB (2**30 bytes) instead of GB (1e9 bytes) from now on (the app's setting)."""
    global _memory_binary
    _memory_binary = bool(binary)


def memory_unit() -> str:
    """The unit :func:`fmt_mem` writes: ``"GB"``, or ``"GiB"`` when the setting asks for it."""
    return "GiB" if _memory_binary else "GB"


def memory_unit_note() -> str:
    """What the memory unit means, for a table's heading: ``GB = 1e9 bytes`` (or ``GiB = 2^30 bytes``)."""
    return "GiB = 2^30 bytes" if _memory_binary else "GB = 1e9 bytes"


def sig3(value: float) -> str:
    """A number to three significant figures, without exponent for everyday magnitudes.

    ``0.6199`` -> ``0.620``, ``23.54`` -> ``23.5``, ``165.2`` -> ``165``, ``1008`` -> ``1,010``.
    """
    if value is None or not math.isfinite(value):
        return "n/a"
    if value == 0:
        return "0"
    digits = 2 - int(math.floor(math.log10(abs(value))))
    rounded = round(value, digits)
    if abs(rounded) >= 1e15 or abs(rounded) < 1e-4:
        return f"{value:.3g}"
    if digits <= 0:
        return f"{rounded:,.0f}"
    return f"{rounded:,.{digits}f}"


def mem_value(n: float) -> float:
    """Bytes in the display memory unit (GB, or GiB when set), as a number for tables and charts."""
    return float(n) / (GIB if _memory_binary else GB)


def fmt_mem(n: float | None, binary: bool | None = None) -> str:
    """Memory in GB (1e9 bytes, three significant figures): ``25.8 GB``; GiB when the setting (or ``binary``) asks.

    Args:
        n: bytes, or None.
        binary: force GiB (True) or GB (False); None follows :func:`set_memory_binary`.
    Returns:
        The text, ``"n/a"`` for None.
    """
    if n is None:
        return "n/a"
    use_binary = _memory_binary if binary is None else binary
    return f"{sig3(float(n) / (GIB if use_binary else GB))} {'GiB' if use_binary else 'GB'}"


def fmt_bytes(n: float, binary: bool = False) -> str:
    """Format a size (a file, a transfer) in decimal units with a readable prefix: ``620 MB``, ``84.1 GB``.

    ``binary`` uses KiB/MiB/GiB instead. Memory is formatted with :func:`fmt_mem` (always GB).
    """
    if n is None:
        return "n/a"
    base, units = (1024.0, ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]) if binary else (
        1000.0, ["B", "kB", "MB", "GB", "TB", "PB"])
    value = float(n)
    i = 0
    while abs(value) >= base and i < len(units) - 1:
        value /= base
        i += 1
    return f"{value:.0f} {units[i]}" if i == 0 else f"{sig3(value)} {units[i]}"


def upper_first(text: str) -> str:
    """The text with its first letter in capitals, the rest untouched (``str.capitalize`` lowers the rest)."""
    return text[:1].upper() + text[1:]


def fmt_date(value) -> str:
    """A date (or datetime, or ISO text) as ``YYYY-MM-DD``; other text is returned unchanged."""
    if isinstance(value, _dt.datetime):
        return value.date().isoformat()
    if isinstance(value, _dt.date):
        return value.isoformat()
    if value is None:
        return "n/a"
    text = str(value)
    try:
        return _dt.date.fromisoformat(text[:10]).isoformat()
    except ValueError:
        return text


def fmt_count(n: float) -> str:
    """Format a count with a k/M/B/T suffix: 8.03B, 124.4M."""
    if n is None:
        return "n/a"
    for mult, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= mult:
            return f"{n / mult:.3g}{suffix}"
    return f"{n:.3g}"


def fmt_hours(hours: float) -> str:
    """Format a duration given in hours as minutes, hours, days or years."""
    if hours is None or not math.isfinite(hours):
        return "n/a"
    if hours < 1 / 60:
        return f"{hours * 3600:.0f} s"
    if hours < 1:
        return f"{hours * 60:.0f} min"
    if hours < 48:
        return f"{hours:.1f} h"
    if hours < 24 * 365:
        return f"{hours / 24:.1f} days"
    return f"{hours / HOURS_PER_YEAR:.1f} years"


def fmt_usd(usd: float) -> str:
    """Format money in US dollars with sensible precision."""
    if usd is None or not math.isfinite(usd):
        return "n/a"
    if abs(usd) >= 1e6:
        return f"${usd / 1e6:,.2f}M"
    if abs(usd) >= 100:
        return f"${usd:,.0f}"
    if abs(usd) >= 1:
        return f"${usd:,.2f}"
    return f"${usd:.4f}"


def fmt_usd_short(usd: float) -> str:
    """Money in three significant figures with k/M for chart labels: ``$7.44``, ``$326``, ``$48.7k``, ``$1.2M``."""
    if usd is None or not math.isfinite(usd):
        return "n/a"
    for div, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(usd) >= div:
            return f"${usd / div:.3g}{suffix}"
    return f"${usd:.3g}" if abs(usd) >= 1 else f"${usd:.2f}"


def fmt_flops(flops: float) -> str:
    """Format a FLOP count in scientific notation."""
    return "n/a" if flops is None else f"{flops:.3e} FLOPs"


def fmt_rate(value: float, unit: str) -> str:
    """Format a rate with three significant figures and its unit."""
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{sig3(value)} {unit}" if abs(value) < 1000 else f"{value:,.0f} {unit}"


# Characters that make a spreadsheet read a text cell as a formula (OWASP, "CSV injection").
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value):
    """``value`` with a ``'`` in front when it is text a spreadsheet would run as a formula; numbers and
    other text as they are. Every CSV the advisor writes passes its text cells through this."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value
