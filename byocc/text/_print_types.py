"""Printer mixin: type annotations, symbolic dimensions and attribute values.

docs/textual-ir.md#type-annotations, #symbolic-dimensions and #attributes-and-dictionaries (annotations, TypeVar / PEP 695 quoting of signature dimensions, dictionaries). The state it reads (frames, names, usage,
metadata) lives in :class:`byocc.text.printer._Printer`.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Any

from byocc.ir import Attrs
from byocc.ir import Constant
from byocc.ir import Dim
from byocc.ir import Expr
from byocc.ir import FuncStructInfo
from byocc.ir import ObjectStructInfo
from byocc.ir import PrimBinary
from byocc.ir import PrimMinMax
from byocc.ir import PrimStructInfo
from byocc.ir import ShapeStructInfo
from byocc.ir import StructInfo
from byocc.ir import TensorStructInfo
from byocc.ir import TirVar
from byocc.ir import TupleStructInfo
from byocc.ir import dim_vars

from ._print_format import escape_string
from ._print_format import format_float
from ._print_format import quote_string

if TYPE_CHECKING:
    from .printer import _Frame

_ATOM = 100  # precedence of literals, names, calls
_PREC = {"<": 0, ">": 0, "<=": 0, ">=": 0, "==": 0, "!=": 0, "+": 1, "-": 1, "*": 2, "//": 2, "%": 2}
_TIR_NAME = {"+": "Add", "-": "Sub", "*": "Mul", "//": "FloorDiv", "%": "FloorMod"}


def _tvm_would_fold(op: str, a: Dim, b: Dim) -> bool:
    """Whether TVM's ``tvm::add`` & co. would constant-fold ``a op b`` (then the printer
    spells the node ``T.Add(a, b)`` instead of using the operator)."""
    ai = isinstance(a, int)
    bi = isinstance(b, int)
    if ai and bi:
        return not (op in ("//", "%") and b == 0)
    if op == "+":
        return (ai and a == 0) or (bi and b == 0)
    if op == "-":
        return bi and b == 0
    if op == "*":
        return (ai and a in (0, 1)) or (bi and b in (0, 1))
    if op == "//":
        return (ai and a == 0) or (bi and b == 1)
    if op == "%":
        return (ai and a == 0) or (bi and b == 1)
    return False


class TypePrinterMixin:
    """Struct info, dims and attribute-value spelling."""

    if TYPE_CHECKING:  # the printer's state and the expression printer (printer._Printer)
        usage: set[str]
        pep695: bool
        sig_frame: _Frame | None
        _static_sinfo: dict[TensorStructInfo, str]

        def tir_var(self, v: TirVar) -> str: ...
        def metadata_ref(self, key: str, obj: object, by_value: bool = False) -> str: ...
        def expr(self, e: Expr) -> str: ...

    # ------------------------------------------------------------------ dimensions
    def dim(self, d: Dim | float) -> tuple[str, int]:
        """``(text, precedence)`` of a dimension, in body spelling (never quoted)."""
        if isinstance(d, bool):
            return ("True" if d else "False"), _ATOM
        if isinstance(d, int):
            return str(d), _ATOM
        if isinstance(d, TirVar):
            return self.tir_var(d), _ATOM
        if isinstance(d, PrimBinary):
            a, pa = self.dim(d.a)
            b, pb = self.dim(d.b)
            if d.op in _TIR_NAME and _tvm_would_fold(d.op, d.a, d.b):
                self.usage.add("tirx")
                return f"T.{_TIR_NAME[d.op]}({a}, {b})", _ATOM
            p = _PREC[d.op]
            if pa < p:
                a = f"({a})"
            if pb <= p:
                b = f"({b})"
            return f"{a} {d.op} {b}", p
        if isinstance(d, PrimMinMax):
            a, _ = self.dim(d.a)
            b, _ = self.dim(d.b)
            self.usage.add("tirx")
            return f"T.{d.op}({a}, {b})", _ATOM
        if isinstance(d, float):
            return format_float(d), _ATOM
        return str(d), _ATOM

    def shape_dim(self, d: Dim) -> str:
        """A dimension inside a type or ``R.shape``: quoted in a TypeVar-mode signature when
        it is an expression over the signature's own variables (docs/textual-ir.md#symbolic-dimensions)."""
        if type(d) is int:
            return str(d)
        text, _ = self.dim(d)
        f = self.sig_frame
        if f is None or self.pep695:
            return text
        func_vars = f.func_vars
        assert func_vars is not None  # set while its signature is printed (sig_frame)
        if not any(v in func_vars for v in dim_vars(d)):
            return text
        if isinstance(d, TirVar) and d in f.type_var_set:
            return text
        return '"' + escape_string(text) + '"'

    # ------------------------------------------------------------------ struct info
    def sinfo(self, si: StructInfo | None) -> str:
        """The annotation text of a struct info (docs/textual-ir.md#type-annotations)."""
        if type(si) is TensorStructInfo:
            return self._tensor_sinfo(si)
        if type(si) is TupleStructInfo:
            self.usage.add("relax")
            if not si.fields:
                return "R.Tuple"
            return "R.Tuple(" + ", ".join([self.sinfo(f) for f in si.fields]) + ")"
        if type(si) is ShapeStructInfo:
            self.usage.add("relax")
            if si.values is not None:
                return "R.Shape([" + ", ".join([self.shape_dim(v) for v in si.values]) + "])"
            return f"R.Shape(ndim={si.ndim})"
        if type(si) is ObjectStructInfo:
            self.usage.add("relax")
            return "R.Any"
        if type(si) is PrimStructInfo:
            self.usage.add("tirx")
            return "T." + (si.dtype or "void")
        if type(si) is FuncStructInfo:
            return self._func_sinfo(si)
        if si is None:
            self.usage.add("relax")
            return "R.Any"
        raise TypeError(f"cannot print struct info {si!r}")

    def _tensor_sinfo(self, si: TensorStructInfo) -> str:
        shape = si.shape
        if shape is not None and si.shape_var is None:
            # static shapes print the same everywhere: memoise by value
            cache = self._static_sinfo
            text = cache.get(si)
            if text is not None:
                return text
            if all(type(d) is int for d in shape):
                text = cache[si] = self._tensor_sinfo_text(si)
                return text
        return self._tensor_sinfo_text(si)

    def _tensor_sinfo_text(self, si: TensorStructInfo) -> str:
        self.usage.add("relax")
        parts: list[str] = []
        if si.shape is not None:
            dims = [self.shape_dim(d) for d in si.shape]
            if len(dims) == 1:
                parts.append(f"({dims[0]},)")
            else:
                parts.append("(" + ", ".join(dims) + ")")
        elif si.shape_var is not None:
            parts.append(self.expr(si.shape_var))
        if si.dtype is not None:
            parts.append('dtype="' + si.dtype + '"')
        if si.shape is None and si.shape_var is None and si.ndim != -1:
            parts.append(f"ndim={si.ndim}")
        if not parts:
            return "R.Tensor"
        return "R.Tensor(" + ", ".join(parts) + ")"

    def _func_sinfo(self, si: FuncStructInfo) -> str:
        self.usage.add("relax")
        ret = self.sinfo(si.ret)  # TVM prints the return type before the parameters
        purity = "True" if si.purity else "False"
        if si.params is None:
            kws: list[str] = []
            if not isinstance(si.ret, ObjectStructInfo):
                kws.append("ret=" + ret)
            if si.purity:
                kws.append("purity=True")
            return "R.Callable(" + ", ".join(kws) + ")" if kws else "R.Callable"
        params = [self.sinfo(p) for p in si.params]
        if len(params) == 1:
            ptext = f"({params[0]},)"
        else:
            ptext = "(" + ", ".join(params) + ")"
        return f"R.Callable({ptext}, {ret}, {purity})"

    # ------------------------------------------------------------------ attribute values
    def value(self, v: object, module_attrs: bool = False) -> str:
        """An attribute / dictionary value by its Python type (docs/textual-ir.md#attributes-and-dictionaries, #operator-calls)."""
        if v is None:
            return "None"
        if v is True or v is False:
            return "True" if v else "False"
        if isinstance(v, str):
            if "\n" in v:
                return self.metadata_ref("ffi.String", v, by_value=True)
            return quote_string(v)
        if isinstance(v, numbers.Integral):
            if type(v).__name__ in ("bool_", "bool"):
                return "True" if v else "False"
            return str(int(v))
        if isinstance(v, numbers.Real):
            return format_float(float(v))
        if isinstance(v, (tuple, list)):
            return "[" + ", ".join([self.value(x, module_attrs) for x in v]) + "]"
        if isinstance(v, dict):
            return self.dict_doc(v, module_attrs)
        if isinstance(v, Attrs):
            return "{" + ", ".join(
                f"{quote_string(k)}: {self.value(x, module_attrs)}" for k, x in v.items_) + "}"
        if getattr(v, "is_runtime_module", False):
            return self.metadata_ref("ffi.Module", v)
        if isinstance(v, Constant):
            if module_attrs:
                return self.metadata_ref("ffi.Tensor", v)
            return self.expr(v)
        if isinstance(v, StructInfo):
            return self.sinfo(v)
        if isinstance(v, Expr):
            return self.expr(v)
        if hasattr(v, "dtype") and hasattr(v, "shape"):  # a bare numpy array
            if getattr(v, "ndim", 1) == 0 and hasattr(v, "item"):
                return self.value(v.item(), module_attrs)
            return self.metadata_ref("ffi.Tensor", v)
        return self.metadata_ref(type(v).__name__, v)

    def dict_doc(self, d: Mapping[Any, object], module_attrs: bool = False) -> str:
        """``{k: v, ...}``; all-string keys are sorted bytewise, as TVM does."""
        items = list(d.items())
        if all(isinstance(k, str) for k, _ in items):
            items.sort(key=lambda kv: kv[0])
        return "{" + ", ".join(
            f"{self.value(k, module_attrs)}: {self.value(x, module_attrs)}" for k, x in items) + "}"
