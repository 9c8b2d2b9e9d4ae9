"""Typed table cells and the columns that say how to show them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

MISSING = "—"
"""How a missing value reads in every text rendering (CSV leaves the field empty)."""

Kind = Literal["text", "number", "interval", "estimate"]


@dataclass(frozen=True)
class Estimate:
    """A value with an optional confidence interval and a count of samples it left out.

    Attributes:
        value: The estimate (``None`` or NaN when it could not be computed).
        ci: Lower and upper bound, or ``None``.
        missing: Samples without a value (shown as "(k missing)" where the column asks for it).
    """

    value: float | None
    ci: tuple[float, float] | None = None
    missing: int = 0


Cell = str | int | float | tuple[float, float] | Estimate | None
"""What a table holds: text, a number, an interval (a pair of numbers), an estimate, or ``None`` (missing)."""


@dataclass(frozen=True)
class Column:
    """A column: its name, the kind of cell it holds and how its numbers are written.

    Attributes:
        name: Header.
        kind: ``text`` (left-aligned, ``str`` of the cell), ``number``, ``interval`` (a pair of
            numbers) or ``estimate`` (:class:`Estimate`); all but ``text`` are right-aligned.
        fmt: A ``str.format`` template for one number (``"{:.3f}"``, ``"{:+.3f}"``, ``"${:.4f}"``,
            ``"{:,}"``), or ``"p"`` for p-values (``<0.001`` below 0.001, else three decimals).
            ``None``: integers as they are, other numbers with three decimals.
        pair: Template joining the two formatted ends of an interval.
        parts: CSV headers of an interval's two ends (default ``"<name> low"``, ``"<name> high"``).
        missing: Estimate columns only: show and export each estimate's missing count.
    """

    name: str
    kind: Kind = "text"
    fmt: str | None = None
    pair: str = "[{}, {}]"
    parts: tuple[str, str] | None = None
    missing: bool = False

    @property
    def numeric(self) -> bool:
        """Whether the column is aligned right."""
        return self.kind != "text"

    def csv_names(self) -> list[str]:
        """The CSV headers this column becomes (an interval is two numbers, an estimate three or four)."""
        low, high = self.parts or (f"{self.name} low", f"{self.name} high")
        if self.kind == "interval":
            return [low, high]
        if self.kind == "estimate":
            return [self.name, low, high] + ([f"{self.name} missing"] if self.missing else [])
        return [self.name]

    def text(self, cell: Cell) -> str:
        """The cell as text; every missing value reads :data:`MISSING`."""
        if is_missing(cell):
            return MISSING
        if isinstance(cell, str):
            return cell
        if isinstance(cell, Estimate):
            shown = self._number(cell.value)
            if cell.ci is not None and not is_missing(cell.ci):
                shown += " " + self._pair(cell.ci)
            if self.missing and cell.missing:
                shown += f" ({cell.missing} missing)"
            return shown
        if isinstance(cell, tuple):
            return self._pair(cell)
        return self._number(cell) if self.kind != "text" or isinstance(cell, float) else str(cell)

    def values(self, cell: Cell) -> list[str | int | float]:
        """The cell as CSV fields: numbers stay numbers, missing is an empty field."""
        width = len(self.csv_names())
        if is_missing(cell):
            return [""] * width
        if isinstance(cell, Estimate):
            low, high = cell.ci if cell.ci is not None and not is_missing(cell.ci) else ("", "")
            out: list[str | int | float] = [_field(cell.value), _field(low), _field(high)]
            return out + ([cell.missing] if self.missing else [])
        if isinstance(cell, tuple):
            return [_field(cell[0]), _field(cell[1])]
        assert not isinstance(cell, tuple | Estimate) and cell is not None
        return [cell] + [""] * (width - 1)  # text in an interval column fills its first field

    def _number(self, value: float | None) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return MISSING
        if self.fmt == "p":
            return "<0.001" if value < 0.001 else f"{value:.3f}"
        if self.fmt is not None:
            return self.fmt.format(value)
        return str(value) if isinstance(value, int) else f"{value:.3f}"

    def _pair(self, pair: tuple[float, float]) -> str:
        return self.pair.format(self._number(pair[0]), self._number(pair[1]))


def is_missing(cell: Cell) -> bool:
    """``None``, NaN, an interval with a NaN end, or an estimate without a value."""
    if cell is None:
        return True
    if isinstance(cell, float):
        return math.isnan(cell)
    if isinstance(cell, tuple):
        return any(isinstance(v, float) and math.isnan(v) for v in cell)
    if isinstance(cell, Estimate):
        return is_missing(cell.value)
    return False


def _field(value: float | str | None) -> float | str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else value
