"""Reading one ``@R.function``: decorator, signature, body (docs/textual-ir.md#functions, #bodies-and-bindings, #meaning-of-the-text).

Statements are read in a loop (a 100 000-binding body costs no recursion); only nested
constructs recurse: a dataflow block once, a local function once per nesting level.

Scoping: parameters and bindings live in ``values``; a dataflow block's non-output
bindings leave scope when the block ends. Symbolic dimensions live in ``tirvars``: every
function gets its own :class:`~byocc.ir.TirVar` objects even when two functions share a
``TypeVar`` name; a local function sees its enclosing function's variables.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from byocc.ir import Binding
from byocc.ir import BindingBlock
from byocc.ir import ByoccError
from byocc.ir import Call
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import Dim
from byocc.ir import Expr
from byocc.ir import FuncStructInfo
from byocc.ir import Function
from byocc.ir import MatchCast
from byocc.ir import NameSupply
from byocc.ir import PrimExpr
from byocc.ir import PrimStructInfo
from byocc.ir import PrimValue
from byocc.ir import SeqExpr
from byocc.ir import StructInfo
from byocc.ir import TirVar
from byocc.ir import TypeInferenceError
from byocc.ir import UnsupportedError
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir import is_leaf
from byocc.ir import sinfo_of
from byocc.ir import structural_equal
from byocc.ir.expr import well_defined_in

from ._parse_expr import MODULE
from ._parse_expr import ExprReader
from ._parse_expr import _Module
from ._parse_if import IfReader
from ._parse_if import if_target
from ._parse_retype import retype_dataflow
from ._parse_types import TypeReader
from ._parse_types import _span
from ._parse_types import dotted_name
from ._parse_types import incompatible
from ._parse_types import slot_maker
from .syntax import Assign
from .syntax import AssignTuple
from .syntax import Attr
from .syntax import CallExpr
from .syntax import ClassDef
from .syntax import Declare
from .syntax import DictExpr
from .syntax import ExprStmt
from .syntax import FuncDef
from .syntax import IfStmt
from .syntax import Import
from .syntax import Literal
from .syntax import Name
from .syntax import Neg
from .syntax import Node
from .syntax import Pass
from .syntax import Return
from .syntax import TupleExpr
from .syntax import With

if TYPE_CHECKING:
    from .parser import ModuleReader

    #: ``R.output`` names -> the Name node of the binding that defines each.
    Outputs = dict[str, Name]

DIM_DECLARATIONS = ("T.int64", "T.int32")
_SPECIAL_ATTRS = frozenset(("int64", "int32", "match_cast"))  # R./T. calls _assign reads itself
_make_var = slot_maker(Var)  # Var(...), DataflowVar(...), VarBinding(...) for each binding
_make_dataflow_var = slot_maker(DataflowVar)
_make_var_binding = slot_maker(VarBinding)


class FunctionReader(TypeReader, ExprReader, IfReader):
    """Reads one function. ``module`` is the :class:`byocc.text.parser.ModuleReader`."""

    def __init__(self, module: ModuleReader, node: FuncDef, parent: FunctionReader | None = None,
                 member: bool = False) -> None:
        self.module = module
        self.node = node
        self.parent = parent
        self.member = member
        self.source = module.source
        self.metadata = module.metadata
        self._static_tensor_cache = module.static_tensor_cache
        self.values: dict[str, Var | _Module] = {}
        self.tirvars: dict[str, TirVar] = {}
        self.declared: set[str] = set()
        self.attrs: dict[str, Any] = {}
        self.temp_names = NameSupply()
        self._bindings: list[Binding] | None = None  # where emit_temp appends
        self._in_dataflow = False
        self.poisoned: set[str] = set()  # names bound by statements that failed
        self.pure, self.private = self._read_decorators(node)
        for tp in node.type_params:
            self.declared.add(tp.name.id)
        self.params = self._read_params(node)
        self.ret_sinfo = self.read_type(node.ret, in_signature=True) if node.ret is not None else None

    # ------------------------------------------------------------------ signature
    def _read_decorators(self, node: FuncDef) -> tuple[bool, bool]:
        if not node.decorators:
            self.error(f"function '{node.name.id}' needs the @R.function decorator", node)
        if len(node.decorators) > 1:
            self.error("a function takes one decorator, @R.function", node.decorators[1])
        deco = node.decorators[0]
        call = deco if isinstance(deco, CallExpr) else None
        name = dotted_name(call.func if call else deco)
        if name == "T.prim_func":
            self.error("TIR functions (@T.prim_func) are not supported by byocc", deco, UnsupportedError)
        if name != "R.function":
            self.error(f"expected @R.function, found @{name or '...'}", deco)
        pure, private = True, False
        if call is not None:
            if call.args:
                self.error("@R.function takes keyword arguments only (pure=, private=)", call.args[0])
            for kw in call.kwargs:
                if kw.name not in ("pure", "private", "check_well_formed"):
                    self.error(f"@R.function got an unexpected argument '{kw.name}'", kw)
                if not isinstance(kw.value, Literal) or not isinstance(kw.value.value, bool):
                    self.error(f"{kw.name} must be True or False", kw.value)
                if kw.name == "pure":
                    pure = kw.value.value
                elif kw.name == "private":
                    private = kw.value.value
        return pure, private

    def _read_params(self, node: FuncDef) -> list[Var]:
        params: list[Var] = []
        seen: set[str] = set()
        for p in node.params:
            name = p.name.id
            if p.annotation is None:
                self.error(f"parameter '{name}' needs a type annotation", p.name)
            if name in seen:
                self.error(f"duplicate parameter '{name}'", p.name)
            seen.add(name)
            sinfo = self.read_type(p.annotation, in_signature=True)
            var = Var(name, sinfo, self.span(p.name))
            params.append(var)
            self.values[name] = var
        return params

    def signature(self) -> FuncStructInfo | None:
        """The function's struct info, when its return type is annotated."""
        if self.ret_sinfo is None:
            return None
        return FuncStructInfo(tuple(sinfo_of(p) for p in self.params), self.ret_sinfo, self.pure)

    # ------------------------------------------------------------------ names
    def lookup_value(self, name: str) -> Var | _Module | None:
        f: FunctionReader | None = self
        while f is not None:
            v = f.values.get(name)
            if v is not None:
                return v
            f = f.parent
        if name in self.module.class_names:
            return MODULE
        return None

    def find_dim(self, name: str, create: bool = True) -> TirVar | None:
        f: FunctionReader | None = self
        while f is not None:
            v = f.tirvars.get(name)
            if v is not None:
                return v
            f = f.parent
        if create and self._is_declared(name):
            v = self.tirvars[name] = TirVar(name, "int64")
            return v
        return None

    def _is_declared(self, name: str) -> bool:
        f: FunctionReader | None = self
        while f is not None:
            if name in f.declared:
                return True
            f = f.parent
        return name in self.module.typevars

    def dim_name(self, node: Name, in_signature: bool = False, legacy: bool = False) -> Dim:
        v = self.find_dim(node.id)
        if v is not None:
            return v
        if legacy:
            v = self.tirvars[node.id] = TirVar(node.id, "int64", self.span(node))
            return v
        scope = self.module.scope
        if scope is not None and scope.has(node.id):  # a Python int (or dimension) of the script's code
            value = self.python_value(scope.value(node.id), node)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            if isinstance(value, PrimExpr):
                return value
            self.error(f"'{node.id}' is a Python {type(scope.value(node.id)).__name__}, not a dimension", node)
        self.error(f"undefined symbolic dimension '{node.id}' (declare it: {node.id} = TypeVar(\"{node.id}\") "
                   f"or {node.id} = T.int64())", node)

    def parse_dim_text(self, text: str, node: Node) -> Node:
        return self.module.parse_dim_text(text, node)

    def emit_temp(self, expr: Expr, node: Node) -> Expr:
        if self._bindings is None:
            self.error("this expression must be bound to a variable first", node)
        hint = "lv" if self._in_dataflow else "gv"
        cls = DataflowVar if self._in_dataflow else Var
        var = cls(self.temp_names.fresh(hint), expr.struct_info, self.span(node))
        self._bindings.append(VarBinding(var, expr, self.span(node)))
        return var

    # ------------------------------------------------------------------ body
    def read(self) -> Function:
        """The whole function (signature already read). If a statement failed (and was
        recorded, see :meth:`_statement`), the last recorded error is raised."""
        start = len(self.module.errors)
        blocks, body, ret_node = self._read_statements(self.node.body)
        if len(self.module.errors) != start:
            raise self.module.errors[-1]
        if body is None:
            self.error(f"function '{self.node.name.id}' has no return statement", self.node)
        body_si = sinfo_of(body)
        ret = self.ret_sinfo
        if ret is None:
            ret = well_defined_in(self.params, body_si)
        else:
            why = incompatible(ret, body_si)
            if why and self.module.scope is None:
                # TVM's script parser does not check a return annotation against the body
                # (``-> R.Tuple`` on a function returning a pair); byocc's text reader does,
                # and a decorated script keeps TVM's reading.
                self.error(f"the returned value does not match the return type: {why}", ret_node,
                           TypeInferenceError)
        attrs = dict(self.attrs)
        if self.member and not self.private and "global_symbol" not in attrs:
            attrs["global_symbol"] = self.node.name.id
        seq = SeqExpr(tuple(blocks), body, self.span(self.node))
        return Function(tuple(self.params), seq, ret, self.pure, attrs, self.span(self.node))

    def _read_statements(self, stmts: list[Node]) -> tuple[list[BindingBlock], Expr | None, Return | None]:
        """Blocks, return value and return statement of a body."""
        blocks: list[BindingBlock] = []
        current: list[Binding] = []
        body: Expr | None = None
        ret_node: Return | None = None
        for stmt in stmts:
            self.module.where = stmt
            if body is not None:
                self.error("statement after return", stmt)
            if type(stmt) is With:
                blocks.append(BindingBlock(tuple(current)))
                current = []
                blocks.append(DataflowBlock(tuple(self._read_dataflow(stmt))))
            elif type(stmt) is Return:
                if stmt.value is None:
                    self.error("a function must return a value", stmt)
                self._bindings = current
                self._in_dataflow = False
                try:
                    body = self.read_value(stmt.value)
                except ByoccError:
                    if _names_in(stmt) & self.poisoned and self.module.errors:
                        raise self.module.errors[-1] from None  # a consequence of that one
                    raise
                if not _is_return_leaf(body):
                    # normal form: a computed return value is bound first (TVM's ``gv``)
                    body = self.emit_temp(body, stmt.value)
                ret_node = stmt
            else:
                self._statement(stmt, current, False, None)
        blocks.append(BindingBlock(tuple(current)))
        self._bindings = None
        return _normalize_blocks(blocks), body, ret_node

    def _statement(self, stmt: Node, bindings: list[Binding], in_dataflow: bool, outputs: Outputs | None) -> None:
        """One statement of a body or dataflow block; bindings go to ``bindings``.

        A statement that fails is recorded (``module.record``) and reading goes on: its
        target becomes *poisoned*, and a later statement that fails while reading a
        poisoned name is a consequence, not another problem, so it is not recorded."""
        try:
            self._statement_unguarded(stmt, bindings, in_dataflow, outputs)
        except ByoccError as err:
            names = _names_in(stmt)
            if not (names & self.poisoned):
                self.module.record(err)
            elif not self.module.errors:  # cannot happen: poison comes from a recorded error
                raise
            if type(stmt) is AssignTuple:
                targets: list[Name | None] = list(stmt.targets)
            else:
                targets = [getattr(stmt, "target", None) if type(stmt) is not IfStmt else if_target(stmt)]
            for target in targets:
                if isinstance(target, Name):
                    self.poisoned.add(target.id)
                    self.values.pop(target.id, None)
            self._bindings = bindings
            self._in_dataflow = in_dataflow

    def _statement_unguarded(self, stmt: Node, bindings: list[Binding], in_dataflow: bool,
                             outputs: Outputs | None) -> None:
        self._bindings = bindings
        self._in_dataflow = in_dataflow
        if type(stmt) is Assign:
            self._assign(stmt, bindings, in_dataflow, outputs)
        elif type(stmt) is AssignTuple:
            for one in self._unpack(stmt):
                self._assign(one, bindings, in_dataflow, outputs)
        elif type(stmt) is ExprStmt:
            self._expr_statement(stmt, bindings, in_dataflow)
        elif type(stmt) is FuncDef:
            self._local_function(stmt, bindings, in_dataflow, outputs)
        elif type(stmt) is Pass:
            pass
        elif type(stmt) is Declare:
            name = stmt.target.id
            self.values[name] = Var(name, self.read_type(stmt.annotation), self.span(stmt.target))
        elif type(stmt) is With:
            self.error("dataflow blocks cannot be nested", stmt)
        elif type(stmt) is Return:
            self.error("return inside a dataflow block", stmt)
        elif type(stmt) is IfStmt:
            if in_dataflow:
                self.error("if/else cannot be inside a dataflow block", stmt)
            self._if(stmt, bindings)
        elif type(stmt) is ClassDef:
            self.error("a class cannot be defined inside a function", stmt)
        elif type(stmt) is Import:
            self.error("imports belong at the top of the file", stmt)
        else:
            self.error("unsupported statement", stmt)

    def _new_var(self, name_node: Name, sinfo: StructInfo | None, in_dataflow: bool, outputs: Outputs | None) -> Var:
        is_output = outputs is not None and outputs.get(name_node.id) is name_node
        make = _make_dataflow_var if in_dataflow and not is_output else _make_var
        var = make(name_node.id, sinfo, _span(self.source, name_node.line, name_node.col,
                                              name_node.end_line, name_node.end_col))
        self.values[name_node.id] = var
        return var

    def _assign(self, stmt: Assign, bindings: list[Binding], in_dataflow: bool, outputs: Outputs | None) -> None:
        target = stmt.target
        value = stmt.value
        if type(value) is CallExpr:
            func = value.func
            special = None
            if (type(func) is Attr and func.attr in _SPECIAL_ATTRS and type(func.value) is Name
                    and func.value.id in ("R", "T")):
                special = f"{func.value.id}.{func.attr}"
            elif type(func) is Name:
                special = func.id
            if special in DIM_DECLARATIONS and not value.args and not value.kwargs:
                if stmt.annotation is not None:
                    self.error("a symbolic dimension declaration takes no annotation", stmt.annotation)
                if target.id not in self.tirvars:
                    self.tirvars[target.id] = TirVar(target.id, "int64", self.span(target))
                return
            if special == "TypeVar" and self.lookup_value("TypeVar") is None:
                self._typevar(stmt, value)
                return
            if special == "R.match_cast" and self.lookup_value("R") is None:
                self._match_cast(stmt, value, bindings, in_dataflow, outputs)
                return
        elif type(value) is Name and self.lookup_value(value.id) is MODULE:
            self.values[target.id] = MODULE  # cls = Module
            return
        ann = self.read_type(stmt.annotation) if stmt.annotation is not None else None
        mark = len(bindings)
        expr: Expr | None = self._prim_literal_value(value, ann) if type(ann) is PrimStructInfo else None
        if expr is None:
            expr = self.read_value(value, ann)
        sinfo = expr.struct_info
        if ann is not None and len(bindings) == mark:
            # TVM's R.emit: a value that already has a type (variable, tuple, constant, shape,
            # item...) keeps it, the annotation is only checked; a call has none yet, so it
            # takes the annotation. A value whose parts had to be bound first (a call inside)
            # is rebuilt by the normaliser, which infers its type and drops the annotation
            # unchecked (the ``len(bindings) == mark`` test).
            why = incompatible(ann, sinfo)
            if why:
                self.error(f"the annotation of '{target.id}' does not match its value: {why}",
                           stmt.annotation, TypeInferenceError)
            if type(expr) is Call:
                sinfo = ann
        self._consume_name(in_dataflow)
        var = self._new_var(target, sinfo, in_dataflow, outputs)
        bindings.append(_make_var_binding(var, expr, _span(self.source, stmt.line, stmt.col,
                                                           stmt.end_line, stmt.end_col)))

    def _unpack(self, stmt: AssignTuple) -> list[Assign]:
        """``a, b = x, y`` as ``a = x`` then ``b = y`` (``m, n = T.int64(), T.int64()``
        declares two dimensions). TVM unpacks the Python tuple written on the right; a
        Relax value (a call returning a tuple) cannot be unpacked."""
        value = stmt.value
        n = len(stmt.targets)
        if not isinstance(value, TupleExpr):
            self.error(f"cannot unpack this value into {n} names: write one value per name "
                       "(a, b = x, y), or bind the tuple and index it (t[0], t[1])", value)
        if len(value.elts) != n:
            self.error(f"{n} names but {len(value.elts)} values", value)
        out = []
        for target, elt in zip(stmt.targets, value.elts):
            one = Assign.__new__(Assign)
            one.target, one.annotation, one.value = target, None, elt
            one.place(target, elt)
            out.append(one)
        return out

    def _prim_literal_value(self, node: Node, ann: PrimStructInfo) -> PrimValue | None:
        """TVM: a Python number bound under an ``R.Prim`` annotation is a PrimValue of the
        annotation's dtype (``p: R.Prim("int64") = 3``), not a constant tensor; None if
        ``node`` is not a number."""
        if not (type(node) is Literal or (type(node) is Neg and type(node.operand) is Literal)):
            return None
        v = self.evaluate(node)
        if not isinstance(v, (bool, int, float)):
            return None
        dtype = ann.dtype
        is_float_dtype = dtype.startswith(("float", "bfloat"))
        if isinstance(v, float) and not is_float_dtype:
            self.error(f"a float value cannot be a {dtype} primitive value", node, TypeInferenceError)
        if not isinstance(v, float) and not dtype.startswith(("int", "uint", "bool")):
            self.error(f"an integer value cannot be a {dtype} primitive value (write {float(v)!r})",
                       node, TypeInferenceError)
        return PrimValue(v, dtype, self.span(node))

    def _consume_name(self, in_dataflow: bool) -> None:
        """TVM's parser emits every binding through its BlockBuilder, which draws a name
        (``lv``/``gv``) from the function's supply before the statement's own name replaces
        it; temporaries of nested calls are numbered after those drawn names."""
        self.temp_names.fresh("lv" if in_dataflow else "gv")

    def _typevar(self, stmt: Assign, call: CallExpr) -> None:
        if (len(call.args) != 1 or not isinstance(call.args[0], Literal)
                or not isinstance(call.args[0].value, str)):
            self.error('expected NAME = TypeVar("NAME")', call)
        self.declared.add(stmt.target.id)

    def _match_cast(self, stmt: Assign, call: CallExpr, bindings: list[Binding], in_dataflow: bool,
                    outputs: Outputs | None) -> None:
        a = self._args(call, ("value", "struct_info"), "R.match_cast")
        if "value" not in a or "struct_info" not in a:
            self.error("R.match_cast takes a value and a type", call)
        value = self.leaf(self.read_value(a["value"]), a["value"])
        cast = self.read_type(a["struct_info"])
        if stmt.annotation is not None:
            # TVM: the annotation of a match_cast must be the cast type itself
            ann = self.read_type(stmt.annotation)
            if not structural_equal(ann, cast):
                from .printer import print_expr

                self.error(f"the annotation of '{stmt.target.id}' must be the cast type itself, "
                           f"{print_expr(cast)}", stmt.annotation, TypeInferenceError)
        self._consume_name(in_dataflow)
        var = self._new_var(stmt.target, cast, in_dataflow, outputs)
        bindings.append(MatchCast(var, value, cast, self.span(stmt)))

    def _expr_statement(self, stmt: ExprStmt, bindings: list[Binding], in_dataflow: bool) -> None:
        value = stmt.value
        if type(value) is Literal and isinstance(value.value, str):
            return  # a docstring
        if type(value) is CallExpr and self.lookup_value("R") is None:
            callee = dotted_name(value.func)
            if callee == "R.func_attr":
                self._func_attr(value)
                return
            if callee == "R.output":
                self.error("R.output(...) outside a dataflow block" if not in_dataflow
                           else "R.output(...) must be the last statement of its dataflow block", value)
        expr = self.read_value(value)
        self._consume_name(in_dataflow)
        cls = DataflowVar if in_dataflow else Var
        var = cls("_", expr.struct_info, self.span(stmt))
        bindings.append(VarBinding(var, expr, self.span(stmt)))

    def _func_attr(self, call: CallExpr) -> None:
        if len(call.args) != 1 or call.kwargs or not isinstance(call.args[0], DictExpr):
            self.error("R.func_attr takes one dictionary", call)
        attrs = self.module.read_attr_dict(call.args[0], self)
        for key in attrs:
            if not isinstance(key, str):
                self.error("function attribute names must be strings", call.args[0])
        self.attrs.update(attrs)

    def _local_function(self, stmt: FuncDef, bindings: list[Binding], in_dataflow: bool,
                        outputs: Outputs | None) -> None:
        reader = FunctionReader(self.module, stmt, parent=self)
        func = reader.read()
        self.module.where = stmt
        self._bindings = bindings
        self._in_dataflow = in_dataflow
        self._consume_name(in_dataflow)
        var = self._new_var(stmt.name, func.struct_info, in_dataflow, outputs)
        bindings.append(VarBinding(var, func, self.span(stmt)))

    # ------------------------------------------------------------------ dataflow blocks
    def _read_dataflow(self, stmt: With) -> list[Binding]:
        ctx = stmt.context
        if not (isinstance(ctx, CallExpr) and dotted_name(ctx.func) == "R.dataflow"):
            self.error("only `with R.dataflow():` blocks are supported", ctx)
        if ctx.args or ctx.kwargs:
            self.error("R.dataflow() takes no arguments", ctx)
        body = stmt.body
        outputs, output_call = self._outputs(body)
        bindings: list[Binding] = []
        saved: dict[str, Var | _Module | None] = {}  # None: not bound before the block
        for s in body:
            self.module.where = s
            if s is output_call:
                continue
            for name in _bound_names(s):
                if name not in saved:
                    saved[name] = self.values.get(name)
            self._statement(s, bindings, True, outputs)
        # names bound in the block that are not outputs leave scope
        for name, prev in saved.items():
            if isinstance(self.values.get(name), DataflowVar):
                if prev is None:
                    del self.values[name]
                else:
                    self.values[name] = prev
        self._in_dataflow = False
        return retype_dataflow(bindings)

    def _outputs(self, body: list[Node]) -> tuple[Outputs, ExprStmt | None]:
        """``{name: the Name node of its last binding}`` for the names in ``R.output``."""
        last = body[-1] if body else None
        output_call = None
        names: list[Name] = []
        if (isinstance(last, ExprStmt) and isinstance(last.value, CallExpr)
                and dotted_name(last.value.func) == "R.output"):
            output_call = last
            call = last.value
            if call.kwargs:
                self.error("R.output takes variable names only", call.kwargs[0])
            for arg in call.args:
                if not isinstance(arg, Name):
                    self.error("R.output takes variable names only", arg)
                names.append(arg)
        last_binding: dict[str, Name] = {}
        for s in body:
            if s is output_call:
                continue
            if isinstance(s, Assign):
                last_binding[s.target.id] = s.target
            elif isinstance(s, AssignTuple):
                for t in s.targets:
                    last_binding[t.id] = t
            elif isinstance(s, FuncDef):
                last_binding[s.name.id] = s.name
            elif isinstance(s, IfStmt):
                self.error("if/else cannot be inside a dataflow block", s)
        outputs: Outputs = {}
        for n in names:
            target = last_binding.get(n.id)
            if target is None:
                self.error(f"R.output: '{n.id}' is not bound in this dataflow block", n)
            outputs[n.id] = target
        return outputs, output_call


def _bound_names(stmt: Node) -> list[str]:
    if isinstance(stmt, Assign):
        return [stmt.target.id]
    if isinstance(stmt, AssignTuple):
        return [t.id for t in stmt.targets]
    if isinstance(stmt, FuncDef):
        return [stmt.name.id]
    return []


def _normalize_blocks(blocks: list[BindingBlock]) -> list[BindingBlock]:
    """Drop empty blocks and merge neighbours of the same kind (TVM's block normalisation:
    two adjacent dataflow blocks become one)."""
    out: list[BindingBlock] = []
    for b in blocks:
        if not b.bindings:
            continue
        if out and type(out[-1]) is type(b):
            prev = out[-1]
            out[-1] = type(b)(prev.bindings + b.bindings, prev.span)
        else:
            out.append(b)
    return out


__all__ = ["FunctionReader"]


def _is_return_leaf(expr: Expr) -> bool:
    """A return value that stays in the ``return`` statement: a variable, a constant, or a
    tuple of such leaves (``return (h, e)``)."""

    return is_leaf(expr)


def _names_in(node: Node) -> set[str]:
    """Every name a syntax subtree reads (``Name.id``), found with an explicit stack."""
    found: set[str] = set()
    stack: list[object] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Name):
            found.add(n.id)
            continue
        if isinstance(n, (list, tuple)):
            stack.extend(n)
            continue
        if not isinstance(n, Node):
            continue
        for cls in type(n).__mro__:
            for slot in getattr(cls, "__slots__", ()):
                if slot in ("line", "col", "end_line", "end_col"):
                    continue
                value = getattr(n, slot, None)
                if isinstance(value, (Node, list, tuple)):
                    stack.append(value)
    return found
