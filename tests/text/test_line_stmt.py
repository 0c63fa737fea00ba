"""The lexer's one-line binding shortcut (byocc/text/_line_stmt.py) builds exactly the tree
the grammar's rules build: same nodes, same fields, same positions, on every text of the
corpus and on lines chosen to sit at the edge of its subset."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import shared_glob
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from byocc.ir import ParseError
from byocc.text.grammar import RelaxLexer
from byocc.text.parser import parse_syntax
from byocc.text.syntax import Node

ROOT = Path(__file__).resolve().parents[2]


def dump(value):
    """A node tree as nested tuples: every slot of every node, positions included."""
    out = []
    stack = [(value, out)]
    while stack:
        item, into = stack.pop()
        if isinstance(item, Node):
            fields: list = [type(item).__name__]
            for cls in type(item).__mro__:
                for slot in getattr(cls, "__slots__", ()):
                    fields.append(slot)
                    sub: list = []
                    fields.append(sub)
                    stack.append((getattr(item, slot, "<unset>"), sub))
            into.append(fields)
        elif isinstance(item, list | tuple):
            sub = []
            into.append(sub)
            for x in reversed(item):
                stack.append((x, sub))
        else:
            into.append((type(item).__name__, item))
    return repr(out)


def both_ways(text: str):
    """(dump or error) with the shortcut, and without it."""
    results = []
    for on in (True, False):
        RelaxLexer.line_stmts = on
        try:
            results.append(dump(parse_syntax(text, "t.relax")))
        except ParseError as err:
            results.append(("error", str(err)))
        finally:
            RelaxLexer.line_stmts = True
    return results


def count_line_stmts(text: str) -> int:
    """How many statements of ``text`` the shortcut read."""
    from byocc.text import _line_stmt

    calls = []
    real = _line_stmt.read_line_stmt

    def spy(*args):
        got = real(*args)
        calls.append(got is not None)
        return got

    import byocc.text.grammar as grammar

    grammar.read_line_stmt = spy
    try:
        parse_syntax(text, "t.relax")
    finally:
        grammar.read_line_stmt = real
    return sum(calls)


CORPUS = shared_glob("conformance/cases/*/*.relax") + sorted((ROOT / "tests" / "data").rglob("*.relax"))


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_corpus_text_reads_the_same_with_the_shortcut(path):
    with_it, without = both_ways(path.read_text(encoding="utf-8"))
    assert with_it == without


def test_corpus_is_present_and_mostly_read_by_the_shortcut():
    assert len(CORPUS) > 100
    text = next(p for p in CORPUS if p.name == "input.relax").read_text(encoding="utf-8")
    assert count_line_stmts(text) > 0


EDGE_LINES = [
    'lv: R.Tensor((2, 3), dtype="float32") = R.add(x, y)',
    "lv = R.nn.conv2d(x, w, strides=[1, 1], padding=[0, 0, 0, 0], out_dtype=None)",
    "lv = R.sum(x, axis=-1, keepdims=True)",
    "lv = R.sum(x, axis=[-1, - 2], keepdims=False)",
    'lv = R.astype(x, dtype="float16")  # a comment',
    "lv = x  # trailing comment with ( brackets",
    "lv = (x)",
    "lv = ((x))",
    "lv = (x,)",
    "lv = (x, y,)",
    "lv = ()",
    "lv = []",
    "lv = [x, [y, z],]",
    "lv = lv0[0]",
    "lv = lv0[0, 1]",
    "lv = lv0[0][1]",
    "lv = f(x,)",
    "lv = f()",
    "lv = f(a = 1)",
    "lv = f(a == 1)",
    "lv = f(a=1, b)",
    "lv = R.Tensor((2, n), dtype=\"float32\")",
    "lv: R.Tensor((2, n)) = x",
    "lv: R.Tensor(dtype=\"float32\", ndim=2) = x",
    "lv: R.Tuple(R.Tensor((2,), dtype=\"float32\"), R.Object) = (a, b)",
    "lv = x.y.z",
    "lv = (x).y",
    "lv = -x",
    "lv = --1",
    "lv = -x.y(1)",
    "lv = x - 1",
    "lv = -x - 1",
    "lv = 1 + 2",
    "lv = x, y",
    "lv = x,",
    "lv = 1.5e-05",
    "lv = .5",
    "lv = 1.",
    "lv = 1e5",
    "lv = 0x10",
    "lv = 1a",
    "lv = x.5",
    'lv = "a\\"b"',
    'lv = "caf\\xC3\\xA9"',
    'lv = "a""b"',
    "lv = 'single'",
    'lv = """triple"""',
    "lv = None",
    "lv = f(None)",
    "lv = f(x=True, y=False)",
    "lv = x.None",
    "lv = f(None=1)",
    "lv = f(if=1)",
    "lv = if",
    "return = 1",
    "lv = {}",
    "lv = {1: 2}",
    "lv = f(x) y",
    "lv = f(x))",
    "lv = f(x",
    "lv = [x)",
    "lv = f(x) \\",
    "lv = x\f",
    "lv : R.Tensor((2,), dtype=\"float32\") = x",
    "lv: R.Tensor = x",
    "lv =",
    "lv = = x",
    "données = f(é)",
    "lv = ²",
    "lv = a℘",
    "lv = ٣",
    "lv = x ;",
    "lv\t=\tf(x,\ty)\t",
    "lv = f(x)[0].y(z)",
    "lv = R.Tensor((2, 3), dtype=\"float32\").x",
    "lv = x.R.Tensor((2,), dtype=\"float32\")",
    "lv = 1R.Tensor((2,), dtype=\"float32\")",
    'lv = "unterminated',
    'lv = "a # not a comment"  # a comment',
    "lv = R.call_tir(cls.f, (x,), out_sinfo=R.Tensor((1, 2), dtype=\"float32\"))",
    "lv = " + "[" * 80 + "1" + "]" * 80,
    "lv = " + "f(" * 80 + "1" + ")" * 80,
]


def wrap(line: str) -> str:
    return ("@R.function\ndef main(x: R.Tensor((2, 3), dtype=\"float32\")):\n"
            "    with R.dataflow():\n"
            f"        {line}\n"
            "        lv1 = x\n"
            "        R.output(lv1)\n"
            "    return lv1\n")


def test_shortcut_reads_the_printers_bindings():
    text = wrap('lv: R.Tensor((2, 3), dtype="float32") = R.nn.softmax(x, axis=-1)')
    assert count_line_stmts(text) == 2  # that line and `lv1 = x`; not R.output or return


def test_line_inside_brackets_is_not_a_statement():
    text = wrap("lv = R.f(x,\n            y=g(x))")
    with_it, without = both_ways(text)
    assert with_it == without
    assert count_line_stmts(text) == 1  # only `lv1 = x`


def test_line_after_a_continuation_is_not_a_statement():
    text = wrap("lv = \\\n            f(x)")
    with_it, without = both_ways(text)
    assert with_it == without


_atoms = st.sampled_from(["x", "lv0", "1", "-1", "2.5", '"s"', "None", "True", "R.Tensor((2, 3), dtype=\"float32\")",
                          "()", "[]", "if", "a.b", "-", "+", ",", "(", ")", "[", "]", "=", ":", ".", "#c"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_atoms, min_size=1, max_size=12), st.sampled_from(["", " "]))
def test_random_token_soup_reads_the_same_with_the_shortcut(tokens, sep):
    with_it, without = both_ways(wrap("lv = " + sep.join(tokens)))
    assert with_it == without


RUNS = [
    "a = x\n        b = a\n        c = R.add(a, b)",
    "a = x\n\n        b = a",
    "a = x\n        # a comment line\n        b = a",
    "a = x  # trailing\n        b = a",
    "a = x   \n        b = a",
    "a = x\n            b = a",  # deeper: an indentation error
    "a = x\n      b = a",  # shallower, matching no block: an indentation error
    "a = x\n        b = a\n        R.output(b)\n        c = b",
    "a = x\n        b = f(a,\n            x)\n        c = b",
    "a = x\n        b = (a\n        )",
    "a = x\n        b = a\n        c = a + b\n        d = c",
    "a = x\n\tb = a",
]


@pytest.mark.parametrize("lines", EDGE_LINES + RUNS)
def test_edge_lines_and_runs_read_the_same_with_the_shortcut(lines):
    with_it, without = both_ways(wrap(lines))
    assert with_it == without


def test_a_run_of_bindings_is_one_token():
    from byocc.text.grammar import RelaxLexer as Lexer

    text = wrap("a = x\n        b = a\n        c = R.add(a, b)")
    tokens = []
    real = Lexer.lex

    def spy(self, lexer_state, parser_state):
        for tok in real(self, lexer_state, parser_state):
            tokens.append(tok.type)
            yield tok

    Lexer.lex = spy
    try:
        parse_syntax(text, "t.relax")
    finally:
        Lexer.lex = real
    assert tokens.count("LINE_STMTS") == 1  # the four bindings (lv1 = x too), one token
