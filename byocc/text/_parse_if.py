"""Reading ``if``/``else`` (TVM's relax.If; docs/textual-ir.md#meaning-of-the-text).

:class:`IfReader` is a mixin of :class:`~byocc.text._parse_function.FunctionReader`. TVM's
reading: each branch ends by binding the same name; that last binding's variable becomes
``NAME_then`` / ``NAME_else`` and is the branch's value; the ``if`` binds ``NAME`` to the
If, typed by what both branches have in common (:func:`sinfo_lca`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import NoReturn

from byocc.ir import Binding
from byocc.ir import BindingBlock
from byocc.ir import ByoccError
from byocc.ir import DataflowVar
from byocc.ir import Expr
from byocc.ir import If
from byocc.ir import MatchCast
from byocc.ir import ObjectStructInfo
from byocc.ir import PrimBinary
from byocc.ir import PrimStructInfo
from byocc.ir import PrimValue
from byocc.ir import SeqExpr
from byocc.ir import ShapeStructInfo
from byocc.ir import StructInfo
from byocc.ir import TensorStructInfo
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir import is_leaf
from byocc.ir import sinfo_of

from ._parse_expr import COMPARISONS
from .syntax import Assign
from .syntax import BinOp
from .syntax import IfStmt
from .syntax import Name
from .syntax import Node
from .syntax import Return
from .syntax import With

if TYPE_CHECKING:
    from byocc.ir import Dim
    from byocc.ir import Span

    from ._parse_expr import Raw
    from ._parse_expr import _Module
    from .parser import ModuleReader


class IfReader:
    """Mixin: if/else statements. See the module docstring."""

    if TYPE_CHECKING:  # from the host (FunctionReader) and its other mixins
        module: ModuleReader
        values: dict[str, Var | _Module]
        _bindings: list[Binding] | None
        _in_dataflow: bool

        def span(self, node: Node) -> Span: ...
        def error(self, message: str, node: Node | None, cls: type[ByoccError] = ...) -> NoReturn: ...
        def read_value(self, node: Node, hint: StructInfo | None = None) -> Expr: ...
        def leaf(self, expr: Expr, node: Node) -> Expr: ...
        def read_dim(self, node: Node, in_signature: bool = False, quoted: bool = False) -> Dim: ...
        def _binop_operand(self, node: Node) -> Raw: ...
        def _consume_name(self, in_dataflow: bool) -> None: ...
        def _new_var(self, name_node: Name, sinfo: StructInfo | None, in_dataflow: bool,
                     outputs: dict[str, Name] | None) -> Var: ...
        def _read_statements(self, stmts: list[Node]) -> tuple[list[BindingBlock], Expr | None, Return | None]: ...

    def _if(self, stmt: IfStmt, bindings: list[Binding]) -> None:
        """``if c: ... NAME = a else: ... NAME = b`` is ``NAME = R.If(c, then, else)`` (TVM's
        relax.If): each branch must end by binding the same NAME; that last binding's
        variable is renamed ``NAME_then`` / ``NAME_else`` and is the branch's value (a leaf
        value, ``NAME = x``, is the branch's value as is, unbound). Names bound inside a
        branch leave scope with it. TVM reads the condition after both branches (so its
        temporaries are numbered after theirs) and binds it before the ``if``."""
        then_seq, name, target = self._branch(stmt.then, stmt, "_then")
        else_seq, else_name, _ = self._branch(stmt.orelse, stmt, "_else")
        if name != else_name:
            self.error(f"both branches of if/else must end by binding the same variable: the 'if' branch binds "
                       f"'{name}', the 'else' branch '{else_name}'", stmt)
        self._bindings = bindings
        self._in_dataflow = False
        cond = self._condition(stmt.cond)
        sinfo = sinfo_lca(sinfo_of(then_seq.body), sinfo_of(else_seq.body))
        self._consume_name(False)
        var = self._new_var(target, sinfo, False, None)
        bindings.append(VarBinding(var, If(cond, then_seq, else_seq, sinfo, self.span(stmt)), self.span(stmt)))

    def _condition(self, node: Node) -> Expr:
        """An if's condition: a value, or a comparison of dimensions (``if N == 16:``, TVM's
        PrimExpr condition, a bool PrimValue)."""
        if type(node) is BinOp and node.op in COMPARISONS:
            a = self._binop_operand(node.a)
            b = self._binop_operand(node.b)
            if not isinstance(a, Expr) and not isinstance(b, Expr):
                dim = PrimBinary(node.op, self.read_dim(node.a), self.read_dim(node.b))
                return PrimValue(dim, "bool", self.span(node))
        return self.leaf(self.read_value(node), node)

    def _branch(self, stmts: list[Node], stmt: IfStmt, suffix: str) -> tuple[SeqExpr, str, Name]:
        """One branch of an if/else: its sequence, and the name and target of its last binding."""
        saved = dict(self.values)
        try:
            blocks, body, ret_node = self._read_statements(stmts)
        finally:
            self.values = saved
        which = "'if'" if suffix == "_then" else "'else'"
        if ret_node is not None:
            self.error("return inside if/else is not supported: bind the same variable at the end of both "
                       "branches and return it after the if/else", ret_node)
        last_stmt = stmts[-1] if stmts else stmt
        if not blocks or not blocks[-1].bindings or not isinstance(last_stmt, (Assign, With, IfStmt)):
            self.error(f"the {which} branch must end by binding a variable (NAME = ...)", last_stmt)
        last_block = blocks[-1]
        last = last_block.bindings[-1]
        if isinstance(last.var, DataflowVar):
            self.error(f"the {which} branch ends with '{last.var.name_hint}', which its dataflow block does not "
                       "output: list it in R.output(...)", last_stmt)
        target = _last_target(last_stmt)
        if target is None:
            self.error(f"the {which} branch must end by binding a variable (NAME = ...)", last_stmt)
        name = last.var.name_hint
        rest = last_block.bindings[:-1]
        value: Expr
        if type(last) is VarBinding and is_leaf(last.value):
            value = last.value  # TVM: a leaf value is the branch's value, unbound
            new_last: tuple[Binding, ...] = ()
        else:
            var = type(last.var)(name + suffix, last.var.struct_info, last.var.span)
            new_binding: Binding = (MatchCast(var, last.value, last.struct_info, last.span) if type(last) is MatchCast
                                    else VarBinding(var, last.value, last.span))
            new_last = (new_binding,)
            value = var
        blocks[-1] = type(last_block)(rest + new_last, last_block.span)
        return SeqExpr(tuple(b for b in blocks if b.bindings), value, self.span(stmt)), name, target


def if_target(stmt: IfStmt) -> Name | None:
    """The name an if/else binds, when its 'if' branch ends with an assignment."""
    return _last_target(stmt.then[-1]) if stmt.then else None


def _last_target(stmt: Node) -> Name | None:
    """The Name node a branch's last statement binds (an assignment, the last assignment
    of a dataflow block, the name a nested if/else binds); None if it binds none."""
    while not isinstance(stmt, Assign):
        if isinstance(stmt, With):
            found = [s for s in stmt.body if isinstance(s, Assign)]
            if not found:
                return None
            stmt = found[-1]
        elif isinstance(stmt, IfStmt) and stmt.then:
            stmt = stmt.then[-1]
        else:
            return None
    return stmt.target


def sinfo_lca(a: StructInfo | None, b: StructInfo | None) -> StructInfo:
    """The most precise struct info both ``a`` and ``b`` have (TVM's StructInfoLCA): what an
    if/else's value is typed as."""
    if a == b and a is not None:
        return a
    if isinstance(a, TensorStructInfo) and isinstance(b, TensorStructInfo):
        dtype = a.dtype if a.dtype == b.dtype else None
        if a.shape is not None and b.shape is not None and a.shape == b.shape:
            return TensorStructInfo(a.shape, dtype)
        return TensorStructInfo(None, dtype, a.ndim if a.ndim == b.ndim else -1)
    if isinstance(a, ShapeStructInfo) and isinstance(b, ShapeStructInfo):
        if a.values is not None and a.values == b.values:
            return a
        return ShapeStructInfo(None, a.ndim if a.ndim == b.ndim else -1)
    if isinstance(a, TupleStructInfo) and isinstance(b, TupleStructInfo) and len(a.fields) == len(b.fields):
        return TupleStructInfo(tuple(sinfo_lca(x, y) for x, y in zip(a.fields, b.fields)))
    if isinstance(a, PrimStructInfo) and isinstance(b, PrimStructInfo) and a.dtype == b.dtype:
        return PrimStructInfo(a.dtype)
    return ObjectStructInfo()


__all__ = ["IfReader", "if_target", "sinfo_lca"]
