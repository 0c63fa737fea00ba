"""The lexer's shortcut for one-line bindings (``lv3: R.Tensor((2, 4), dtype="float16") =
R.add(lv1, lv2)``), the bulk of every printed module.

Where a statement may begin, :class:`~byocc.text.grammar.RelaxLexer` hands the line to
:func:`read_line_stmt` first. If the line is ``NAME [":" expr] "=" expr`` on one line, over
the small expression subset below, it comes back as the very :class:`~byocc.text.syntax.Assign`
the grammar's rules would build, positions included, and the lexer gives the parser one
``LINE_STMT`` token for it instead of thirty tokens and as many reductions. Anything else
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

from ._literals import decode_string
from ._literals import parse_number
from .syntax import Assign
from .syntax import Attr
from .syntax import CallExpr
from .syntax import Keyword
from .syntax import ListExpr
from .syntax import Literal
from .syntax import Name
from .syntax import Neg
from .syntax import Node
from .syntax import Subscript
from .syntax import TupleExpr

_NAME = r"[^\W\d]\w*"
_TOKEN = re.compile(
    r"[ \t]*(?:(?P<NAME>" + _NAME + r")"
    r"|(?P<NUMBER>(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+)(?![\w.])"
    r'|(?P<STRING>"(?:[^"\\\n]|\\.)*")(?!")'
    r"|(?P<P>[()\[\],=.:\-]))"
)
#: What may follow the statement on its line: blanks, then the newline or a comment.
_LINE_END = re.compile(r"[ \t]*[\n#]")
#: After a name in a call: ``=`` (not ``==``) makes it a keyword argument.
_KWARG_EQ = re.compile(r"[ \t]*=(?!=)")
_MAX_DEPTH = 64  # deeper brackets go the grammar's way (its errors for nesting too deep)
_LITERAL_WORDS = {"True": True, "False": False, "None": None}


class _Decline(Exception):
    """The line is outside the subset: lex it as usual."""


class _LineReader:
    __slots__ = ("text", "line", "line_start", "keywords", "tensor_match", "pos", "kind", "value", "start",
                 "depth")

    def __init__(self, text: str, pos: int, line: int, line_start: int, keywords: Mapping[str, str],
                 tensor_re: re.Pattern[str] | None) -> None:
        self.text = text
        self.line = line
        self.line_start = line_start
        self.keywords = keywords
        self.tensor_match = tensor_re.match if tensor_re is not None else None
        self.pos = pos
        self.depth = 0
        self.advance()

    # ---- tokens
    def advance(self) -> None:
        """Read the next token into ``kind``, ``value``, ``start`` (``kind`` None: no token of
        the subset here, which is the end of the line or something to decline at)."""
        m = _TOKEN.match(self.text, self.pos)
        if m is None:
            self.kind = None
            self.start = self.pos
            return
        kind = m.lastgroup
        self.kind = kind
        self.start = m.start(kind)  # type: ignore[arg-type]
        self.value = m.group(kind)  # type: ignore[arg-type]
        self.pos = m.end()

    def place(self, node: Node, start: int, end: int) -> None:
        node.line = node.end_line = self.line
        node.col = start - self.line_start + 1
        node.end_col = end - self.line_start + 1

    def expect(self, punct: str) -> int:
        """Consume ``punct``; its end offset."""
        if self.kind != "P" or self.value != punct:
            raise _Decline
        end = self.pos
        self.advance()
        return end

    def is_punct(self, punct: str) -> bool:
        return self.kind == "P" and self.value == punct

    def name(self) -> Name:
        node = Name.__new__(Name)
        node.id = self.value
        self.place(node, self.start, self.pos)
        self.advance()
        return node

    # ---- statement
    def assign(self) -> Assign:
        if self.kind != "NAME" or self.value in self.keywords:
            raise _Decline
        target = self.name()
        annotation = None
        if self.is_punct(":"):
            self.advance()
            annotation = self.expr()
        self.expect("=")
        value = self.expr()
        if self.kind is not None or not _LINE_END.match(self.text, self.start):
            raise _Decline
        node = Assign.__new__(Assign)
        node.target = target
        node.annotation = annotation
        node.value = value
        node.line = target.line
        node.col = target.col
        node.end_line = value.end_line
        node.end_col = value.end_col
        return node

    # ---- expressions
    def expr(self) -> Node:
        if self.is_punct("-"):
            start = self.start
            self.advance()
            operand = self.expr()
            neg = Neg(operand)
            neg.line = self.line
            neg.col = start - self.line_start + 1
            neg.end_line = operand.end_line
            neg.end_col = operand.end_col
            return neg
        node = self.postfix(self.atom())
        if self.kind == "P" and self.value == "-":
            raise _Decline  # arithmetic: the grammar's rules read it
        return node

    def atom(self) -> Node:
        kind = self.kind
        start = self.start
        if kind == "NAME":
            value = self.value
            if value in self.keywords:
                if value not in _LITERAL_WORDS:
                    raise _Decline
                lit = Literal(_LITERAL_WORDS[value], value, _NO_TOKEN)
                self.place(lit, start, self.pos)
                self.advance()
                return lit
            if value == "R" and self.tensor_match is not None and self.text.startswith(".Tensor((", self.pos):
                return self.tensor_type(start)
            return self.name()
        if kind == "NUMBER":
            lit = Literal(parse_number(self.value), self.value, _NO_TOKEN)
        elif kind == "STRING":
            lit = Literal(decode_string(self.value), self.value, _NO_TOKEN)
        elif kind == "P" and self.value in "([":
            return self.bracketed(self.value)
        else:
            raise _Decline
        self.place(lit, start, self.pos)
        self.advance()
        return lit

    def tensor_type(self, start: int) -> Node:
        from .syntax import TensorType

        assert self.tensor_match is not None
        m = self.tensor_match(self.text, start)
        if m is None:  # `R.Tensor((` of another spelling: the general rules read it as a call
            return self.name()
        node = TensorType.__new__(TensorType)
        node.text = m.group()
        self.place(node, start, m.end())
        self.pos = m.end()
        self.advance()
        return node

    def postfix(self, node: Node) -> Node:
        while self.kind == "P":
            punct = self.value
            if punct == ".":
                self.advance()
                if self.kind != "NAME":
                    raise _Decline
                attr = Attr.__new__(Attr)
                attr.value = node
                attr.attr = self.value
                attr.line = node.line
                attr.col = node.col
                attr.end_line = self.line
                attr.end_col = self.pos - self.line_start + 1
                self.advance()
                node = attr
            elif punct == "(":
                node = self.call(node)
            elif punct == "[":
                self.enter()
                self.advance()
                indices = self.items("]")
                if not indices:
                    raise _Decline
                end = self.expect("]")
                self.depth -= 1
                sub = Subscript(node, indices)
                sub.line = node.line
                sub.col = node.col
                sub.end_line = self.line
                sub.end_col = end - self.line_start + 1
                node = sub
            else:
                break
        return node

    def enter(self) -> None:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _Decline

    def call(self, func: Node) -> CallExpr:
        self.enter()
        self.advance()  # "("
        args: list[Node] = []
        kwargs: list[Keyword] = []
        while not self.is_punct(")"):
            if self.kind == "NAME" and _KWARG_EQ.match(self.text, self.pos):
                if self.value in self.keywords:
                    raise _Decline
                kw = Keyword.__new__(Keyword)
                kw.name = self.value
                start = self.start
                self.advance()
                self.advance()  # "="
                value = self.expr()
                kw.value = value
                self.place(kw, start, 0)
                kw.end_line = value.end_line
                kw.end_col = value.end_col
                kwargs.append(kw)
            else:
                if kwargs:
                    raise _Decline  # a positional argument after a keyword: the grammar's error
                args.append(self.expr())
            if self.is_punct(","):
                self.advance()
            elif not self.is_punct(")"):
                raise _Decline
        end = self.expect(")")
        self.depth -= 1
        node = CallExpr(func, args, kwargs)
        node.line = func.line
        node.col = func.col
        node.end_line = self.line
        node.end_col = end - self.line_start + 1
        return node

    def items(self, close: str) -> list[Node]:
        """Comma-separated expressions up to ``close`` (not consumed), a trailing comma allowed."""
        items: list[Node] = []
        while not self.is_punct(close):
            items.append(self.expr())
            if self.is_punct(","):
                self.advance()
            elif not self.is_punct(close):
                raise _Decline
        return items

    def bracketed(self, open_: str) -> Node:
        start = self.start
        self.enter()
        self.advance()
        if open_ == "[":
            node: Node = ListExpr(self.items("]"))
            end = self.expect("]")
        else:
            if self.is_punct(")"):
                node = TupleExpr([])
            else:
                first = self.expr()
                if self.is_punct(")"):  # `(x)`: the expression itself
                    self.advance()
                    self.depth -= 1
                    return first
                self.expect(",")
                node = TupleExpr([first, *self.items(")")])
            end = self.expect(")")
        self.depth -= 1
        self.place(node, start, end)
        return node


class _NoToken:
    """Placeholder position for :class:`Literal`'s constructor (overwritten at once)."""

    line = column = end_line = end_column = 0


_NO_TOKEN = _NoToken()


def read_line_stmt(text: str, pos: int, line: int, line_start: int, keywords: Mapping[str, str],
                   tensor_re: re.Pattern[str] | None) -> tuple[Assign, int] | None:
    """The binding that starts at ``pos`` (the first character of line ``line``, which starts
    at offset ``line_start``) and the offset where it ends, if the line is one binding of the
    subset; else None."""
    try:
        reader = _LineReader(text, pos, line, line_start, keywords, tensor_re)
        node = reader.assign()
    except _Decline:
        return None
    return node, reader.start


__all__ = ["read_line_stmt"]
