"""A text table that a notebook shows as an HTML table.

A wide text table wraps in a notebook's panel and its columns fall apart. :class:`Table` is the text as before
(``print()``, ``str()``, the doctests and the golden cells read it), and in Jupyter it displays as an HTML table,
which the panel scrolls sideways instead of wrapping. Leave it as the cell's last expression to get the HTML;
``print(table)`` still prints the text.
"""

from __future__ import annotations

import html
from collections.abc import Sequence


def render(head: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> str:
    """Fixed-width text: the first ``left`` columns left-aligned, the rest right-aligned, a rule under the head."""
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(str(c).ljust(w) if i < left else str(c).rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    first = line(head)
    return "\n".join([first, "-" * len(first)] + [line(r) for r in rows])


class Table(str):
    """The text of a table (a ``str``), with its head and rows kept for ``_repr_html_``."""

    head: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    left: int

    def __new__(cls, head: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1,
                text: str | None = None) -> Table:
        if any(len(r) != len(head) for r in rows):
            raise ValueError(f"every row needs {len(head)} cells, one per column of the head")
        obj = super().__new__(cls, render(head, rows, left) if text is None else text)
        obj.head = tuple(str(h) for h in head)
        obj.rows = tuple(tuple(str(c) for c in r) for r in rows)
        obj.left = left
        return obj

    def __repr__(self) -> str:  # a notebook's text/plain: the table, not a quoted string
        return str(self)

    def _repr_html_(self) -> str:
        def cell(tag: str, i: int, text: str) -> str:  # JupyterLab right-aligns a table's cells already
            style = ' style="text-align: left"' if i < self.left else ""
            return f"<{tag}{style}>{html.escape(text)}</{tag}>"

        head = "".join(cell("th", i, h) for i, h in enumerate(self.head))
        body = "".join("<tr>" + "".join(cell("td", i, c) for i, c in enumerate(r)) + "</tr>" for r in self.rows)
        return f'<table class="ak-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
