"""The grammar file and its lexer: conflict-free LALR tables, contextual keywords, the
one-token tensor type, positions."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from byocc.ir import TensorStructInfo
from byocc.text import parse_module
from byocc.text.grammar import LalrDriver
from byocc.text.grammar import RelaxIndenter
from byocc.text.grammar import RelaxLexer
from byocc.text.grammar import load_grammar_text
from byocc.text.parser import parse_syntax

ROOT = Path(__file__).resolve().parents[2]


def test_grammar_text_is_the_shipped_file():
    assert load_grammar_text() == (ROOT / "grammars" / "relax.lark").read_text()


def test_lalr_tables_have_no_conflicts(caplog):
    from lark import Lark
    from lark import logger

    level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        with caplog.at_level(logging.DEBUG, logger="lark"):
            Lark(load_grammar_text(), parser="lalr", lexer=RelaxLexer, postlex=RelaxIndenter(),
                 start=["start", "expr"], maybe_placeholders=True, debug=True)
    finally:
        logger.setLevel(level)
    conflicts = [r.getMessage() for r in caplog.records if "conflict" in r.getMessage().lower()]
    assert conflicts == []


def test_driver_matches_lark_parse():
    """The byocc driver and Lark's own LALR loop build the same syntax tree."""
    from byocc.text.grammar import get_lark
    from byocc.text.syntax import SyntaxBuilder

    text = 'x: R.Tensor((2, n), dtype="float32") = R.add(a, (b, [1, -2 * n]), k={"a": None})\n'
    ours = parse_syntax(text)
    theirs = get_lark(SyntaxBuilder).parse(text, start="start")
    assert _dump(ours) == _dump(theirs)
    assert isinstance(LalrDriver(get_lark(SyntaxBuilder)).parse(text), list)


def _dump(node):
    if isinstance(node, (list, tuple)):
        return [_dump(x) for x in node]
    slots = [s for c in type(node).__mro__ for s in getattr(c, "__slots__", ())]
    if not slots or isinstance(node, str):
        return node
    return (type(node).__name__, {s: _dump(getattr(node, s, None)) for s in slots})


def test_keywords_are_contextual():
    text = """\
@R.function
def main(if: R.Tensor((2,), dtype="float32"), as: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
    from_: R.Tensor((2,), dtype="float32") = R.add(if, as)
    return from_
"""
    func = parse_module(text)["main"]
    assert [p.name_hint for p in func.params] == ["if", "as"]


@pytest.mark.parametrize("spelling", [
    'R.Tensor((2, n), dtype="float32")',      # the one-token form
    'R.Tensor((2, n), "float32")',
    'R.Tensor(shape=(2, n), dtype="float32")',
    'R.Tensor(\n        (2, n),\n        dtype="float32",\n    )',
    'R.Tensor((2, "n"), dtype="float32")',
])
def test_tensor_type_spellings_agree(spelling):
    text = f"""\
n = TypeVar("n")
@R.function
def main(x: {spelling}) -> R.Tensor((2, n), dtype="float32"):
    return x
"""
    func = parse_module(text)["main"]
    si = func.params[0].struct_info
    assert isinstance(si, TensorStructInfo) and si.dtype == "float32" and si.shape[0] == 2
    assert si.shape[1] is func.ret_struct_info.shape[1]


def test_positions_are_one_based_and_survive_crlf_and_comments():
    text = "# c\r\n@R.function  # c\r\ndef main(x: R.Tensor((2,), dtype=\"float32\")):\r\n    y = R.add(x, x)\r\n    return y"
    (func,) = parse_syntax(text)
    assert (func.line, func.col) == (3, 5)
    binding = func.body[0]
    assert (binding.line, binding.col, binding.value.line, binding.value.col) == (4, 5, 4, 9)
    assert (binding.value.end_line, binding.value.end_col) == (4, 20)


# ---------------------------------------------------------------------------- prebuilt tables
def _chain(f):
    """A callback's wrappers, outermost first, down to the transformer method or tree."""
    out = []
    while True:
        kind = type(f).__name__
        if hasattr(f, "to_include"):
            out.append((kind, [tuple(x) for x in f.to_include], getattr(f, "append_none", None)))
            f = f.node_builder
        elif hasattr(f, "node_builder"):
            out.append((kind,))
            f = f.node_builder
        elif kind == "partial":
            return out + [(kind, f.args)]
        else:
            return out + [(kind, f.__func__.__name__ if hasattr(f, "__func__") else f.__name__)]


def test_prebuilt_tables_are_current():
    """byocc/text/lalr_tables.json is what Lark's analysis of the shipped grammar gives
    (regenerate it with `python -m byocc.text.grammar` after editing the grammar)."""
    from byocc.text import grammar as grammar_module
    from byocc.text.grammar import TABLES_FILE
    from byocc.text.grammar import get_lark
    from byocc.text.grammar import parser_tables
    from byocc.text.grammar import prebuilt_tables
    from byocc.text.grammar import tables_from_json
    from byocc.text.grammar import tables_to_json
    from byocc.text.syntax import SyntaxBuilder

    text = (Path(grammar_module.__file__).with_name(TABLES_FILE)).read_text(encoding="utf-8")
    assert tables_to_json(parser_tables(get_lark(SyntaxBuilder))) == text, \
        "stale byocc/text/lalr_tables.json: run python -m byocc.text.grammar"
    loaded = prebuilt_tables()
    assert loaded is not None and loaded == tables_from_json(text)
    assert sorted(loaded["states"]) == list(range(len(loaded["states"])))  # int state numbers


def test_prebuilt_callbacks_are_lark_callbacks():
    """The callbacks made from the tables wrap the same methods in the same child filters
    as Lark's ParseTreeBuilder, rule by rule."""
    from byocc.text.grammar import _export
    from byocc.text.grammar import build_callbacks
    from byocc.text.grammar import get_lark
    from byocc.text.syntax import SyntaxBuilder

    lark = get_lark(SyntaxBuilder)
    tables, rules = _export(lark)
    theirs = lark.parser.parser.parser.callbacks
    ours = build_callbacks(tables["rules"], SyntaxBuilder())
    assert [_chain(f) for f in ours] == [_chain(theirs[rule]) for rule in rules]


def test_process_driver_uses_prebuilt_tables_and_parses_as_lark():
    from byocc.text.grammar import get_driver
    from byocc.text.grammar import get_lark
    from byocc.text.syntax import SyntaxBuilder

    driver = get_driver(SyntaxBuilder)
    assert driver.lark is None  # no grammar analysis at start-up
    text = (ROOT / "samples" / "transformer_block_fp16.relax").read_text()
    assert _dump(driver.parse(text)) == _dump(LalrDriver(get_lark(SyntaxBuilder)).parse(text))
