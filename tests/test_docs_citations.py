"""What the code cites lives in the repository: comments, docstrings and strings under
``byocc/`` cite ``docs/*.md`` (the spec and design notes of ``shared/`` are not part of a
clone), and every ``docs/<file>.md#<anchor>`` or ``docs/<file>.md, <Heading>`` they name
exists. The links inside ``docs/`` resolve too.

Anchors are GitHub's: the heading text lower-cased, every character that is not a letter,
digit, ``_``, ``-`` or space dropped, spaces turned into ``-``; a repeated heading gets
``-1``, ``-2``, ...
"""

from __future__ import annotations

import io
import re
import tokenize
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "byocc"
DOCS = ROOT / "docs"

#: Citations of files outside the repository (``shared/``): the spec, design and style notes,
#: and the spec's section numbers written without the file name.
OUTSIDE = re.compile(
    r"spec/[\w.-]+\.md"
    r"|\bdesign\.md\b"
    r"|\bstyle\.md\b"
    r"|\bspec(?:'s)?\s+(?:sections?\s+|§\s*)?\d"
    r"|\bspec\s+Q\d"
    r"|\bsections?\s+\d"
    r"|§\s*\d"
)
_ANCHOR_LIST = r"#[\w-]+(?:(?:,\s+|\s+and\s+|,\s+and\s+)#[\w-]+)*"
CITATION = re.compile(r"\bdocs/([\w.-]+\.md)(" + _ANCHOR_LIST + r"|,\s+[^\n]*)?")
_STRING_TOKENS = {tokenize.COMMENT, tokenize.STRING} | (
    {tokenize.FSTRING_MIDDLE} if hasattr(tokenize, "FSTRING_MIDDLE") else set())


def text_pieces(path: Path):
    """``(line, text)`` of every comment, string literal (docstrings included) and f-string
    part of a Python file."""
    source = path.read_text(encoding="utf-8")
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in _STRING_TOKENS:
            yield tok.start[0], tok.string


def python_files():
    return sorted(PACKAGE.rglob("*.py"))


def github_anchor(heading: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())  # [text](url) -> text
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


@cache
def headings(path: Path) -> tuple[str, ...]:
    """The heading texts of a Markdown file (outside fenced code blocks)."""
    out, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        m = None if fenced else re.match(r"#{1,6}\s+(.+?)\s*#*\s*$", line)
        if m:
            out.append(m.group(1))
    return tuple(out)


@cache
def anchors(path: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    result = set()
    for heading in headings(path):
        base = github_anchor(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        result.add(base if n == 0 else f"{base}-{n}")
    return frozenset(result)


def citation_problems(text: str) -> list[str]:
    """What is wrong with the ``docs/...`` citations in ``text`` (empty: nothing)."""
    problems = []
    for m in CITATION.finditer(text):
        name, tail = m.group(1), m.group(2) or ""
        doc = DOCS / name
        if not doc.is_file():
            problems.append(f"docs/{name}: no such file")
            continue
        if tail.startswith("#"):
            known = anchors(doc)
            for anchor in re.findall(r"#([\w-]+)", tail):
                if anchor not in known:
                    problems.append(f"docs/{name}#{anchor}: no such heading")
        elif tail:
            words = tail[1:].strip()
            # A citation by heading: the text after the comma starts with a heading.
            cited = any(words.startswith(h) and not words[len(h):len(h) + 1].isalnum()
                        for h in headings(doc))
            if not cited and words[:1].isupper():
                problems.append(f"docs/{name}, {words[:40]}...: no heading starts so")
    return problems


def test_code_cites_no_file_outside_the_repository():
    found = []
    for path in python_files():
        for line, text in text_pieces(path):
            for m in OUTSIDE.finditer(text):
                at = line + text[:m.start()].count("\n")
                found.append(f"{path.relative_to(ROOT)}:{at}: {m.group()!r}")
    assert found == []


def test_docs_citations_name_existing_files_and_headings():
    problems = []
    for path in python_files():
        for line, text in text_pieces(path):
            problems += [f"{path.relative_to(ROOT)}:{line}: {p}" for p in citation_problems(text)]
    assert problems == []


def test_links_between_docs_resolve():
    problems = []
    for doc in sorted(DOCS.glob("*.md")):
        text = doc.read_text(encoding="utf-8")
        for target, anchor in re.findall(r"\]\(([\w./-]*?\.md|)(?:#([\w-]+))?\)", text):
            path = (doc.parent / target) if target else doc
            if not path.is_file():
                problems.append(f"{doc.name}: link to missing {target}")
            elif anchor and anchor not in anchors(path):
                problems.append(f"{doc.name}: link to missing {target or doc.name}#{anchor}")
    assert problems == []


@pytest.mark.parametrize(("heading", "anchor"), [
    ("Scratch layout", "scratch-layout"),
    ("`byocc build`", "byocc-build"),
    ("add_function de-duplication", "add_function-de-duplication"),
    ("Input beyond the printer's", "input-beyond-the-printers"),
    ("Q1: overlap reads the original group", "q1-overlap-reads-the-original-group"),
    ("TVM 0.27 defects byocc does not copy", "tvm-027-defects-byocc-does-not-copy"),
])
def test_github_anchor(heading, anchor):
    assert github_anchor(heading) == anchor


def test_citation_checker_catches_a_missing_heading():
    assert citation_problems("see docs/codegen.md#scratch-layout") == []
    assert citation_problems("see docs/codegen.md#build, #manifest and #no-such-thing") == [
        "docs/codegen.md#no-such-thing: no such heading"]
    assert citation_problems("(docs/codegen.md, Scratch layout).") == []
    assert citation_problems("(docs/codegen.md, Scratch arena)") != []
    assert citation_problems("docs/nothing.md") == ["docs/nothing.md: no such file"]
