"""Parse then print gives back TVM's text, for every module text of the shared corpora: each
conformance case's ``input.relax`` and every ``.txt`` of spec/partitioning-examples
(normalised: trailing whitespace per line and trailing blank lines dropped). Skipped, with
a message, where shared/ is absent; tests/text/test_printer_roundtrip.py covers the copies under
tests/data."""

from __future__ import annotations

from pathlib import Path

from conftest import require_shared
from conftest import shared_glob

from byocc.text import parse_module
from byocc.text import print_module


def _files() -> list[Path]:
    files = shared_glob("conformance/cases/*/input.relax")
    files += [p for p in shared_glob("spec/partitioning-examples/*/*.txt") if p.name != "notes.txt"]
    return [f for f in files if f.read_text().startswith("# from")]


def _norm(text: str) -> str:
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def test_shared_corpus_round_trips():
    require_shared("conformance")
    files = _files()
    assert len(files) > 300
    failures = []
    for path in files:
        text = path.read_text()
        try:
            out = print_module(parse_module(text, str(path)))
        except Exception as exc:  # noqa: BLE001  (collect every failure, report them together)
            failures.append(f"{path}: {exc}")
            continue
        if _norm(out) != _norm(text):
            failures.append(f"{path}: printed text differs")
    assert failures == [], f"{len(failures)} of {len(files)} files fail:\n" + "\n".join(failures[:20])
