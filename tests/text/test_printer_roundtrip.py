"""Parse -> print reproduces TVM's text byte for byte, for every module text in the corpora
(the conformance cases and the partitioning-examples outputs kept under tests/data).

Set ``BYOCC_FULL_CORPUS=1`` to run over the shared/ folder as well (all 774 conformance
files and every partitioning-examples output), which takes longer.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import SHARED

from byocc.text import parser
from byocc.text.printer import print_module

DATA = Path(__file__).parents[1] / "data"


def _corpus() -> list[Path]:
    roots = [DATA / "conformance", DATA / "partitioning-examples"]
    if os.environ.get("BYOCC_FULL_CORPUS") and SHARED is not None:
        roots += [SHARED / "conformance" / "cases", SHARED / "spec" / "partitioning-examples"]
    files: list[Path] = []
    for root in roots:
        if root.is_dir():
            files += sorted(root.rglob("*.relax"))
            files += sorted(p for p in root.rglob("*.txt") if p.name != "notes.txt")
    return [f for f in files if f.read_text().startswith("# from")]


FILES = _corpus()


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(p.parents[2])) for p in FILES])
def test_parse_print_round_trip(path: Path):
    text = path.read_text()
    mod = parser.parse_module(text, source=str(path))
    expected = text.removesuffix("\n")
    assert print_module(mod) == expected


def test_spec_examples_parse_and_print_back():
    from test_printer_spec_texts import EXAMPLES

    for n, text in EXAMPLES.items():
        mod = parser.parse_module(text, source=f"E{n}")
        assert print_module(mod, pep695=(n == 9)) == text.rstrip("\n"), f"E{n}"
    # E8 read in TypeVar mode prints as E9 in PEP 695 mode
    assert print_module(parser.parse_module(EXAMPLES[8]), pep695=True) == EXAMPLES[9].rstrip("\n")
