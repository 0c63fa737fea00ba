"""Syntax tree of the Relax text: what the Lark parser builds, before any meaning is given.

The nodes are plain slotted objects made by :class:`SyntaxBuilder`, an inline transformer
run by the LALR parser as it reduces (no Lark parse tree is built). Every node has
``line, col, end_line, end_col`` (1-based, end exclusive) taken from its tokens. Meaning
(names, types, operators) is given afterwards by :mod:`byocc.text.parser`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any
from typing import cast

from lark import Token
from lark import Transformer

from ._literals import decode_string
from ._literals import parse_number

if TYPE_CHECKING:
    from typing import Protocol
    from typing import TypeVar

    class Tok(Protocol):
        """What the lexer gives a rule: a token (a ``str``) that knows its place."""

        line: int
        column: int
        end_line: int
        end_column: int

    _N = TypeVar("_N", bound="Node")

#: The Python value of a literal.
LiteralValue = int | float | str | bool | None


class Node:
    __slots__ = ("line", "col", "end_line", "end_col")

    line: int
    col: int
    end_line: int
    end_col: int

    def place(self: _N, first: Node | Tok, last: Node | Tok | None = None) -> _N:
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

    def __init__(self, tok: Tok) -> None:
        self.id = str(tok)
        self.line = tok.line
        self.col = tok.column
        self.end_line = tok.end_line
        self.end_col = tok.end_column


class Literal(Node):
    """A number, string, ``True``, ``False`` or ``None``; ``value`` is the Python value."""

    __slots__ = ("value", "raw")

    def __init__(self, value: LiteralValue, raw: str, tok: Tok) -> None:
        self.value = value
        self.raw = raw
        self.line = tok.line
        self.col = tok.column
        self.end_line = tok.end_line
        self.end_col = tok.end_column


class TensorType(Node):
    """The ``TENSOR_TYPE`` token: ``R.Tensor((2, n), dtype="float32")`` in one piece."""

    __slots__ = ("text",)

    def __init__(self, tok: Tok) -> None:
        self.text = str(tok)
        self.line = tok.line
        self.col = tok.column
        self.end_line = tok.end_line
        self.end_col = tok.end_column


class Attr(Node):
    __slots__ = ("value", "attr")

    def __init__(self, value: Node, tok: Tok) -> None:
        self.value = value
        self.attr = str(tok)
        self.line = value.line
        self.col = value.col
        self.end_line = tok.end_line
        self.end_col = tok.end_column


class Keyword(Node):
    """``name=value`` inside a call."""

    __slots__ = ("name", "value")

    def __init__(self, tok: Tok, value: Node) -> None:
        self.name = str(tok)
        self.value = value
        self.place(tok, value)


class CallExpr(Node):
    __slots__ = ("func", "args", "kwargs")

    def __init__(self, func: Node, args: list[Node], kwargs: list[Keyword]) -> None:
        self.func = func
        self.args = args
        self.kwargs = kwargs


class Subscript(Node):
    __slots__ = ("value", "indices")

    def __init__(self, value: Node, indices: list[Node]) -> None:
        self.value = value
        self.indices = indices


class TupleExpr(Node):
    __slots__ = ("elts",)

    def __init__(self, elts: list[Node]) -> None:
        self.elts = elts


class ListExpr(Node):
    __slots__ = ("elts",)

    def __init__(self, elts: list[Node]) -> None:
        self.elts = elts


class DictExpr(Node):
    __slots__ = ("pairs",)

    def __init__(self, pairs: list[tuple[Node, Node]]) -> None:
        self.pairs = pairs


class BinOp(Node):
    __slots__ = ("op", "a", "b")

    def __init__(self, op: str, a: Node, b: Node) -> None:
        self.op = op
        self.a = a
        self.b = b
        self.place(a, b)


class Neg(Node):
    __slots__ = ("operand",)

    def __init__(self, operand: Node) -> None:
        self.operand = operand


# --------------------------------------------------------------------------- statements
class Assign(Node):
    __slots__ = ("target", "annotation", "value")

    def __init__(self, tok: Tok, annotation: Node | None, value: Node) -> None:
        self.target = Name(tok)
        self.annotation = annotation
        self.value = value
        self.place(tok, value)


class AssignTuple(Node):
    """``a, b = x, y``: one value per target (TVM unpacks the Python tuple on the right)."""

    __slots__ = ("targets", "value")

    def __init__(self, toks: list[Tok], value: Node) -> None:
        self.targets = [Name(t) for t in toks]
        self.value = value
        self.place(toks[0], value)


class Declare(Node):
    """``NAME: TYPE`` without a value: a variable used but not bound here (a free variable)."""

    __slots__ = ("target", "annotation")

    def __init__(self, tok: Tok, annotation: Node) -> None:
        self.target = Name(tok)
        self.annotation = annotation
        self.place(tok, annotation)


class ExprStmt(Node):
    __slots__ = ("value",)

    def __init__(self, value: Node) -> None:
        self.value = value
        self.place(value)


class Return(Node):
    __slots__ = ("value",)

    value: Node | None


class Pass(Node):
    __slots__ = ()


class Import(Node):
    __slots__ = ()


class Param(Node):
    __slots__ = ("name", "annotation")

    def __init__(self, tok: Tok, annotation: Node | None) -> None:
        self.name = Name(tok)
        self.annotation = annotation
        self.place(tok, annotation if annotation is not None else tok)


class FuncDef(Node):
    __slots__ = ("decorators", "name", "type_params", "params", "ret", "body")

    decorators: list[Node]
    name: Name
    type_params: list[Param]
    params: list[Param]
    ret: Node | None
    body: list[Node]


class ClassDef(Node):
    __slots__ = ("decorators", "name", "body")

    decorators: list[Node]
    name: Name
    body: list[Node]


class With(Node):
    __slots__ = ("context", "body")

    context: Node
    body: list[Node]


class IfStmt(Node):
    __slots__ = ("cond", "then", "orelse")

    cond: Node
    then: list[Node]
    orelse: list[Node]


def _tok_pos(node: _N, tok: Tok) -> _N:
    node.line = tok.line
    node.col = tok.column
    node.end_line = tok.end_line
    node.end_col = tok.end_column
    return node


def _extend_end(node: Node, last: Node | Tok | None) -> None:
    if last is None:
        return
    if isinstance(last, Node):
        node.end_line = last.end_line
        node.end_col = last.end_col
    else:
        node.end_line = last.end_line
        node.end_col = last.end_column


# --------------------------------------------------------------------------- builder
_PRECEDENCE = {"<": 0, ">": 0, "<=": 0, ">=": 0, "==": 0, "!=": 0, "+": 1, "-": 1, "*": 2, "//": 2, "/": 2,
               "%": 2, "**": 3}


if TYPE_CHECKING:  # the builder's methods list, tuple and dict hide the builtins in its body
    _Children = list[Any]  # a rule's children: tokens, and what the rules below built
    _Nodes = list[Node]
    _Params = list[Param]
    _Pair = tuple[Node, Node]
    _Keywords = list[Keyword]
    _Strs = list[str]


class SyntaxBuilder(Transformer):
    """Inline transformer for ``relax.lark``: one method per rule or alias."""

    # ---- atoms
    def name(self, c: _Children) -> Name:
        return Name(c[0])

    def number(self, c: _Children) -> Literal:
        tok = c[0]
        return Literal(parse_number(tok), str(tok), tok)

    def string(self, c: _Children) -> Literal:
        tok = c[0]
        return Literal(decode_string(tok), str(tok), tok)

    def tensor_type(self, c: _Children) -> TensorType:
        return TensorType(c[0])

    def true(self, c: _Children) -> Literal:
        return _literal_kw(True, c)

    def false(self, c: _Children) -> Literal:
        return _literal_kw(False, c)

    def none(self, c: _Children) -> Literal:
        return _literal_kw(None, c)

    def tuple(self, c: _Children) -> Node:
        return _bracketed(TupleExpr(_items(c)), c)

    def list(self, c: _Children) -> Node:
        return _bracketed(ListExpr(_items(c)), c)

    def dict(self, c: _Children) -> Node:
        return _bracketed(DictExpr(_items(c)), c)

    def pair(self, c: _Children) -> _Pair:
        return (c[0], c[1])

    # ---- comma-separated lists (left-recursive rules)
    def list_first(self, c: _Children) -> _Children:
        return [c[0]]

    def list_pair(self, c: _Children) -> _Children:
        return [c[0], c[1]]

    def list_more(self, c: _Children) -> _Children:
        items = c[0]
        items.append(c[1])
        return items

    stmts_first = list_first
    stmts_more = list_more

    # ---- postfix
    def attr(self, c: _Children) -> Attr:
        return Attr(c[0], c[1])

    def call(self, c: _Children) -> CallExpr:
        func = c[0]
        close = c[-1]
        pos: _Nodes = []
        kws: _Keywords = []
        if len(c) > 2 and c[1] is not None:
            for a in c[1]:
                if isinstance(a, Keyword):
                    kws.append(a)
                else:
                    pos.append(a)
        node = CallExpr(func, pos, kws)
        node.place(func, close)
        return node

    def kwarg(self, c: _Children) -> Keyword:
        return Keyword(c[0], c[1])

    def index(self, c: _Children) -> Subscript:
        value = c[0]
        close = c[-1]
        node = Subscript(value, c[1])
        node.place(value, close)
        return node

    # ---- arithmetic
    def arith(self, c: _Children) -> Node:
        """``a op b op c ...`` with Python precedence (``**`` over ``* // / %`` over ``+ -`` over
        comparisons; left to right, ``**`` right to left)."""
        operands: _Nodes = [c[0]]
        ops: _Strs = []
        for i in range(1, len(c), 2):
            op = str(c[i])
            while ops and (_PRECEDENCE[ops[-1]] > _PRECEDENCE[op]
                           or _PRECEDENCE[ops[-1]] == _PRECEDENCE[op] and op != "**"):
                b = operands.pop()
                operands.append(BinOp(ops.pop(), operands.pop(), b))
            ops.append(op)
            operands.append(c[i + 1])
        while ops:
            b = operands.pop()
            operands.append(BinOp(ops.pop(), operands.pop(), b))
        return operands[0]

    def neg(self, c: _Children) -> Neg:
        node = Neg(c[1])
        node.place(c[0], c[1])
        return node

    def pos(self, c: _Children) -> Node:
        return c[1]

    # ---- statements
    def bare_tuple(self, c: _Children) -> TupleExpr:
        items = c[0]
        node = TupleExpr(items)
        node.place(items[0], items[-1])
        return node

    def bare_tuple1(self, c: _Children) -> TupleExpr:
        node = TupleExpr([c[0]])
        node.place(c[0])
        return node

    def assign(self, c: _Children) -> Assign:
        return Assign(c[0], c[1], c[2])

    def stmts_run(self, c: _Children) -> _Nodes:
        return list(c[0].nodes)  # the lexer's LINE_STMTS token carries its statements

    def stmts_run_more(self, c: _Children) -> _Nodes:
        items = c[0]
        items.extend(c[1].nodes)
        return cast("_Nodes", items)

    def assign_tuple(self, c: _Children) -> AssignTuple:
        return AssignTuple(c[0], c[-1])

    def declare(self, c: _Children) -> Declare:
        return Declare(c[0], c[1])

    def expr_stmt(self, c: _Children) -> ExprStmt:
        return ExprStmt(c[0])

    def return_stmt(self, c: _Children) -> Return:
        node = Return()
        node.value = c[1]
        _tok_pos(node, c[0])
        _extend_end(node, c[1])
        return node

    def pass_stmt(self, c: _Children) -> Pass:
        return _tok_pos(Pass(), c[0])

    def import_stmt(self, c: _Children) -> Import:
        return _tok_pos(Import(), c[0])

    def import_names(self, c: _Children) -> _Children:
        return c

    def import_name(self, c: _Children) -> _Children:
        return c

    def dotted(self, c: _Children) -> _Children:
        return c

    def decorator(self, c: _Children) -> Node:
        return c[0]

    def type_params(self, c: _Children) -> _Params:
        return c

    def type_param(self, c: _Children) -> Param:
        return Param(c[0], c[1])

    def params(self, c: _Children) -> _Params:
        return c

    def param(self, c: _Children) -> Param:
        return Param(c[0], c[1])

    def funcdef(self, c: _Children) -> FuncDef:
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

    def classdef(self, c: _Children) -> ClassDef:
        node = ClassDef()
        node.decorators = c[0] or []
        node.name = Name(c[2])
        node.body = c[-1]
        _tok_pos(node, c[2])
        return node

    def with_stmt(self, c: _Children) -> With:
        node = With()
        node.context = c[1]
        node.body = c[2]
        _tok_pos(node, c[0])
        return node

    def if_stmt(self, c: _Children) -> IfStmt:
        node = IfStmt()
        node.cond = c[1]
        node.then = c[2]
        node.orelse = c[3]
        _tok_pos(node, c[0])
        return node

    def suite(self, c: _Children) -> _Nodes:
        return c[0]

    def start(self, c: _Children) -> _Nodes:
        return c[0] if c and c[0] is not None else []


def _items(c: list[Any]) -> list[Any]:
    """Items of a bracketed rule: its children without the bracket tokens, lists flattened
    (expressions; ``(key, value)`` pairs for a dict)."""
    out: list[Any] = []
    for x in c:
        if type(x) is list:
            out.extend(x)
        elif x is not None and not isinstance(x, Token):
            out.append(x)
    return out


def _literal_kw(value: LiteralValue, c: list[Any]) -> Literal:
    return Literal(value, str(c[0]), c[0])


def _bracketed(node: Node, c: list[Any]) -> Node:
    node.place(c[0], c[-1])
    return node


__all__ = [
    "Assign", "AssignTuple", "Attr", "BinOp", "CallExpr", "ClassDef", "Declare", "DictExpr", "ExprStmt", "FuncDef",
    "IfStmt", "Import", "Keyword", "ListExpr", "Literal", "Name", "Neg", "Node", "Param", "Pass",
    "Return", "Subscript", "SyntaxBuilder", "TensorType", "TupleExpr", "With", "decode_string",
]
