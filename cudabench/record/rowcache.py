"""A sweep's results files rewritten as every row ends, at the cost of that row alone.

A sweep rewrites `<stem>.csv` and `<stem>.json` after every row, so that Ctrl-C, a dead
worker or a killed parent loses nothing. Made whole each time (results.py's `write_results`:
a pandas frame, a JSON document), a rewrite costs in proportion to the rows so far: 75 ms a
row by 60 rows of a tune search on a 2-core host, whose kernels ran in a few ms. Here each
row's CSV line and JSON text are made once (from results.py's `flat_record` and
`row_record`), and a rewrite joins them. The files are byte for byte what `write_results`
writes: tests/test_results.py holds them to it, so the CSV line follows pandas' `to_csv`
(the csv module's minimal quoting; a float column's integer written as a float, an empty
cell for None and NaN).
"""

from __future__ import annotations

import csv
import io
import json
import math
import typing
from pathlib import Path
from typing import Any

from cudabench.core.records import ResultRow, RunMeta
from cudabench.core.timing import ProfileMetrics
from cudabench.record.results import (
    INT_COLUMNS,
    atomic_write,
    csv_columns,
    flat_record,
    meta_dict,
    row_record,
)
from cudabench.record.stems import stem_file

_HINTS = {
    **typing.get_type_hints(ResultRow),
    **{f"ncu_{k}": v for k, v in typing.get_type_hints(ProfileMetrics).items()},
}
_FLOATS = {name for name, hint in _HINTS.items() if hint in (float, float | None) and name not in INT_COLUMNS}


def _cell(name: str, value: Any) -> Any:
    """A value as pandas writes it in its column."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if name in _FLOATS and isinstance(value, int) and not isinstance(value, bool):
        return repr(float(value))
    return value


def _csv_line(row: ResultRow, columns: list[str]) -> str:
    record = flat_record(row)
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerow([_cell(c, record.get(c)) for c in columns])
    return text.getvalue()


def _indented(text: str, spaces: int) -> str:
    """Every line of `text` but the first indented by `spaces` more."""
    return text.replace("\n", "\n" + " " * spaces)


class RowCache:
    """Each row's CSV line and JSON text, kept by row object (a row replaced, its speedup
    filled, is made again; rows no longer written are let go)."""

    def __init__(self) -> None:
        self._made: dict[int, tuple[ResultRow, bool, str, str]] = {}

    def _of(self, row: ResultRow, with_ncu: bool) -> tuple[ResultRow, bool, str, str]:
        made = self._made.get(id(row))
        if made is None or made[0] is not row or made[1] != with_ncu:
            line = _csv_line(row, csv_columns(with_ncu))
            text = "  " + _indented(json.dumps(row_record(row), indent=1), 2)
            made = (row, with_ncu, line, text)
        return made

    def write(self, stem: Path, meta: RunMeta, rows: list[ResultRow]) -> tuple[Path, Path]:
        """Write `<stem>.csv` and `<stem>.json` as results.write_results does; their paths."""
        with_ncu = any(row.ncu for row in rows)
        made = [self._of(row, with_ncu) for row in rows]
        self._made = {id(m[0]): m for m in made}
        header = ",".join(csv_columns(with_ncu)) + "\n"
        csv_path, json_path = stem_file(stem, ".csv"), stem_file(stem, ".json")
        atomic_write(csv_path, header + "".join(m[2] for m in made))
        atomic_write(json_path, _document(meta_dict(meta), [m[3] for m in made]))
        return csv_path, json_path


def _document(meta: dict[str, Any], rows: list[str]) -> str:
    """json.dumps({"meta": meta, "rows": rows}, indent=1), the rows given as their text."""
    listed = "[\n" + ",\n".join(rows) + "\n ]" if rows else "[]"
    return '{\n "meta": ' + _indented(json.dumps(meta, indent=1), 1) + ',\n "rows": ' + listed + "\n}"
