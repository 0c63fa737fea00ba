"""Syntax tree of the Relax text: what the Lark parser builds, before any meaning is given.

The nodes are plain slotted objects made by :class:`SyntaxBuilder`, an inline transformer
run by the LALR parser as it reduces (no Lark parse tree is built). Every node has
``line, col, end_line, end_col`` (1-based, end exclusive) taken from its tokens. Meaning
(names, types, operators) is given afterwards by :mod:`byocc.text.parser`.
"""

from __future__ import annotations

from lark import Token, Transformer

from ._literals import decode_string, parse_number


class Node:
    __slots__ = ("line", "col", "end_line", "end_col")

    def place(self, first, last=None):
        """Take the position of ``first`` (a node or token) through ``last``."""
        self.line = first.line
        self.col = first.col if isinstance(first, Node) else first.column
        last = last if last is not None else first
        self.end_line = last.end_line
        self.end_col = last.end_col if isinstance(last, Node) else last.end_column
        return self


# --------------------------------------------------------------------------- expressions
class Name(Node):
    __slots__ = ("id",)

    def __init__(self, tok):
        self.id = str(tok)
        self.line = tok.line
        self.col = tok.column
        self.end_line = tok.end_line
        self.end_col = tok.end_column


class Literal(Node):
    """A number, string, ``True``, ``False`` or ``None``; ``value`` is the Python value."""

    __slots__ = ("value", "raw")

    def __init__(self, value, raw: str, tok):
        self.value = value
        self.raw = raw
        self.line = tok.line
        self.col = tok.column
        self.end_line = tok.end_line
        self.end_col = tok.end_column


class TensorType(Node):
    """The ``TENSOR_TYPE`` token: ``R.Tensor((2, n), dtype="float32")`` in one piece."""

    __slots__ = ("text",)

    def __init__(self, tok):
        self.text = str(tok)
        self.line = tok.line
        self.col = tok.column
        self.end_line = tok.end_line
        self.end_col = tok.end_column


class Attr(Node):
    __slots__ = ("value", "attr")

    def __init__(self, value, tok):
        self.value = value
        self.attr = str(tok)
        self.line = value.line
        self.col = value.col
        self.end_line = tok.end_line
        self.end_col = tok.end_column


class Keyword(Node):
    """``name=value`` inside a call."""

    __slots__ = ("name", "value")

    def __init__(self, tok, value):
        self.name = str(tok)
        self.value = value
        self.place(tok, value)


class CallExpr(Node):
    __slots__ = ("func", "args", "kwargs")

    def __init__(self, func, args, kwargs):
        self.func = func
        self.args = args
        self.kwargs = kwargs


class Subscript(Node):
    __slots__ = ("value", "indices")

    def __init__(self, value, indices):
        self.value = value
        self.indices = indices


class TupleExpr(Node):
    __slots__ = ("elts",)

    def __init__(self, elts):
        self.elts = elts


class ListExpr(Node):
    __slots__ = ("elts",)

    def __init__(self, elts):
        self.elts = elts


class DictExpr(Node):
    __slots__ = ("pairs",)

    def __init__(self, pairs):
        self.pairs = pairs


class BinOp(Node):
    __slots__ = ("op", "a", "b")

    def __init__(self, op, a, b):
        self.op = op
        self.a = a
        self.b = b
        self.place(a, b)


class Neg(Node):
    __slots__ = ("operand",)

    def __init__(self, operand):
        self.operand = operand


# --------------------------------------------------------------------------- statements
class Assign(Node):
    __slots__ = ("target", "annotation", "value")

    def __init__(self, tok, annotation, value):
        self.target = Name(tok)
        self.annotation = annotation
        self.value = value
        self.place(tok, value)


class Declare(Node):
    """``NAME: TYPE`` without a value: a variable used but not bound here (a free variable)."""

    __slots__ = ("target", "annotation")

    def __init__(self, tok, annotation):
        self.target = Name(tok)
        self.annotation = annotation
        self.place(tok, annotation)


class ExprStmt(Node):
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value
        self.place(value)


class Return(Node):
    __slots__ = ("value",)


class Pass(Node):
    __slots__ = ()


class Import(Node):
    __slots__ = ()


class Param(Node):
    __slots__ = ("name", "annotation")

    def __init__(self, tok, annotation):
        self.name = Name(tok)
        self.annotation = annotation
        self.place(tok, annotation if annotation is not None else tok)


class FuncDef(Node):
    __slots__ = ("decorators", "name", "type_params", "params", "ret", "body")


class ClassDef(Node):
    __slots__ = ("decorators", "name", "body")


class With(Node):
    __slots__ = ("context", "body")


class IfStmt(Node):
    __slots__ = ("cond", "then", "orelse")


def _tok_pos(node: Node, tok) -> Node:
    node.line = tok.line
    node.col = tok.column
    node.end_line = tok.end_line
    node.end_col = tok.end_column
    return node


def _extend_end(node: Node, last) -> None:
    if last is None:
        return
    if isinstance(last, Node):
        node.end_line = last.end_line
        node.end_col = last.end_col
    else:
        node.end_line = last.end_line
        node.end_col = last.end_column


# --------------------------------------------------------------------------- builder
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "//": 2, "/": 2, "%": 2}


class SyntaxBuilder(Transformer):
    """Inline transformer for ``relax.lark``: one method per rule or alias."""

    # ---- atoms
    def name(self, c):
        return Name(c[0])

    def number(self, c):
        tok = c[0]
        return Literal(parse_number(tok), str(tok), tok)

    def string(self, c):
        tok = c[0]
        return Literal(decode_string(tok), str(tok), tok)

    def tensor_type(self, c):
        return TensorType(c[0])

    def true(self, c):
        return _literal_kw(True, c)

    def false(self, c):
        return _literal_kw(False, c)

    def none(self, c):
        return _literal_kw(None, c)

    def tuple(self, c):
        return _bracketed(TupleExpr(_items(c)), c)

    def list(self, c):
        return _bracketed(ListExpr(_items(c)), c)

    def dict(self, c):
        return _bracketed(DictExpr(_items(c)), c)

    def pair(self, c):
        return (c[0], c[1])

    # ---- comma-separated lists (left-recursive rules)
    def list_first(self, c):
        return [c[0]]

    def list_pair(self, c):
        return [c[0], c[1]]

    def list_more(self, c):
        items = c[0]
        items.append(c[1])
        return items

    stmts_first = list_first
    stmts_more = list_more

    # ---- postfix
    def attr(self, c):
        return Attr(c[0], c[1])

    def call(self, c):
        func = c[0]
        close = c[-1]
        pos = []
        kws = []
        if len(c) > 2 and c[1] is not None:
            for a in c[1]:
                if isinstance(a, Keyword):
                    kws.append(a)
                else:
                    pos.append(a)
        node = CallExpr(func, pos, kws)
        node.place(func, close)
        return node

    def kwarg(self, c):
        return Keyword(c[0], c[1])

    def index(self, c):
        value = c[0]
        close = c[-1]
        node = Subscript(value, c[1])
        node.place(value, close)
        return node

    # ---- arithmetic
    def arith(self, c):
        """``a op b op c ...`` with Python precedence (``* // / %`` over ``+ -``, left to right)."""
        operands = [c[0]]
        ops: list[str] = []
        for i in range(1, len(c), 2):
            op = str(c[i])
            while ops and _PRECEDENCE[ops[-1]] >= _PRECEDENCE[op]:
                b = operands.pop()
                operands.append(BinOp(ops.pop(), operands.pop(), b))
            ops.append(op)
            operands.append(c[i + 1])
        while ops:
            b = operands.pop()
            operands.append(BinOp(ops.pop(), operands.pop(), b))
        return operands[0]

    def neg(self, c):
        node = Neg(c[1])
        node.place(c[0], c[1])
        return node

    def pos(self, c):
        return c[1]

    # ---- statements
    def bare_tuple(self, c):
        items = c[0]
        node = TupleExpr(items)
        node.place(items[0], items[-1])
        return node

    def bare_tuple1(self, c):
        node = TupleExpr([c[0]])
        node.place(c[0])
        return node

    def assign(self, c):
        return Assign(c[0], c[1], c[2])

    def declare(self, c):
        return Declare(c[0], c[1])

    def expr_stmt(self, c):
        return ExprStmt(c[0])

    def return_stmt(self, c):
        node = Return()
        node.value = c[1]
        _tok_pos(node, c[0])
        _extend_end(node, c[1])
        return node

    def pass_stmt(self, c):
        return _tok_pos(Pass(), c[0])

    def import_stmt(self, c):
        return _tok_pos(Import(), c[0])

    def import_names(self, c):
        return c

    def import_name(self, c):
        return c

    def dotted(self, c):
        return c

    def decorator(self, c):
        return c[0]

    def type_params(self, c):
        return c

    def type_param(self, c):
        return Param(c[0], c[1])

    def params(self, c):
        return c

    def param(self, c):
        return Param(c[0], c[1])

    def funcdef(self, c):
        # decorator* DEF NAME [type_params] [params] [ret] suite
        node = FuncDef()
        decorators, _def, name_tok, tparams, params, ret, body = c
        node.decorators = decorators or []
        node.name = Name(name_tok)
        node.type_params = tparams or []
        node.params = params or []
        node.ret = ret
        node.body = body
        _tok_pos(node, name_tok)
        return node

    def classdef(self, c):
        node = ClassDef()
        node.decorators = c[0] or []
        node.name = Name(c[2])
        node.body = c[-1]
        _tok_pos(node, c[2])
        return node

    def with_stmt(self, c):
        node = With()
        node.context = c[1]
        node.body = c[2]
        _tok_pos(node, c[0])
        return node

    def if_stmt(self, c):
        node = IfStmt()
        node.cond = c[1]
        node.then = c[2]
        node.orelse = c[3]
        _tok_pos(node, c[0])
        return node

    def suite(self, c):
        return c[0]

    def start(self, c):
        return c[0] if c and c[0] is not None else []


def _items(c):
    """Items of a bracketed rule: its children without the bracket tokens, lists flattened."""
    out = []
    for x in c:
        if type(x) is list:
            out.extend(x)
        elif x is not None and not isinstance(x, Token):
            out.append(x)
    return out


def _literal_kw(value, c):
    return Literal(value, str(c[0]), c[0])


def _bracketed(node: Node, c) -> Node:
    node.place(c[0], c[-1])
    return node


__all__ = [
    "Assign", "Attr", "BinOp", "CallExpr", "ClassDef", "Declare", "DictExpr", "ExprStmt", "FuncDef",
    "IfStmt", "Import", "Keyword", "ListExpr", "Literal", "Name", "Neg", "Node", "Param", "Pass",
    "Return", "Subscript", "SyntaxBuilder", "TensorType", "TupleExpr", "With", "decode_string",
]
