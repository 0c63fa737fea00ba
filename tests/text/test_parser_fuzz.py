"""Random damage to valid modules (truncation, deleted or repeated lines, junk tokens,
swapped words): the parser either succeeds or raises a located ByoccError, never any other
exception, never an "internal error", never a hang."""

from __future__ import annotations

import random
import re
import time
from pathlib import Path

import pytest
from conftest import shared_glob

from byocc.ir import ByoccError
from byocc.text import parse_module

DATA = Path(__file__).parents[1] / "data"

JUNK = [
    "(", ")", "[", "]", "{", "}", ",", ":", "=", "->", "@", ".", "R", "R.add", "cls", "Module",
    "metadata", "x", "lv", "0", "-1", "1.5", '"float33"', '"s"', "'q'", "None", "True", "def",
    "class", "with", "return", "pass", "if", "else", "from", "import", "as", "\n", "\n    ", "\t",
    "#c\n", "\\\n", "$", "é", "R.Tensor", "R.Tuple", "T.int64", "R.shape", "R.const", "R.match_cast",
    "R.output", "R.dataflow()", "TypeVar", 'metadata["ir.GenericConst"][0]', "1e400",
    "99999999999999999999", "//", "*", "%", "-", "+", '"\\xff"', "R.call_tir", "R.call_packed",
    "R.ExternFunc", "R.func_attr", "T.max", "R.Callable", '"n * 2"', "(1,)", "[]", "{}",
]


def _corpus() -> list[str]:
    files = sorted(DATA.rglob("*.relax")) + sorted(p for p in DATA.rglob("*.txt") if p.name != "notes.txt")
    if not files:
        files = shared_glob("conformance/cases/*/input.relax")
    return [f.read_text() for f in files[:80]]


def _mutate(text: str, rng: random.Random) -> str:
    kind = rng.randrange(8)
    if kind == 0:
        return text[:rng.randrange(len(text))]
    lines = text.split("\n")
    if kind == 1:
        del lines[rng.randrange(len(lines))]
        return "\n".join(lines)
    if kind == 2:
        lines.insert(rng.randrange(len(lines)), rng.choice(lines))
        return "\n".join(lines)
    pos = rng.randrange(len(text))
    if kind == 3:
        return text[:pos] + rng.choice(JUNK) + text[pos:]
    if kind == 4:
        return text[:pos] + text[pos + 1:]
    if kind == 5:
        return text[:pos] + text[pos + rng.randrange(1, 40):]
    if kind == 6:
        words = re.findall(r"\w+|\S", text)
        return text.replace(rng.choice(words), rng.choice(words), 1)
    return text[:pos] + rng.choice(JUNK) + " " + rng.choice(JUNK) + text[pos:]


CORPUS = _corpus()


@pytest.mark.skipif(not CORPUS, reason="no corpus of modules")
def test_random_damage_gives_only_located_byocc_errors():
    rng = random.Random(20240527)
    outcomes = {"parsed": 0, "error": 0}
    for _ in range(220):
        text = rng.choice(CORPUS)
        for _ in range(rng.randrange(1, 4)):
            if text:
                text = _mutate(text, rng)
        start = time.perf_counter()
        try:
            parse_module(text, "fuzz.relax")
            outcomes["parsed"] += 1
        except ByoccError as err:
            outcomes["error"] += 1
            assert "internal error" not in err.message, (err, text)
            assert err.span is not None and err.span.source == "fuzz.relax", (err, text)
            assert 1 <= err.span.line <= text.count("\n") + 2 and err.span.column >= 1, (err, text)
        assert time.perf_counter() - start < 10, text
    assert outcomes["error"] > 100 and outcomes["parsed"] > 0
