"""The Relax grammar (``grammars/relax.lark``), its lexer and indenter, and the Lark parser.

docs/textual-ir.md#grammar. The grammar file is the one authority on syntax: the LALR
tables come from it, and the lexer below derives its punctuation and keyword tables from its
terminals. The lexer is byocc's own (a single compiled regular expression) only because Lark's
generic lexer costs several microseconds per token; it behaves as Lark's contextual lexer does
for this grammar: a word is a keyword only where the parser state accepts that keyword, so
``as``, ``from`` or ``if`` stay ordinary names elsewhere (a parameter may be called ``if``).

Input normalisation (docs/textual-ir.md#input-normalisation): CRLF and CR become LF, and a final newline is added.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import cast

from lark import Lark
from lark import Token
from lark import Transformer
from lark.exceptions import UnexpectedCharacters
from lark.exceptions import UnexpectedInput
from lark.exceptions import UnexpectedToken
from lark.indenter import PythonIndenter
from lark.lexer import Lexer

from byocc.ir import ParseError
from byocc.ir import Span

from ._line_stmt import line_token_re
from ._line_stmt import read_line_stmt

if TYPE_CHECKING:
    from lark.common import LexerConf
    from lark.grammar import Rule

#: The plain-data tables of :func:`parser_tables` (ints, strings, tuples, lists, dicts).
Tables = dict[str, Any]
#: A reduction callback: the rule's children -> its value.
Callback = Callable[[list[Any]], Any]

GRAMMAR_RESOURCE = "grammars/relax.lark"


def load_grammar_text() -> str:
    """The grammar: package data ``byocc/grammars/relax.lark`` if installed, else the file in
    the source tree's top-level ``grammars/`` folder."""
    try:
        from importlib import resources

        res = resources.files("byocc").joinpath(GRAMMAR_RESOURCE)
        if res.is_file():
            return res.read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError, OSError):
        pass
    path = Path(__file__).resolve().parents[2] / GRAMMAR_RESOURCE
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:  # a broken installation, not bad input
        from byocc.ir import InternalError

        raise InternalError(f"cannot read the Relax grammar ({GRAMMAR_RESOURCE}): {exc}") from exc


def normalize_source(text: str) -> str:
    """No UTF-8 byte-order mark, CRLF/CR to LF, and a final newline (the indenter needs one
    to close the last line)."""
    if text.startswith("\ufeff"):  # editors on Windows write one; Python's tokenizer skips it
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.endswith("\n"):
        text += "\n"
    return text


class RelaxIndenter(PythonIndenter):
    """Python-style INDENT/DEDENT for the ``_NL`` terminal; newlines inside brackets vanish.

    Differs from Lark's :class:`PythonIndenter` only in its errors: a dedent to a column
    that opens no block raises a located :class:`ParseError` ("inconsistent indentation"),
    and a stray closing bracket is left for the parser to reject.
    """

    NL_type = "_NL"
    source = "<string>"

    def handle_NL(self, token: Token) -> Iterator[Token]:
        if self.paren_level > 0:
            return
        yield token
        indent_str = token.rsplit("\n", 1)[1]
        indent = indent_str.count(" ") + indent_str.count("\t") * self.tab_len
        levels = self.indent_level
        if indent > levels[-1]:
            levels.append(indent)
            yield self._at_line_start(self.INDENT_type, indent_str, token)
        else:
            while indent < levels[-1]:
                levels.pop()
                yield self._at_line_start(self.DEDENT_type, indent_str, token)
            if indent != levels[-1]:
                line = token.end_line or token.line or 1
                raise ParseError(
                    "inconsistent indentation: this line's indentation matches no enclosing block",
                    Span(self.source, line, len(indent_str) + 1, line, len(indent_str) + 2),
                )

    @staticmethod
    def _at_line_start(ttype: str, indent_str: str, nl: Token) -> Token:
        """An INDENT/DEDENT token placed where the new line's first token starts."""
        line = nl.end_line or nl.line or 1
        col = len(indent_str) + 1
        return Token(ttype, indent_str, nl.end_pos, line, col, line, col + 1, nl.end_pos)

    def process(self, stream: Iterator[Token], end: bool = False) -> Iterator[Token]:
        """The token stream with INDENT/DEDENT; ``end``: then a ``$END`` token placed at the
        last token (what :class:`LalrDriver` runs on; Lark's own parser adds its own)."""
        self.paren_level = 0
        self.indent_level = [0]
        self.open_brackets: list[Token] = []
        return self._process(stream, end)

    def _process(self, stream: Iterator[Token], end: bool = False) -> Iterator[Token]:
        token = None
        open_types = self.OPEN_PAREN_types
        close_types = self.CLOSE_PAREN_types
        nl_type = self.NL_type
        brackets = self.open_brackets
        for token in stream:
            ttype = token.type
            if ttype == nl_type:
                yield from self.handle_NL(token)
                continue
            yield token
            if ttype in open_types:
                self.paren_level += 1
                brackets.append(token)
            elif ttype in close_types and self.paren_level > 0:
                self.paren_level -= 1
                brackets.pop()
        while len(self.indent_level) > 1:
            self.indent_level.pop()
            if token is not None:
                yield Token.new_borrow_pos(self.DEDENT_type, "", token)
            else:
                yield Token(self.DEDENT_type, "", 0, 1, 1, 1, 1, 0)
        if end:
            if token is not None:
                yield Token.new_borrow_pos("$END", "", token)
            else:
                yield Token("$END", "", 0, 1, 1, 1, 1, 0)


# --------------------------------------------------------------------------- lexer
_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _master_regexp(regexps: Mapping[str, str], ignore: Sequence[str], punct: Mapping[str, str]) -> re.Pattern[str]:
    """One regular expression for every token, built from the grammar's terminals: optional
    blanks (the first ``%ignore``), then a line continuation (the second ``%ignore``), a
    newline run ``_NL``, NAME, NUMBER, STRING, any punctuation, or the end of the text."""
    blank, continuation = (regexps[name] for name in ignore)
    ops = "|".join(re.escape(p) for p in sorted(punct, key=len, reverse=True))
    return re.compile(
        f"(?:{blank})?(?:(?P<WS>{continuation})|(?P<NL>{regexps['_NL']})|(?P<NAME>{regexps['NAME']})"
        f"|(?P<NUMBER>{regexps['NUMBER']})|(?P<STRING>{regexps['STRING']})|(?P<OP>{ops})|(?P<EOF>\\Z))"
    )


def lexer_tables(lexer_conf: LexerConf) -> Tables:
    """What :class:`RelaxLexer` reads from Lark's lexer configuration, as plain data:
    keyword and punctuation terminals by their text, the regular expressions of the others,
    and the ``%ignore`` terminal names."""
    keywords: dict[str, str] = {}
    punct: dict[str, str] = {}
    regexps: dict[str, str] = {}
    for term in lexer_conf.terminals:
        pattern = term.pattern
        if pattern.type != "str":
            regexps[term.name] = pattern.to_regexp()
        elif _WORD_RE.match(pattern.value):
            keywords[pattern.value] = term.name
        else:
            punct[pattern.value] = term.name
    return {"keywords": keywords, "punct": punct, "regexps": regexps, "ignore": list(lexer_conf.ignore)}


class _LineStmtsToken(Token):
    """The ``LINE_STMTS`` token: consecutive one-line bindings of one block, read by
    :mod:`._line_stmt` (``nodes``: their statements)."""

    __slots__ = ("nodes",)

    nodes: list


class RelaxLexer(Lexer):
    """Contextual lexer for ``relax.lark`` (Lark custom-lexer interface, version 2).

    Where a statement may begin, one-line bindings are read by
    :func:`~byocc.text._line_stmt.read_line_stmt`, consecutive ones of the same indentation
    into one ``LINE_STMTS`` token that carries the statements the grammar would build
    (``line_stmts = False`` turns that off).
    """

    __future_interface__ = 2
    line_stmts = True

    def __init__(self, lexer_conf: LexerConf) -> None:
        self._setup(lexer_tables(lexer_conf))

    @classmethod
    def from_tables(cls, tables: Tables) -> RelaxLexer:
        """The lexer for :func:`lexer_tables`' output (no Lark lexer configuration needed)."""
        lexer = cls.__new__(cls)
        lexer._setup(tables)
        return lexer

    def _setup(self, tables: Tables) -> None:
        self.keywords: dict[str, str] = dict(tables["keywords"])
        self.punct: dict[str, str] = dict(tables["punct"])
        regexps: dict[str, str] = tables["regexps"]
        self.tensor_re = re.compile(regexps["TENSOR_TYPE"]) if "TENSOR_TYPE" in regexps else None
        self.line_re = line_token_re(regexps)
        self.token_re = _master_regexp(regexps, tables["ignore"], self.punct)

    def lex(self, lexer_state: Any, parser_state: Any) -> Iterator[Token]:
        """Tokens of ``lexer_state.text``; ``parser_state`` (Lark's, or the driver's
        :class:`_ParserState`) tells which keywords the parser accepts at each point."""
        text = lexer_state.text
        if not isinstance(text, str):  # a lark TextSlice
            text = text.text
        states = parser_state.parse_conf.states
        state_stack = parser_state.state_stack
        keywords = self.keywords
        punct = self.punct
        tensor_match = self.tensor_re.match if self.tensor_re is not None else None
        line_stmts = self.line_stmts
        line_re = self.line_re
        startswith = text.startswith
        new = str.__new__
        match = self.token_re.match
        line = 1
        line_start = 0
        pos = 0
        n = len(text)
        while pos < n:
            m = match(text, pos)
            if m is None:
                pos = len(text) - len(text[pos:].lstrip(" \t\f"))
                raise UnexpectedCharacters(text, pos, line, pos - line_start + 1)
            kind: str = m.lastgroup  # type: ignore[assignment]  # every alternative is a named group
            if kind == "EOF":
                break
            pos = m.start(kind)
            value = m.group(kind)
            end = m.end()
            if kind == "WS":  # a backslash line continuation
                line += 1
                line_start = end
                pos = end
                continue
            ttype: str | None
            if kind == "NAME":
                ttype = "NAME"
                if value == "R" and tensor_match is not None and startswith(".Tensor((", end):
                    tm = tensor_match(text, pos)
                    if tm is not None and "TENSOR_TYPE" in states[state_stack[-1]]:
                        ttype = "TENSOR_TYPE"
                        value = tm.group()
                        end = tm.end()
                else:
                    kw = keywords.get(value)
                    if kw is not None and kw in states[state_stack[-1]]:
                        ttype = kw
            elif kind == "OP":
                ttype = punct.get(value)
                if ttype is None:  # punctuation the grammar does not use
                    raise UnexpectedCharacters(text, pos, line, pos - line_start + 1)
            elif kind == "NL":
                ttype = "_NL"
            else:
                ttype = kind
            tok = new(Token, value)
            tok.type = ttype
            tok.value = value
            tok.start_pos = pos
            tok.line = line
            tok.column = pos - line_start + 1
            tok.end_pos = end
            if kind == "NL" or (kind == "STRING" and "\n" in value):  # triple-quoted strings
                nls = value.count("\n")
                if nls:
                    line += nls
                    line_start = pos + value.rindex("\n") + 1
                tok.end_line = line
                tok.end_column = end - line_start + 1
            else:
                tok.end_line = line
                tok.end_column = end - line_start + 1
            pos = end
            yield tok
            if kind == "NL" and line_stmts and "LINE_STMTS" in states[state_stack[-1]]:
                # a statement may begin: one-line bindings are read here, a run of them (the
                # following lines of the same indentation) in one token
                got = read_line_stmt(text, pos, line, line_start, keywords, line_re)
                if got is not None:
                    nodes = [got[0]]
                    first_line, first_col, start = line, pos - line_start + 1, pos
                    end = got[1]
                    indent = text[line_start:pos]
                    while text.startswith("\n", end) and text.startswith(indent, end + 1):
                        nxt = end + 1 + len(indent)
                        if nxt >= n or text[nxt] in " \t\n#":  # another indentation, a blank line
                            break
                        more = read_line_stmt(text, nxt, line + 1, end + 1, keywords, line_re)
                        if more is None:
                            break
                        line += 1
                        line_start = end + 1
                        nodes.append(more[0])
                        end = more[1]
                    run = _LineStmtsToken("LINE_STMTS", "", start, first_line, first_col, line,
                                          end - line_start + 1, end)
                    run.nodes = nodes
                    pos = end
                    yield run


# --------------------------------------------------------------------------- LALR driver
class _ParserState:
    """What the contextual lexer reads while the driver runs (Lark's ParserState shape)."""

    __slots__ = ("parse_conf", "states", "state_stack")

    def __init__(self, states: dict[int, dict[str, Any]], state_stack: list[int]) -> None:
        self.parse_conf = self
        self.states = states
        self.state_stack = state_stack


class _LexerState:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class LalrDriver:
    """Runs Lark's LALR(1) tables and tree-shaping callbacks over byocc's token stream.

    Equivalent to ``Lark.parse`` for this grammar (same tables, same callbacks, same
    errors), with a tighter loop: Lark's general loop spends most of its time on
    bookkeeping this grammar does not need (about 40% of a parse).

    Built from a :class:`~lark.Lark` parser, or (:meth:`from_tables`) from the plain data
    :func:`parser_tables` exports, with no Lark object at all: that is how the prebuilt
    tables of ``lalr_tables.json`` start the parser without analysing the grammar.
    """

    def __init__(self, lark: Lark) -> None:
        tables, rules = _export(lark)
        callbacks = lark.parser.parser.parser.callbacks
        self.lark: Lark | None = lark
        self._setup(tables, [callbacks[rule] for rule in rules], RelaxLexer(lark.parser.lexer_conf))

    @classmethod
    def from_tables(cls, tables: Tables, transformer: Transformer) -> LalrDriver:
        """A driver for :func:`parser_tables`' output whose values come from the inline
        ``transformer`` (callbacks made exactly as Lark's ``ParseTreeBuilder`` makes them)."""
        driver = cls.__new__(cls)
        driver.lark = None
        driver._setup(tables, build_callbacks(tables["rules"], transformer),
                      RelaxLexer.from_tables(tables["lexer"]))
        return driver

    def _setup(self, tables: Tables, callbacks: list[Callback], lexer: RelaxLexer) -> None:
        self.lexer = lexer
        self.start_states = dict(tables["start_states"])
        self.end_states = dict(tables["end_states"])
        # row[symbol] = next state (int) for a shift or a goto, or (size, callback, origin)
        # for a reduction; callback None marks a `?rule` unit reduction that passes its one
        # child through unchanged.
        infos = [(size, None if unit else cb, origin)
                 for (_, origin, size, unit, _, _), cb in zip(tables["rules"], callbacks)]
        self.states: dict[int, dict[str, Any]] = {
            state: {sym: arg if arg >= 0 else infos[-1 - arg] for sym, arg in actions.items()}
            for state, actions in tables["states"].items()
        }

    def parse(self, text: str, start: str = "start") -> Any:
        """The value the transformer builds for ``text`` from the rule ``start``."""
        states = self.states
        state = self.start_states[start]
        state_stack = [state]
        end_state = self.end_states[start]
        value_stack: list[Any] = []
        pstate = _ParserState(states, state_stack)
        indenter = RelaxIndenter()  # per parse: it holds state
        tokens = indenter.process(self.lexer.lex(_LexerState(text), pstate), end=True)
        try:
            return self._run(tokens, states, state, state_stack, value_stack, end_state)
        except UnexpectedInput as err:
            err.open_brackets = list(indenter.open_brackets)  # type: ignore[attr-defined]  # for the message
            raise

    @staticmethod
    def _run(tokens: Iterator[Token], states: dict[int, dict[str, Any]], state: int,
             state_stack: list[int], value_stack: list[Any], end_state: int) -> Any:
        """Shift and reduce over ``tokens`` (which end with ``$END``) until ``end_state``."""
        push_state = state_stack.append
        push_value = value_stack.append
        for token in tokens:
            ttype = token.type
            while True:
                action = states[state].get(ttype)
                if action.__class__ is int and ttype != "$END":
                    state = action
                    push_state(state)
                    push_value(token)
                    break
                if action is None or action.__class__ is int:
                    raise UnexpectedToken(token, _expected(states[state]))
                size, callback, origin = action
                if callback is None:  # unit reduction: the value stays
                    del state_stack[-1]
                else:
                    if size:
                        children = value_stack[-size:]
                        del state_stack[-size:]
                        del value_stack[-size:]
                    else:
                        children = []
                    push_value(callback(children))
                state = states[state_stack[-1]][origin]
                push_state(state)
                if state == end_state and ttype == "$END":
                    return value_stack[-1]
        raise AssertionError("the token stream ends with $END")  # pragma: no cover


def _expected(row: Mapping[str, object]) -> set[str]:
    return {k for k in row if k.isupper() or k.startswith("_") or k == "$END"}


def _cache_path() -> str | bool:
    """Where Lark keeps the analysed grammar between runs (it checks a hash of the grammar
    before use): the user's cache folder; False (no cache) if that is not writable."""
    import os

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "byocc")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return False
    if not os.access(folder, os.W_OK):
        return False
    import sys

    import lark

    py = "{}{}".format(*sys.version_info[:2])
    return os.path.join(folder, f"relax-grammar-lark{lark.__version__}-py{py}.cache")


# --------------------------------------------------------------------------- prebuilt tables
TABLES_FORMAT = 1
"""Version of the :func:`parser_tables` layout (bump it when the layout changes)."""


def parser_tables(lark: Lark) -> Tables:
    """The LALR tables, rule callbacks and lexer terminals of ``lark`` as plain data
    (ints, strings, tuples, lists, dicts), enough to build a :class:`LalrDriver`:

    - ``states``: state -> {symbol: n}, ``n >= 0`` a shift or goto to state ``n``,
      ``n < 0`` a reduction by rule ``-1 - n``;
    - ``rules``: per rule ``(callback name, origin, size, unit, expand1, child filter)``,
      the child filter ``None``, ``(to_include,)`` (Lark's ``ChildFilterLALR_NoPlaceholders``)
      or ``(to_include, append_none)`` (``ChildFilterLALR``); ``unit``: a ``?rule`` of one
      kept child, reduced by passing that child through;
    - ``start_states``, ``end_states``, ``lexer`` (:func:`lexer_tables`), ``grammar_sha256``.
    """
    return _export(lark)[0]


def _export(lark: Lark) -> tuple[Tables, list[Rule]]:
    """:func:`parser_tables` and the Lark rules in the order of ``tables["rules"]``.

    Lark numbers states differently from one process to the next (its analysis iterates
    over sets), so states are renumbered in breadth-first order from the start states
    (symbols in sorted order) and rules by first reduction: the same grammar always gives
    the same tables."""
    from lark.parse_tree_builder import ExpandSingleChild
    from lark.parse_tree_builder import maybe_create_child_filter

    frontend = lark.parser
    table = frontend.parser._parse_table
    callbacks = frontend.parser.parser.callbacks
    lark_states = {state: {str(key): act for key, act in actions.items()}
                   for state, actions in table.states.items()}
    number: dict[Any, int] = {}
    order: list[Any] = []

    def visit(state: Any) -> int:
        n = number.get(state)
        if n is None:
            n = number[state] = len(order)
            order.append(state)
        return n

    for name in sorted(table.start_states):
        visit(table.start_states[name])
    index: dict[Rule, int] = {}
    rules: list[Rule] = []
    specs: list[tuple[Any, ...]] = []
    states: dict[int, dict[str, int]] = {}
    i = 0
    while i < len(order):
        state = order[i]
        i += 1
        row: dict[str, int] = {}
        for key in sorted(lark_states[state]):
            action, arg = lark_states[state][key]
            if action.name == "Shift":
                row[key] = visit(arg)
                continue
            k = index.get(arg)
            if k is None:
                k = index[arg] = len(rules)
                rules.append(arg)
                specs.append(_rule_spec(arg, callbacks[arg], ExpandSingleChild, maybe_create_child_filter))
            row[key] = -1 - k
        states[number[state]] = row
    for state in table.end_states.values():
        visit(state)
    if len(states) != len(lark_states) or len(order) != len(lark_states):
        raise AssertionError("LALR states unreachable from the start states")
    tables = {
        "format": TABLES_FORMAT,
        "grammar_sha256": grammar_digest(lark.source_grammar),
        "start_states": {name: number[s] for name, s in sorted(table.start_states.items())},
        "end_states": {name: number[s] for name, s in sorted(table.end_states.items())},
        "states": states,
        "rules": specs,
        "lexer": lexer_tables(frontend.lexer_conf),
    }
    return tables, rules


def _rule_spec(rule: Rule, callback: Callback, expand_single_child: type,
               maybe_create_child_filter: Callable[..., Any]) -> tuple[Any, ...]:
    options = rule.options
    name = rule.alias or options.template_source or rule.origin.name
    size = len(rule.expansion)
    unit = (size == 1 and isinstance(callback, expand_single_child)
            and not getattr(rule.expansion[0], "filter_out", False))
    expand1 = bool(options.expand1 and not rule.alias)
    made = maybe_create_child_filter(rule.expansion, options.keep_all_tokens, False, options.empty_indices)
    child_filter: tuple[Any, ...] | None = None
    if made is not None:
        child_filter = tuple(tuple(x) for x in made.args[0]),
        if len(made.args) > 1:
            child_filter += (made.args[1],)
    return (str(name), str(rule.origin.name), size, unit, expand1, child_filter)


def build_callbacks(specs: Iterable[Sequence[Any]], transformer: Transformer) -> list[Callback]:
    """The reduction callbacks for ``specs`` (:func:`parser_tables`' ``rules``), made as
    Lark's ``ParseTreeBuilder.create_callback`` makes them for an inline transformer
    without ``propagate_positions``: the transformer's method of the rule's name (or a tree
    through ``__default__``), wrapped in ``ExpandSingleChild`` for a ``?rule`` and then in
    the rule's child filter."""
    from functools import partial

    from lark.parse_tree_builder import ChildFilterLALR
    from lark.parse_tree_builder import ChildFilterLALR_NoPlaceholders
    from lark.parse_tree_builder import ExpandSingleChild
    from lark.parse_tree_builder import apply_visit_wrapper
    from lark.parse_tree_builder import inplace_transformer
    from lark.tree import Tree
    from lark.visitors import Transformer_InPlace

    default_handler = getattr(transformer, "__default__", None)
    default_callback: Callable[[str, list[Any]], Any]
    if default_handler:
        def default_callback(data: str, children: list[Any]) -> Any:
            return default_handler(data, children, None)
    else:
        default_callback = Tree
    out: list[Callback] = []
    for name, _origin, _size, _unit, expand1, child_filter in specs:
        try:
            f = getattr(transformer, name)
            wrapper = getattr(f, "visit_wrapper", None)
            if wrapper is not None:
                f = apply_visit_wrapper(f, name, wrapper)
            elif isinstance(transformer, Transformer_InPlace):
                f = inplace_transformer(f)
        except AttributeError:
            f = partial(default_callback, name)
        if expand1:
            f = ExpandSingleChild(f)
        if child_filter is not None:
            if len(child_filter) == 1:
                f = ChildFilterLALR_NoPlaceholders(list(child_filter[0]), f)
            else:
                f = ChildFilterLALR(list(child_filter[0]), child_filter[1], f)
        out.append(f)
    return out


def grammar_digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


TABLES_FILE = "lalr_tables.json"
"""The prebuilt tables, package data of ``byocc.text`` beside this module."""


def tables_from_json(text: str) -> Tables:
    """:func:`parser_tables`' data read back from its JSON form (state numbers are the
    keys JSON writes as strings; tuples come back as lists, which the driver reads alike)."""
    import json

    tables = json.loads(text)
    tables["states"] = {int(state): actions for state, actions in tables["states"].items()}
    return cast(Tables, tables)


@cache
def prebuilt_tables() -> Tables | None:
    """The tables of ``lalr_tables.json`` when they were made from the grammar in use (same
    digest, same layout); None otherwise (then the grammar is analysed by Lark)."""
    try:
        text = Path(__file__).with_name(TABLES_FILE).read_text(encoding="utf-8")
    except OSError:
        return None
    tables = tables_from_json(text)
    if tables.get("format") != TABLES_FORMAT or tables.get("grammar_sha256") != grammar_digest(load_grammar_text()):
        return None
    return tables


def tables_to_json(tables: Tables) -> str:
    """The JSON text of :func:`parser_tables`' data: a line per top-level key and per parser
    state, so a grammar change shows as a readable diff."""
    import json

    def dump(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"))

    lines = [f"{dump(key)}:{dump(value)}" for key, value in tables.items() if key != "states"]
    states = ",\n".join(f"{dump(str(state))}:{dump(actions)}" for state, actions in tables["states"].items())
    return "{\n" + ",\n".join(lines) + ',\n"states":{\n' + states + "\n}}\n"


def write_tables(path: str | Path | None = None) -> Path:
    """(Re)write ``lalr_tables.json`` from the grammar; run ``python -m byocc.text.grammar``
    after editing ``grammars/relax.lark`` (a test fails while the file is stale)."""
    target = Path(path) if path is not None else Path(__file__).with_name(TABLES_FILE)
    target.write_text(tables_to_json(parser_tables(get_lark())), encoding="utf-8")
    return target


@cache
def get_driver(transformer_factory: Callable[[], Transformer]) -> LalrDriver:
    """The process-wide :class:`LalrDriver` for ``transformer_factory``'s inline transformer:
    from the prebuilt tables when they are current, else from Lark's analysis."""
    tables = prebuilt_tables()
    if tables is not None:
        return LalrDriver.from_tables(tables, transformer_factory())
    return LalrDriver(get_lark(transformer_factory))


@cache
def get_lark(transformer_factory: Callable[[], Transformer] | None = None) -> Lark:
    """The process-wide Lark LALR parser (start symbols ``start`` and ``expr``).

    With ``transformer_factory`` the parser builds values through that inline transformer
    instead of a parse tree.
    """
    kwargs: dict[str, Any] = {}
    if transformer_factory is not None:
        kwargs["transformer"] = transformer_factory()
    return Lark(
        load_grammar_text(),
        parser="lalr",
        lexer=RelaxLexer,
        postlex=RelaxIndenter(),
        start=["start", "expr"],
        maybe_placeholders=True,
        cache=_cache_path(),
        **kwargs,
    )


__all__ = [
    "LalrDriver", "RelaxIndenter", "RelaxLexer", "TABLES_FORMAT", "build_callbacks", "get_driver",
    "get_lark", "grammar_digest", "lexer_tables", "load_grammar_text", "normalize_source",
    "parser_tables", "prebuilt_tables", "write_tables",
]


if __name__ == "__main__":
    print(f"wrote {write_tables()}")
