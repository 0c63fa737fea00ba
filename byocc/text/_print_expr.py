"""Printer mixin: expressions (docs/textual-ir.md#expressions).

Every method returns the expression's text; side effects (defining a symbolic variable,
the ``cls = Module`` line, metadata numbering, header usage) go through the printer state
of :class:`byocc.text.printer._Printer`.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Any

from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowVar
from byocc.ir import DataTypeImm
from byocc.ir import Dim
from byocc.ir import Expr
from byocc.ir import ExternFunc
from byocc.ir import FuncStructInfo
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import If
from byocc.ir import InternalError
from byocc.ir import ObjectStructInfo
from byocc.ir import Op
from byocc.ir import PrimValue
from byocc.ir import SeqExpr
from byocc.ir import ShapeExpr
from byocc.ir import StringImm
from byocc.ir import StructInfo
from byocc.ir import TensorStructInfo
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import TupleStructInfo
from byocc.ir import Var

from ._print_format import format_float
from ._print_format import quote_string

if TYPE_CHECKING:
    from .printer import _Frame

# rank-0 constants of these dtypes print inline as R.const (docs/textual-ir.md#constants)
_SCALAR_DTYPES = frozenset(["int8", "int16", "int32", "int64", "float16", "float32", "float64", "bool"])
# ops printed as R.<name>(callee, args_tuple, out_ty=...) (docs/textual-ir.md#packed-calls-and-extern-functions)
_DPS_OPS = {
    "relax.call_tir": "R.call_tir",
    "relax.call_dps_packed": "R.call_dps_packed",
    "relax.call_tir_inplace": "R.call_tir_inplace",
}


#: Operators whose format string is an operand (at this index) that TVM prints as ``format=``.
_FORMAT_OPERAND = {"relax.print": 0, "relax.assert_op": 1}


def op_callee(op: Op) -> str:
    """The printed callee of an operator: the registry's ``printed`` (``R.nn.conv2d``),
    else ``R.`` + the name without ``relax.``; a non-Relax op prints its bare name."""
    od = op.op_def
    printed = getattr(od, "printed", None) if od is not None else None
    if printed:
        return printed
    name = op.name
    return "R." + name[6:] if name.startswith("relax.") else name


def dps_out_sinfo(call: Call) -> StructInfo | None:
    """The ``out_ty`` of a call_tir / call_dps_packed (one type; several mean a tuple)."""
    sargs = call.sinfo_args
    if len(sargs) == 1:
        return sargs[0]
    if not sargs:
        return None
    return TupleStructInfo(tuple(sargs))


class ExprPrinterMixin:
    """Expression spelling; dispatch by exact node type."""

    if TYPE_CHECKING:  # the printer's state and the type printer (printer._Printer)
        usage: set[str]
        names: dict[object, str]
        frames: list[_Frame]
        module_names: set[str] | None

        def define(self, obj: object, frame: _Frame, hint: str) -> str: ...
        def func_frame(self) -> _Frame | None: ...
        def metadata_ref(self, key: str, obj: object, by_value: bool = False) -> str: ...
        def sinfo(self, si: StructInfo | None) -> str: ...
        def dim(self, d: Dim | float) -> tuple[str, int]: ...
        def shape_dim(self, d: Dim) -> str: ...
        def value(self, v: object, module_attrs: bool = False) -> str: ...
        def dict_doc(self, d: Mapping[Any, object], module_attrs: bool = False) -> str: ...

    def _init_expr_table(self) -> None:
        self._expr_table: dict[type[Expr], Callable[[Any], str]] = {
            Var: self._var,
            DataflowVar: self._var,
            GlobalVar: self._global_var,
            Call: self._call,
            Tuple: self._tuple,
            TupleGetItem: self._tuple_get_item,
            Constant: self._constant,
            ShapeExpr: self._shape_expr,
            PrimValue: self._prim_value,
            StringImm: lambda e: self._relax("str") + "(" + quote_string(e.value) + ")",
            DataTypeImm: lambda e: self._relax("dtype") + "(" + quote_string(e.value) + ")",
            ExternFunc: self._extern_func,
            Op: self._op_value,
        }

    def expr(self, e: Expr) -> str:
        fn = self._expr_table.get(type(e))
        if fn is None:
            for klass, method in self._expr_table.items():
                if isinstance(e, klass):
                    fn = method
                    break
            else:
                if isinstance(e, (Function, If, SeqExpr)):
                    raise InternalError(f"cannot print a {type(e).__name__} in expression position")
                raise InternalError(f"cannot print {type(e).__name__} as a Relax expression")
        return fn(e)

    def rhs(self, e: Expr) -> str:
        """An assignment's right-hand side: a tuple of two or more fields drops its parentheses."""
        if type(e) is Tuple and len(e.fields) > 1:
            return ", ".join([self.expr(f) for f in e.fields])
        return self.expr(e)

    def _relax(self, attr: str) -> str:
        self.usage.add("relax")
        return "R." + attr

    # ------------------------------------------------------------------ leaves
    def _var(self, v: Var) -> str:
        name = self.names.get(v)
        if name is not None:
            return name
        # a free variable: TVM declares it in the innermost frame (``x: R.Tensor(...)``)
        ann = self.sinfo(v.struct_info) if v.struct_info is not None else None
        frame = self.frames[-1]
        name = self.define(v, frame, v.name_hint)
        frame.stmts.append(f"{frame.indent}{name}: {ann}" if ann else f"{frame.indent}{name}")
        return name

    def _global_var(self, gv: GlobalVar) -> str:
        name = gv.name_hint
        if self.module_names is not None and name in self.module_names:
            frame = self.func_frame()
            if frame is not None and not frame.cls_printed:
                frame.stmts.append(frame.indent + "cls = Module")
                frame.cls_printed = True
            return "cls." + name
        return name

    def _constant(self, c: Constant) -> str:
        text = self._scalar_const(c)
        if text is not None:
            return text
        return self.metadata_ref("ir.GenericConst", c)

    def _scalar_const(self, c: Constant) -> str | None:
        data = c.data
        if data is None:
            return None
        if hasattr(data, "dtype"):
            if getattr(data, "ndim", None) != 0:
                return None
            dtype = str(data.dtype)
            value = data.item()
        else:  # a plain Python scalar, typed by the struct info
            si = c.struct_info
            if not isinstance(si, TensorStructInfo) or si.ndim != 0 or si.dtype is None:
                return None
            dtype, value = si.dtype, data
        if dtype not in _SCALAR_DTYPES:
            return None
        if dtype == "bool":
            lit = "True" if value else "False"
        elif dtype.startswith("int"):
            lit = str(int(value))
        else:
            lit = format_float(float(value))
        return self._relax("const") + f'({lit}, "{dtype}")'

    def _shape_expr(self, e: ShapeExpr) -> str:
        return self._relax("shape") + "([" + ", ".join([self.shape_dim(v) for v in e.values]) + "])"

    def _prim_value(self, e: PrimValue) -> str:
        v = e.value
        if v is True or v is False or type(v).__name__ == "bool_":
            return "True" if v else "False"
        if isinstance(v, float):
            self.usage.add("tirx")
            return f"T.{e.dtype}({format_float(v)})"
        text, _ = self.dim(v)
        return text

    def _extern_func(self, e: ExternFunc) -> str:
        args = [quote_string(e.global_symbol)]
        si = e.struct_info
        default = (isinstance(si, FuncStructInfo) and si.params is None and not si.purity
                   and isinstance(si.ret, ObjectStructInfo))
        if si is not None and not default:
            args.append(self.sinfo(si))
        return self._relax("ExternFunc") + "(" + ", ".join(args) + ")"

    def _op_value(self, e: Op) -> str:
        self.usage.add("ir")
        return f"I.Op({quote_string(e.name)})"

    # ------------------------------------------------------------------ compound
    def _tuple(self, e: Tuple) -> str:
        fields = e.fields
        if not fields:
            return self._relax("tuple") + "()"
        if len(fields) == 1:
            return "(" + self.expr(fields[0]) + ",)"
        return "(" + ", ".join([self.expr(f) for f in fields]) + ")"

    def _tuple_get_item(self, e: TupleGetItem) -> str:
        return f"{self.expr(e.tuple_value)}[{e.index}]"

    def _callee_arg(self, a: Expr) -> str:
        """The first argument of a call: an extern function prints as its symbol string."""
        if type(a) is ExternFunc:
            return quote_string(a.global_symbol)
        return self.expr(a)

    def _call(self, c: Call) -> str:
        op = c.op
        if type(op) is Op:
            dps = _DPS_OPS.get(op.name)
            if dps is not None and len(c.args) >= 2:
                return self._dps_call(c, dps)
            at = _FORMAT_OPERAND.get(op.name)
            if at is not None and len(c.args) > at:
                # R.print(x, format=R.str("...")): the format operand prints last, by keyword
                shown = [self.expr(a) for i, a in enumerate(c.args) if i != at]
                return op_callee(op) + "(" + ", ".join(shown + ["format=" + self.expr(c.args[at])]) + ")"
            self.usage.add("relax")
            callee = op_callee(op)
            args: list[str] = []
        elif type(op) is ExternFunc:
            callee = self._relax("call_packed")
            args = [quote_string(op.global_symbol)]
        elif isinstance(op, (Var, GlobalVar)):
            callee = self.expr(op)
            args = []
        else:
            raise InternalError(f"cannot print a call to a {type(op).__name__}")
        cargs = c.args
        if cargs:
            args.append(self._callee_arg(cargs[0]))
            for a in cargs[1:]:
                args.append(self.expr(a))
        attrs = c.attrs
        if attrs is not None:
            value = self.value
            for k, v in attrs.items_:
                args.append(f"{k}={value(v)}")
        if c.sinfo_args:
            tys = [self.sinfo(s) for s in c.sinfo_args]
            args.append("ty_args=(" + tys[0] + ",)" if len(tys) == 1 else "ty_args=(" + ", ".join(tys) + ")")
        return callee + "(" + ", ".join(args) + ")"

    def _dps_call(self, c: Call, callee: str) -> str:
        self.usage.add("relax")
        args = [self._callee_arg(c.args[0])]
        for a in c.args[1:]:
            args.append(self.expr(a))
        out = dps_out_sinfo(c)
        if out is not None:
            if isinstance(out, TupleStructInfo):
                args.append("out_ty=[" + ", ".join([self.sinfo(f) for f in out.fields]) + "]")
            else:
                args.append("out_ty=" + self.sinfo(out))
        if callee == "R.call_tir_inplace":
            idx = c.attrs.get("inplace_indices", ()) if c.attrs is not None else ()
            args.append("inplace_indices=[" + ", ".join(str(int(i)) for i in idx) + "]")
        return callee + "(" + ", ".join(args) + ")"
