"""Record monitor samples to CSV (``advisor monitor --csv``; columns in ``columns.csv_columns``).

Rows are written and flushed as they come, so an interrupted recording keeps what it has. Figures that
are not available are empty cells.
"""

from __future__ import annotations

import csv
import io
import threading
from pathlib import Path

from advisor.monitor.columns import csv_columns, gpu_values, host_values
from advisor.monitor.sampler import MonitorSample


def format_cell(value) -> str:
    """'' for None, integers as integers, other numbers with at most 4 decimals."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if value != value:  # NaN
        return ""
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.4f}".rstrip("0").rstrip(".")


class CsvRecorder:
    """A sampler listener that appends one CSV row per sample.

    Args:
        target: a path (opened for writing, replaced) or an open text file.
        gpu_count: number of GPUs, which fixes the columns.
    """

    def __init__(self, target: str | Path | io.TextIOBase, gpu_count: int) -> None:
        self._own = not hasattr(target, "write")
        self._file = open(target, "w", newline="", encoding="utf-8") if self._own else target
        self._writer = csv.writer(self._file, lineterminator="\n")
        self._writer.writerow(csv_columns(gpu_count))
        self._file.flush()
        self._lock = threading.Lock()
        self.rows = 0

    def __call__(self, sample: MonitorSample) -> None:
        values = (round(sample.time_s, 6),) + host_values(sample.host) + gpu_values(sample.gpus)
        with self._lock:
            if self._file.closed:
                return
            self._writer.writerow([format_cell(v) for v in values])
            self._file.flush()
            self.rows += 1

    def close(self) -> None:
        """Flush, and close the file if the recorder opened it."""
        with self._lock:
            if self._own and not self._file.closed:
                self._file.close()
