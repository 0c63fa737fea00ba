"""Reading type annotations and dimensions (docs/textual-ir.md#type-annotations, #meaning-of-the-text).

:class:`TypeReader` is a mixin of the function reader in :mod:`byocc.text.parser`; it turns
annotation syntax (``R.Tensor((n, 4), dtype="float32")``, ``R.Tuple(...)``, ``T.int64``...)
into struct info, and dimension syntax (``n * 2``, ``"n * 2"``, ``T.max(a, b)``) into dims.
Names in dimensions are resolved by the host through :meth:`dim_name`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import fields
from functools import lru_cache
from typing import TYPE_CHECKING
from typing import NoReturn
from typing import TypeVar
from typing import cast

from byocc.ir import ByoccError
from byocc.ir import Dim
from byocc.ir import FuncStructInfo
from byocc.ir import ObjectStructInfo
from byocc.ir import ParseError
from byocc.ir import PrimExpr
from byocc.ir import PrimMinMax
from byocc.ir import PrimStructInfo
from byocc.ir import ShapeStructInfo
from byocc.ir import Span
from byocc.ir import StructInfo
from byocc.ir import TensorStructInfo
from byocc.ir import TirVar
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ir import simplify_binary
from byocc.ir import substitute_dim
from byocc.ir.arith import provably_different
from byocc.ir.prim import dim_text

from .syntax import Attr
from .syntax import BinOp
from .syntax import CallExpr
from .syntax import ListExpr
from .syntax import Literal
from .syntax import Name
from .syntax import Neg
from .syntax import Node
from .syntax import TensorType
from .syntax import TupleExpr

if TYPE_CHECKING:
    from byocc.ir import TirVar as _TirVar

    from ._parse_expr import _Module

_N = TypeVar("_N", bound=Node)
_T = TypeVar("_T")

_DTYPE_RE = re.compile(
    r"(bool|handle|u?int(1|4|8|16|32|64)|float(16|32|64)|bfloat16"
    r"|float8_e[0-9]m[0-9](fn|fnuz|b11fnuz)?|float6_e[0-9]m[0-9]fn|float4_e2m1fn)(x[0-9]+)?\Z"
)
PRIM_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float16", "float32", "float64", "bfloat16")
TYPE_NAMES = ("R.Tensor", "R.Tuple", "R.Shape", "R.Any", "R.Object", "R.Callable", "R.Prim")


def is_valid_dtype(dtype: str) -> bool:
    return bool(_DTYPE_RE.match(dtype))


def dotted_name(node: Node | None) -> str | None:
    """``R.nn.conv2d`` for an attribute chain of names, else None."""
    if type(node) is Attr:  # the common one- and two-level chains first
        inner = node.value
        if type(inner) is Name:
            return f"{inner.id}.{node.attr}"
        if type(inner) is Attr and type(inner.value) is Name:
            return f"{inner.value.id}.{inner.attr}.{node.attr}"
    elif type(node) is Name:
        return node.id
    parts: list[str] = []
    while isinstance(node, Attr):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


_TENSOR_TOKEN_RE = re.compile(r'R\.Tensor\(\(([^()]*)\)(?:, dtype="(\w*)")?\)\Z')


@lru_cache(maxsize=4096)
def split_tensor_token(text: str) -> tuple[tuple[int | str, ...], str | None, int]:
    """``R.Tensor((2, n), dtype="f32")`` -> ((2, "n"), "f32", column offset of the dtype)."""
    m = _TENSOR_TOKEN_RE.match(text)
    assert m is not None, text  # the grammar's TENSOR_TYPE only matches this form
    dims = tuple(int(d) if d[0].isdigit() else d for d in (p.strip() for p in m.group(1).split(",")) if d)
    return dims, m.group(2), m.start(2) if m.group(2) is not None else 0


def slot_maker(cls: type[_T]) -> Callable[..., _T]:
    """``cls(*all_fields)`` in about half the time, for a frozen slots dataclass the reader
    builds per binding (Span, Var, VarBinding, Call): the generated ``__init__`` stores each
    field through ``object.__setattr__``; this fills the slots directly, which gives the
    same object. ``cls`` itself is returned unless the class is exactly that (fields all
    in ``__init__``, slots, the generated ``__init__``, no ``__post_init__``)."""
    try:
        names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    except TypeError:
        return cls
    init = cls.__dict__.get("__init__")
    if (init is None or getattr(getattr(init, "__code__", None), "co_filename", None) != "<string>"
            or cls.__new__ is not object.__new__ or hasattr(cls, "__post_init__") or any(not f.init for f in fields(cls))):  # type: ignore[arg-type]
        return cls
    env: dict[str, object] = {"new": object.__new__, "cls": cls}
    for i, name in enumerate(names):
        slot = next((k.__dict__[name] for k in cls.__mro__ if name in k.__dict__), None)
        if type(slot).__name__ != "member_descriptor":
            return cls
        env[f"s{i}"] = slot.__set__  # type: ignore[union-attr]
    params = ", ".join(f"a{i}" for i in range(len(names)))
    body = "".join(f"    s{i}(o, a{i})\n" for i in range(len(names)))
    exec(f"def make({params}):\n    o = new(cls)\n{body}    return o\n", env)  # noqa: S102
    return cast("Callable[..., _T]", env["make"])


_span = slot_maker(Span)


class TypeReader:
    """Mixin: needs ``source``, ``dim_name(name_node, in_signature)``, ``lookup_value(name)``
    and ``parse_dim_text(text, node)`` from the host."""

    source: str
    _static_tensor_cache: dict[str, TensorStructInfo]

    if TYPE_CHECKING:  # from the host (FunctionReader)
        def dim_name(self, node: Name, in_signature: bool = False, legacy: bool = False) -> Dim: ...
        def lookup_value(self, name: str) -> Var | _Module | None: ...
        def parse_dim_text(self, text: str, node: Node) -> Node: ...

    # ------------------------------------------------------------------ errors
    def span(self, node: Node) -> Span:
        return _span(self.source, node.line, node.col, node.end_line, node.end_col)

    def error(self, message: str, node: Node | None, cls: type[ByoccError] = ParseError) -> NoReturn:
        raise cls(message, self.span(node) if node is not None else None)

    # ------------------------------------------------------------------ types
    def read_type(self, node: Node, in_signature: bool = False) -> StructInfo:
        """The struct info an annotation denotes."""
        if isinstance(node, TensorType):
            return self._tensor_token(node, in_signature)
        if isinstance(node, CallExpr):
            name = dotted_name(node.func)
            if name in ("R.Tensor",):
                return self._tensor_call(node, in_signature)
            if name == "R.Tuple":
                return self._tuple_call(node, in_signature)
            if name == "R.Shape":
                return self._shape_call(node, in_signature)
            if name in ("R.Any", "R.Object"):
                if node.args or node.kwargs:
                    self.error(f"{name} takes no arguments", node)
                return ObjectStructInfo()
            if name == "R.Prim":
                return self._prim_call(node)
            if name == "R.Callable":
                return self._callable_call(node, in_signature)
            self.error(f"expected a type (R.Tensor, R.Tuple, R.Shape, T.int64, ...), found a call to {name or 'an expression'}", node)
        name = dotted_name(node)
        if name is not None and name.split(".", 1)[0] not in ("R", "T", "I"):
            found = self._value_type(node)  # ``out_ty=x.ty``, a struct info bound in Python
            if found is not None:
                return found
        if name is not None:
            if name == "R.Tensor":
                return TensorStructInfo()
            if name == "R.Tuple":
                return TupleStructInfo(())
            if name == "R.Shape":
                return ShapeStructInfo(None, -1)
            if name in ("R.Any", "R.Object"):
                return ObjectStructInfo()
            if name == "R.Callable":
                return FuncStructInfo(None, ObjectStructInfo(), False)
            if name.startswith("T.") and name.count(".") == 1:
                dtype = name[2:]
                if is_valid_dtype(dtype):
                    return PrimStructInfo(dtype)
                self.error(f"unknown data type '{dtype}' in {name}", node)
            self.error(f"expected a type (R.Tensor, R.Tuple, R.Shape, T.int64, ...), found '{name}'", node)
        self.error("expected a type (R.Tensor, R.Tuple, R.Shape, T.int64, ...)", node)

    def _python_raw(self, node: Node) -> object:
        """What a name or attribute evaluates to in a script, or None (no such value)."""
        evaluate = getattr(self, "evaluate", None)
        if evaluate is None:
            return None
        try:
            return evaluate(node)
        except ByoccError:
            return None

    def _value_type(self, node: Node) -> StructInfo | None:
        """The struct info a name or attribute evaluates to in a script (``x.ty``, a Python
        value), or None (then the caller reports the annotation)."""
        evaluate = getattr(self, "evaluate", None)
        if evaluate is None:
            return None
        try:
            value = evaluate(node)
        except ByoccError:
            return None
        return value if isinstance(value, StructInfo) else None

    def read_types(self, node: Node, in_signature: bool = False) -> StructInfo | list[StructInfo]:
        """A type, or a list/tuple of types (``out_ty=[...]``, ``ty_args=(...)``)."""
        if isinstance(node, (ListExpr, TupleExpr)):
            return [self.read_type(e, in_signature) for e in node.elts]
        return self.read_type(node, in_signature)

    def read_dtype(self, node: Node) -> str | None:
        if isinstance(node, Literal) and node.value is None:
            return None
        if isinstance(node, (Name, Attr)):
            value = self._python_raw(node)  # a dtype string of the script's Python code
            if isinstance(value, str):
                node = Literal(value, repr(value), _FakeToken(node, 0, node.end_col - node.col))
        if not isinstance(node, Literal) or not isinstance(node.value, str):
            self.error("expected a data type string such as \"float32\"", node)
        dtype = node.value
        if dtype in ("", "void"):
            return None
        if not is_valid_dtype(dtype):
            self.error(f"unknown data type \"{dtype}\"", node)
        return dtype

    def _int_literal(self, node: Node, what: str) -> int:
        value = node
        sign = 1
        if isinstance(node, Neg):
            value = node.operand
            sign = -1
        if not isinstance(value, Literal) or type(value.value) is not int:
            self.error(f"{what} must be an integer", node)
        return sign * value.value

    def _args(self, node: CallExpr, names: tuple[str, ...], what: str) -> dict[str, Node]:
        """Positional and keyword arguments of a type constructor, by parameter name."""
        out: dict[str, Node] = {}
        if len(node.args) > len(names):
            self.error(f"{what} takes at most {len(names)} positional arguments", node.args[len(names)])
        for name, arg in zip(names, node.args):
            out[name] = arg
        for kw in node.kwargs:
            if kw.name not in names:
                self.error(f"{what} got an unexpected keyword argument '{kw.name}'", kw)
            if kw.name in out:
                self.error(f"{what} got multiple values for '{kw.name}'", kw)
            out[kw.name] = kw.value
        return out

    def _tensor_token(self, node: TensorType, in_signature: bool) -> TensorStructInfo:
        cached = self._static_tensor_cache.get(node.text)
        if cached is not None:
            return cached
        dims, dtype, dtype_col = split_tensor_token(node.text)
        if dtype is not None and dtype in ("", "void"):
            dtype = None
        elif dtype is not None and not is_valid_dtype(dtype):
            bad = Literal(dtype, dtype, _FakeToken(node, dtype_col, len(dtype)))
            self.error(f"unknown data type \"{dtype}\"", bad)
        if all(type(d) is int for d in dims):
            si = TensorStructInfo(cast("tuple[int, ...]", dims), dtype)
            self._static_tensor_cache[node.text] = si
            return si
        shape: list[Dim] = []
        for d in dims:
            if isinstance(d, int):
                shape.append(d)
            else:
                found = re.search(rf"\b{d}\b", node.text[10:])
                offset = 10 + found.start() if found else 0
                shape.append(self.dim_name(Name(_FakeToken(node, offset, len(d), d)), in_signature))
        return TensorStructInfo(tuple(shape), dtype)

    def _tensor_call(self, node: CallExpr, in_signature: bool) -> TensorStructInfo:
        a = self._args(node, ("shape", "dtype", "ndim"), "R.Tensor")
        shape_node = a.get("shape")
        dtype_node = a.get("dtype")
        if (isinstance(shape_node, Literal) and isinstance(shape_node.value, str)
                and dtype_node is None):
            shape_node, dtype_node = None, shape_node  # R.Tensor("float32", ndim=2)
        dtype = self.read_dtype(dtype_node) if dtype_node is not None else None
        ndim = -1
        if "ndim" in a:
            ndim = self._int_literal(a["ndim"], "ndim")
            if ndim < -1:
                self.error("ndim must be -1 (unknown) or at least 0", a["ndim"])
        if shape_node is None or (isinstance(shape_node, Literal) and shape_node.value is None):
            return TensorStructInfo(None, dtype, ndim)
        if isinstance(shape_node, (TupleExpr, ListExpr)):
            shape = tuple(self.read_dim(d, in_signature) for d in shape_node.elts)
            if ndim != -1 and ndim != len(shape):
                self.error(f"ndim={ndim} does not match the shape's {len(shape)} dimensions", a["ndim"])
            return TensorStructInfo(shape, dtype)
        if isinstance(shape_node, Name):
            var = self.lookup_value(shape_node.id)
            if isinstance(var, Var) and isinstance(var.struct_info, ShapeStructInfo):
                return TensorStructInfo(None, dtype, var.struct_info.ndim if ndim == -1 else ndim, shape_var=var)
            value = self._python_raw(shape_node) if var is None else None
            if isinstance(value, (tuple, list)) and all(
                    (isinstance(d, int) and not isinstance(d, bool)) or isinstance(d, PrimExpr) for d in value):
                return TensorStructInfo(tuple(value), dtype)  # a shape of the script's Python code
        self.error("the shape of R.Tensor must be a tuple or list of dimensions", shape_node)

    def _tuple_call(self, node: CallExpr, in_signature: bool) -> TupleStructInfo:
        if node.kwargs:
            self.error("R.Tuple takes no keyword arguments", node.kwargs[0])
        args = node.args
        if len(args) == 1 and isinstance(args[0], (ListExpr, TupleExpr)):
            args = args[0].elts
        return TupleStructInfo(tuple(self.read_type(f, in_signature) for f in args))

    def _shape_call(self, node: CallExpr, in_signature: bool) -> ShapeStructInfo:
        a = self._args(node, ("values", "ndim"), "R.Shape")
        values = a.get("values")
        ndim = self._int_literal(a["ndim"], "ndim") if "ndim" in a else -1
        if values is None or (isinstance(values, Literal) and values.value is None):
            return ShapeStructInfo(None, ndim)
        if not isinstance(values, (ListExpr, TupleExpr)):
            self.error("R.Shape takes a list of dimensions", values)
        dims = tuple(self.read_dim(d, in_signature) for d in values.elts)
        if ndim != -1 and ndim != len(dims):
            self.error(f"ndim={ndim} does not match the {len(dims)} values", a["ndim"])
        return ShapeStructInfo(dims)

    def _prim_call(self, node: CallExpr) -> PrimStructInfo:
        a = self._args(node, ("dtype", "value"), "R.Prim")
        if "dtype" not in a:
            self.error("R.Prim needs a dtype", node)
        dtype = self.read_dtype(a["dtype"])
        if dtype is None:
            self.error("R.Prim needs a dtype", a["dtype"])
        return PrimStructInfo(dtype)

    def _callable_call(self, node: CallExpr, in_signature: bool) -> FuncStructInfo:
        a = self._args(node, ("params", "ret", "purity"), "R.Callable")
        params = None
        if "params" in a and not (isinstance(a["params"], Literal) and a["params"].value is None):
            p = a["params"]
            if not isinstance(p, (TupleExpr, ListExpr)):
                self.error("R.Callable's parameters must be a tuple of types", p)
            params = tuple(self.read_type(x, in_signature) for x in p.elts)
        ret: StructInfo = ObjectStructInfo()
        if "ret" in a and not (isinstance(a["ret"], Literal) and a["ret"].value is None):
            ret = self.read_type(a["ret"], in_signature)
        purity = True
        if "purity" in a:
            pn = a["purity"]
            if not isinstance(pn, Literal) or not isinstance(pn.value, bool):
                self.error("purity must be True or False", pn)
            purity = pn.value
        return FuncStructInfo(params, ret, purity)

    # ------------------------------------------------------------------ dimensions
    def read_dim(self, node: Node, in_signature: bool = False, quoted: bool = False) -> Dim:
        """A dimension: an int, a symbolic variable or an expression of them."""
        if isinstance(node, Literal):
            v = node.value
            if type(v) is int:
                return v
            if isinstance(v, str) and not quoted:
                inner = self.parse_dim_text(v, node)
                if in_signature and isinstance(inner, Name):
                    return self.dim_name(_relocate(inner, node), in_signature, legacy=True)
                return self.read_dim(_relocate_tree(inner, node), in_signature, quoted=True)
            self.error("expected a dimension (an integer or a symbolic expression)", node)
        if isinstance(node, Name):
            return self.dim_name(node, in_signature)
        if isinstance(node, BinOp):
            if node.op == "/":
                self.error("dimensions use integer division '//', not '/'", node)
            if node.op not in ("+", "-", "*", "//", "%"):
                self.error(f"'{node.op}' is not supported on dimensions (only + - * // %)", node)
            a = self.read_dim(node.a, in_signature, quoted)
            b = self.read_dim(node.b, in_signature, quoted)
            return simplify_binary(node.op, a, b)
        if isinstance(node, Neg):
            d = self.read_dim(node.operand, in_signature, quoted)
            return -d if isinstance(d, int) else simplify_binary("-", 0, d)
        if isinstance(node, CallExpr):
            name = dotted_name(node.func)
            if name in ("T.max", "T.min") and len(node.args) == 2 and not node.kwargs:
                return PrimMinMax(name[2:], self.read_dim(node.args[0], in_signature, quoted),
                                  self.read_dim(node.args[1], in_signature, quoted))
            if name in ("T.int64", "T.int32") and len(node.args) == 1 and not node.kwargs:
                return self.read_dim(node.args[0], in_signature, quoted)
        self.error("expected a dimension (an integer or a symbolic expression)", node)


class _FakeToken:
    """Position of a piece of a token (for errors inside TENSOR_TYPE or quoted dims)."""

    __slots__ = ("line", "column", "end_line", "end_column", "text")

    def __init__(self, node: Node, offset: int, length: int, text: str = "") -> None:
        self.line = node.line
        self.column = node.col + offset
        self.end_line = node.line
        self.end_column = self.column + length
        self.text = text

    def __str__(self) -> str:
        return self.text


def _relocate(inner: _N, outer: Node) -> _N:
    """Move a node parsed from a quoted string to the string's position in the file."""
    if outer.line == outer.end_line:
        col = outer.col + 1 + (inner.col - 1)
        inner.line = inner.end_line = outer.line
        inner.end_col = col + (inner.end_col - inner.col)
        inner.col = col
    else:
        inner.line, inner.col, inner.end_line, inner.end_col = outer.line, outer.col, outer.end_line, outer.end_col
    return inner


def _relocate_tree(inner: Node, outer: Node) -> Node:
    stack: list[Node] = [inner]
    while stack:
        n = stack.pop()
        if isinstance(n, Node):
            _relocate(n, outer)
            for child in (getattr(n, s, None) for s in ("a", "b", "operand", "func", "value")):
                if isinstance(child, Node):
                    stack.append(child)
            for seq in (getattr(n, s, None) for s in ("args", "elts")):
                if isinstance(seq, list):
                    stack.extend(seq)
    return inner


# --------------------------------------------------------------------------- struct info helpers
def substitute_sinfo(si: StructInfo, mapping: dict[_TirVar, Dim]) -> StructInfo:
    """``si`` with TirVars replaced per ``mapping`` (TirVar -> dim)."""
    if not mapping or si is None:
        return si
    if isinstance(si, TensorStructInfo):
        if si.shape is None:
            return si
        return TensorStructInfo(tuple(substitute_dim(d, mapping) for d in si.shape), si.dtype)
    if isinstance(si, ShapeStructInfo):
        if si.values is None:
            return si
        return ShapeStructInfo(tuple(substitute_dim(d, mapping) for d in si.values))
    if isinstance(si, TupleStructInfo):
        return TupleStructInfo(tuple(substitute_sinfo(f, mapping) for f in si.fields))
    if isinstance(si, FuncStructInfo):
        params = None if si.params is None else tuple(substitute_sinfo(p, mapping) for p in si.params)
        return FuncStructInfo(params, substitute_sinfo(si.ret, mapping), si.purity)
    return si


def match_sinfo_vars(param: StructInfo | None, arg: StructInfo | None, mapping: dict[_TirVar, Dim]) -> None:
    """Bind the TirVars of a callee's parameter type to the argument's dims (first wins)."""
    stack = [(param, arg)]
    while stack:
        p, a = stack.pop()
        if isinstance(p, TensorStructInfo) and isinstance(a, TensorStructInfo):
            if p.shape is not None and a.shape is not None and len(p.shape) == len(a.shape):
                for pd, ad in zip(p.shape, a.shape):
                    if isinstance(pd, TirVar) and pd not in mapping:
                        mapping[pd] = ad
        elif isinstance(p, ShapeStructInfo) and isinstance(a, ShapeStructInfo):
            if p.values is not None and a.values is not None and len(p.values) == len(a.values):
                for pd, ad in zip(p.values, a.values):
                    if isinstance(pd, TirVar) and pd not in mapping:
                        mapping[pd] = ad
        elif isinstance(p, TupleStructInfo) and isinstance(a, TupleStructInfo):
            stack.extend(zip(p.fields, a.fields))


def incompatible(annotated: StructInfo | None, inferred: StructInfo | None) -> str | None:
    """Why a value of type ``inferred`` can provably not have type ``annotated``, or None."""

    if annotated is inferred or annotated is None or inferred is None or annotated == inferred:
        return None
    if isinstance(annotated, ObjectStructInfo) or isinstance(inferred, ObjectStructInfo):
        return None  # TVM: R.Any may hold a value of any type (at most a run-time check)
    if type(annotated) is not type(inferred):
        return "the value is a different kind of value"
    if isinstance(annotated, TensorStructInfo) and isinstance(inferred, TensorStructInfo):  # same type (above)
        if annotated.dtype and inferred.dtype and annotated.dtype != inferred.dtype:
            return f"dtype {annotated.dtype} does not match the value's {inferred.dtype}"
        if annotated.ndim != -1 and inferred.ndim != -1 and annotated.ndim != inferred.ndim:
            return f"rank {annotated.ndim} does not match the value's rank {inferred.ndim}"
        if annotated.shape is not None and inferred.shape is not None:
            for i, (a, b) in enumerate(zip(annotated.shape, inferred.shape)):
                if provably_different(a, b):
                    return f"dimension {i} ({dim_text(a)}) does not match the value's {dim_text(b)}"
        return None
    if isinstance(annotated, TupleStructInfo) and isinstance(inferred, TupleStructInfo):  # same type (above)
        if len(annotated.fields) != len(inferred.fields):
            return f"{len(annotated.fields)} fields do not match the value's {len(inferred.fields)}"
        for i, (fa, fb) in enumerate(zip(annotated.fields, inferred.fields)):
            why = incompatible(fa, fb)
            if why:
                return f"field {i}: {why}"
        return None
    if isinstance(annotated, ShapeStructInfo) and isinstance(inferred, ShapeStructInfo):  # same type (above)
        if annotated.ndim != -1 and inferred.ndim != -1 and annotated.ndim != inferred.ndim:
            return f"{annotated.ndim} dimensions do not match the value's {inferred.ndim}"
        if annotated.values is not None and inferred.values is not None:
            for i, (a, b) in enumerate(zip(annotated.values, inferred.values)):
                if provably_different(a, b):
                    return f"dimension {i} ({dim_text(a)}) does not match the value's {dim_text(b)}"
        return None
    if isinstance(annotated, PrimStructInfo) and isinstance(inferred, PrimStructInfo):  # same type (above)
        if annotated.dtype != inferred.dtype:
            return f"T.{annotated.dtype} does not match the value's T.{inferred.dtype}"
        if annotated.value is not None and inferred.value is not None and _values_differ(
                annotated.value, inferred.value):
            return f"{_value_text(annotated.value)} does not match the value's {_value_text(inferred.value)}"
    return None


def _values_differ(a: Dim | float, b: Dim | float) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a != b
    if isinstance(a, float) or isinstance(b, float):
        return False  # a float against a symbolic value: nothing is provable
    return provably_different(a, b)


def _value_text(v: Dim | float) -> str:
    return str(v) if isinstance(v, float) else dim_text(v)


__all__ = [
    "PRIM_DTYPES", "TYPE_NAMES", "TypeReader", "dotted_name", "incompatible", "is_valid_dtype",
    "match_sinfo_vars", "split_tensor_token", "substitute_sinfo",
]
