"""The lexer's shortcut for one-line bindings (``lv3: R.Tensor((2, 4), dtype="float16") =
R.add(lv1, lv2)``), the bulk of every printed module.

Where a statement may begin, :class:`~byocc.text.grammar.RelaxLexer` hands the line to
:func:`read_line_stmt` first. If the line is ``NAME [":" expr] "=" expr`` on one line, over
the small expression subset below, it comes back as the very :class:`~byocc.text.syntax.Assign`
the grammar's rules would build, positions included; the lexer reads the following lines
of the same indentation the same way while they are such bindings, and gives the parser one
``LINE_STMTS`` token for the run instead of thirty tokens and as many reductions a line.
Anything else
(another statement, an operator, a dict, a comment or a string form outside the subset, a
line that goes on past its end, a keyword where the grammar would read one) returns None and
the line is lexed as usual, so the grammar stays the one authority on syntax and every
syntax error is the grammar's.

The subset: names, attribute chains, calls with positional and keyword arguments,
subscripts, lists, tuples, parenthesised expressions, numbers, double-quoted one-line
strings, ``True``/``False``/``None``, a unary minus, and the ``TENSOR_TYPE`` token.
``tests/text/test_line_stmt.py`` checks that both ways give the same tree.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from itertools import accumulate

from ._literals import decode_string
from ._literals import parse_number
from .syntax import Assign
from .syntax import Attr
from .syntax import CallExpr
from .syntax import Keyword
from .syntax import ListExpr
from .syntax import Literal
from .syntax import LiteralValue
from .syntax import Name
from .syntax import Neg
from .syntax import Node
from .syntax import Subscript
from .syntax import TensorType
from .syntax import TupleExpr

_STRING = r'"(?:[^"\\\n]|\\.)*"'  # the subset's strings: double-quoted, on one line
_PUNCT = "()[],=.:-"
_LITERAL_WORDS = {"True": True, "False": False, "None": None}
_MAX_DEPTH = 64  # deeper brackets go the grammar's way (its errors for nesting too deep)
_CAPTURE = re.compile(r"(?<!\\)\((?!\?)")


def line_token_re(regexps: Mapping[str, str]) -> re.Pattern[str]:
    """The line tokenizer for the lexer's terminal ``regexps`` (the grammar's TENSOR_TYPE,
    NAME and NUMBER): one token per match, with the blanks before it: TENSOR_TYPE, NAME,
    NUMBER, a double-quoted string, punctuation of the subset, a comment, or any other one
    character (which declines the line), so the matches cover the line without a gap."""
    terms = [regexps[t] for t in ("TENSOR_TYPE", "NAME", "NUMBER") if t in regexps]
    plain = "|".join(_CAPTURE.sub("(?:", t) for t in terms)  # findall: two groups only
    return re.compile(rf"([ \t]*)({plain}|{_STRING}|[{re.escape(_PUNCT)}]|#.*|.)")


def _kind(tok: str) -> str:
    """The token's kind from its text (the alternative of :func:`line_token_re` it matched):
    punctuation stands for itself; ``T`` TENSOR_TYPE, ``S`` string, ``D`` number, ``#``
    comment, ``N`` name, ``?`` anything else."""
    c = tok[0]
    if len(tok) == 1:
        if c in _PUNCT:
            return c
        if c == "_" or (c.isalnum() and not c.isdecimal()):  # [^\W\d]
            return "N"
        return "D" if c.isdecimal() else "?"
    if c == '"':
        return "S"
    if c == "#":
        return "#"
    if c == "." or c.isdecimal():
        return "D"
    if c == "R" and tok[1] == ".":
        return "T"
    return "N"


_KINDS: dict[str, str] = {p: p for p in _PUNCT}
"""Kinds of tokens seen before (operator and attribute names, dtypes repeat on every line)."""


def _learn_kind(tok: str) -> str:
    kind = _kind(tok)
    if len(_KINDS) < 65536:
        _KINDS[tok] = kind
    return kind


class _Decline(Exception):
    """The line is outside the subset: lex it as usual."""


class _LineReader:
    """Recursive descent over one line's tokens (``kinds``, ``vals``, 1-based ``cols``; a
    final ``\\n`` kind ends the line)."""

    __slots__ = ("line", "keywords", "kinds", "vals", "cols", "i", "depth")

    def __init__(self, line: int, keywords: Mapping[str, str], kinds: list[str], vals: list[str],
                 cols: list[int]) -> None:
        self.line = line
        self.keywords = keywords
        self.kinds = kinds
        self.vals = vals
        self.cols = cols
        self.i = 0
        self.depth = 0

    def place(self, node: Node, i: int) -> None:
        """Give ``node`` the position of token ``i``."""
        node.line = node.end_line = self.line
        col = node.col = self.cols[i]
        node.end_col = col + len(self.vals[i])

    def expect(self, punct: str) -> int:
        """Consume ``punct``; the column after it."""
        i = self.i
        if self.kinds[i] != punct:
            raise _Decline
        self.i = i + 1
        return self.cols[i] + 1

    def name(self) -> Name:
        node = Name.__new__(Name)
        i = self.i
        node.id = self.vals[i]
        self.place(node, i)
        self.i = i + 1
        return node

    # ---- statement
    def assign(self) -> Assign:
        if self.kinds[0] != "N" or self.vals[0] in self.keywords:
            raise _Decline
        target = self.name()
        annotation = None
        if self.kinds[self.i] == ":":
            self.i += 1
            annotation = self.expr()
        self.expect("=")
        value = self.expr()
        if self.kinds[self.i] not in "\n#":
            raise _Decline
        node = Assign.__new__(Assign)
        node.target = target
        node.annotation = annotation
        node.value = value
        node.line = node.end_line = self.line
        node.col = target.col
        node.end_col = value.end_col
        return node

    # ---- expressions
    def expr(self) -> Node:
        if self.kinds[self.i] == "-":
            col = self.cols[self.i]
            self.i += 1
            operand = self.expr()
            neg = Neg(operand)
            neg.line = neg.end_line = self.line
            neg.col = col
            neg.end_col = operand.end_col
            return neg
        node = self.postfix(self.atom())
        if self.kinds[self.i] == "-":
            raise _Decline  # arithmetic: the grammar's rules read it
        return node

    def atom(self) -> Node:
        i = self.i
        kind = self.kinds[i]
        if kind == "N":
            value = self.vals[i]
            if value in self.keywords:
                if value not in _LITERAL_WORDS:
                    raise _Decline
                lit = _literal(_LITERAL_WORDS[value], value)
            else:
                return self.name()
        elif kind == "T":
            node = TensorType.__new__(TensorType)
            node.text = self.vals[i]
            self.place(node, i)
            self.i = i + 1
            return node
        elif kind == "D":
            lit = _literal(parse_number(self.vals[i]), self.vals[i])
        elif kind == "S":
            lit = _literal(decode_string(self.vals[i]), self.vals[i])
        elif kind == "(" or kind == "[":
            return self.bracketed(kind)
        else:
            raise _Decline
        self.place(lit, i)
        self.i = i + 1
        return lit

    def postfix(self, node: Node) -> Node:
        kinds = self.kinds
        while True:
            kind = kinds[self.i]
            if kind == ".":
                i = self.i + 1
                if kinds[i] != "N":
                    raise _Decline
                attr = Attr.__new__(Attr)
                attr.value = node
                attr.attr = self.vals[i]
                attr.line = node.line
                attr.col = node.col
                attr.end_line = self.line
                attr.end_col = self.cols[i] + len(self.vals[i])
                self.i = i + 1
                node = attr
            elif kind == "(":
                node = self.call(node)
            elif kind == "[":
                self.enter()
                indices = self.items("]")
                if not indices:
                    raise _Decline
                end = self.expect("]")
                self.depth -= 1
                sub = Subscript(node, indices)
                sub.line = node.line
                sub.col = node.col
                sub.end_line = self.line
                sub.end_col = end
                node = sub
            else:
                return node

    def enter(self) -> None:
        """Step over an opening bracket."""
        self.i += 1
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _Decline

    def call(self, func: Node) -> CallExpr:
        self.enter()
        kinds = self.kinds
        args: list[Node] = []
        kwargs: list[Keyword] = []
        while kinds[self.i] != ")":
            i = self.i
            if kinds[i] == "N" and kinds[i + 1] == "=" and kinds[i + 2] != "=":
                if self.vals[i] in self.keywords:
                    raise _Decline
                kw = Keyword.__new__(Keyword)
                kw.name = self.vals[i]
                self.i = i + 2
                value = self.expr()
                kw.value = value
                kw.line = kw.end_line = self.line
                kw.col = self.cols[i]
                kw.end_col = value.end_col
                kwargs.append(kw)
            else:
                if kwargs:
                    raise _Decline  # a positional argument after a keyword: the grammar's error
                args.append(self.expr())
            kind = kinds[self.i]
            if kind == ",":
                self.i += 1
            elif kind != ")":
                raise _Decline
        end = self.expect(")")
        self.depth -= 1
        node = CallExpr(func, args, kwargs)
        node.line = func.line
        node.col = func.col
        node.end_line = self.line
        node.end_col = end
        return node

    def items(self, close: str) -> list[Node]:
        """Comma-separated expressions up to ``close`` (not consumed), a trailing comma allowed."""
        kinds = self.kinds
        items: list[Node] = []
        while kinds[self.i] != close:
            items.append(self.expr())
            kind = kinds[self.i]
            if kind == ",":
                self.i += 1
            elif kind != close:
                raise _Decline
        return items

    def bracketed(self, open_: str) -> Node:
        col = self.cols[self.i]
        self.enter()
        if open_ == "[":
            node: Node = ListExpr(self.items("]"))
            end = self.expect("]")
        else:
            if self.kinds[self.i] == ")":
                node = TupleExpr([])
            else:
                first = self.expr()
                if self.kinds[self.i] == ")":  # `(x)`: the expression itself
                    self.i += 1
                    self.depth -= 1
                    return first
                self.expect(",")
                node = TupleExpr([first, *self.items(")")])
            end = self.expect(")")
        self.depth -= 1
        node.line = node.end_line = self.line
        node.col = col
        node.end_col = end
        return node


def _literal(value: LiteralValue, raw: str) -> Literal:
    """A Literal without its position yet (:meth:`_LineReader.place` gives it)."""
    lit = Literal.__new__(Literal)
    lit.value = value
    lit.raw = raw
    return lit


def read_line_stmt(text: str, pos: int, line: int, line_start: int, keywords: Mapping[str, str],
                   token_re: re.Pattern[str]) -> tuple[Assign, int] | None:
    """The binding that starts at ``pos`` (the first character of line ``line``, which starts
    at offset ``line_start``) and the offset where it ends, if the line is one binding of the
    subset; else None."""
    eol = text.find("\n", pos)
    if eol < 0:
        return None
    pairs = token_re.findall(text, pos, eol)
    vals = [tok for _, tok in pairs]
    # each token's column: where the one before ends, plus its own blanks
    ends = accumulate([len(blank) + len(tok) for blank, tok in pairs], initial=pos - line_start + 1)
    cols = [end + len(blank) for end, (blank, _) in zip(ends, pairs)]
    known = _KINDS.get
    kinds = [known(tok) or _learn_kind(tok) for tok in vals]
    kinds.extend(("\n", "\n", "\n"))  # the end, and room for the keyword-argument lookahead
    try:
        reader = _LineReader(line, keywords, kinds, vals, cols)
        node = reader.assign()
    except _Decline:
        return None
    last = reader.i - 1  # the statement's last token (a `)` may end it after its value)
    return node, line_start + cols[last] + len(vals[last]) - 1


__all__ = ["read_line_stmt"]
