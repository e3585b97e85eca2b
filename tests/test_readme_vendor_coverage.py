"""README's 'Vendor scripts: what is covered' stays readable: a compact table, then one subsection per vendor."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
SECTION = "### Vendor scripts: what is covered"
VENDORS = ("SambaNova SambaFlow", "Cerebras", "Graphcore PopTorch", "Groq GroqFlow")
MAX_LINE = 1000


def _section() -> list[str]:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert SECTION in lines, f"README.md has no {SECTION!r} section"
    start = lines.index(SECTION)
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"#{2,3} ", lines[i])), len(lines))
    return lines[start:end]


def _anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lowercase, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _cells(row: str) -> list[str]:
    """A table row's cells, split on the pipes that are not escaped (a literal pipe is written ``\\|``)."""
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", row.strip().strip("|"))]


def _table() -> list[str]:
    return [line for line in _section() if line.startswith("|")]


def _subsections() -> dict[str, list[str]]:
    """Each ``####`` heading of the section with the lines under it."""
    subs: dict[str, list[str]] = {}
    current = None
    for line in _section():
        if line.startswith("#### "):
            current = line[5:].strip()
            subs[current] = []
        elif current is not None:
            subs[current].append(line)
    return subs


def test_section_has_a_row_per_vendor():
    rows = _table()[2:]
    for vendor in VENDORS:
        assert any(_cells(row)[0].startswith(vendor) for row in rows), f"no table row for {vendor}"


def test_table_is_well_formed():
    header, separator, *rows = _table()
    width = len(_cells(header))
    assert re.fullmatch(r"\|(\s*:?-{3,}:?\s*\|)+", separator.replace(" ", "")), separator
    assert len(_cells(separator)) == width
    for row in rows:
        assert len(_cells(row)) == width, f"row has {len(_cells(row))} cells, header {width}: {row[:80]}"


def test_no_line_is_a_wall():
    long_lines = [(len(line), line[:80]) for line in _section() if len(line) > MAX_LINE]
    assert not long_lines, f"lines over {MAX_LINE} characters: {long_lines}"


@pytest.mark.parametrize("vendor", VENDORS)
def test_each_vendor_has_its_subsection(vendor):
    heading = f"{vendor}: what is answered and refused"
    subs = _subsections()
    assert heading in subs, f"no '#### {heading}' subsection"
    text = "\n".join(subs[heading])
    for label in ("Answered", "Refused or left out"):
        assert re.search(rf"^(\*\*{label}\*\*|#####+ {label})", text, re.M), f"{vendor}: no {label!r} part"


def test_table_links_point_at_existing_anchors():
    anchors = {_anchor(h) for h in _subsections()} | {_anchor(SECTION.lstrip("# "))}
    rows = _table()[2:]
    for row in rows:
        links = re.findall(r"\]\(#([^)]+)\)", _cells(row)[-1])
        assert links, f"row without a link to its details: {row[:80]}"
        for link in links:
            assert link in anchors, f"#{link} is no heading's anchor (have {sorted(anchors)})"
    section = "\n".join(_section())
    for link in re.findall(r"\]\(#([^)]+)\)", section):
        assert link in anchors, f"#{link} is no heading's anchor"
