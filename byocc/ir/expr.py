"""Relax expression nodes: immutable, identity-equal (``eq=False``), every node has a span.

Children are tuples. ``struct_info`` is filled when a node is normalized (parser,
:class:`byocc.ir.builder.BlockBuilder`, passes); check functions may read it as ``.ty``
(TVM 0.27's name) or ``.struct_info``.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING
from typing import Any

from .diagnostics import Span
from .prim import Dim
from .prim import TirVar
from .struct_info import FuncStructInfo
from .struct_info import ObjectStructInfo
from .struct_info import PrimStructInfo
from .struct_info import ShapeStructInfo
from .struct_info import StructInfo
from .struct_info import TensorStructInfo
from .struct_info import TupleStructInfo
from .struct_info import erase_to_well_defined
from .struct_info import is_base_of
from .struct_info import struct_info_vars


class Expr:
    """Base of every Relax expression."""

    __slots__ = ()

    if TYPE_CHECKING:
        # Every node has these: a field of most, a property of some (declared here for the
        # type checker only; a class attribute would clash with the subclasses' slots).
        @property
        def struct_info(self) -> StructInfo | None: ...

        @property
        def span(self) -> Span | None: ...

    @property
    def ty(self) -> StructInfo | None:
        return self.struct_info

    def __str__(self) -> str:  # docs/architecture.md#the-one-upward-import
        from byocc.text.printer import print_expr

        return print_expr(self)

    # ------------------------------------------------------------------ TVM's Python API
    def same_as(self, other: object) -> bool:
        """Whether ``other`` is this very node (TVM's reference equality)."""
        return self is other

    def script(self, **config: Any) -> str:
        """The node as TVMScript text (a function prints as ``@R.function`` / ``def``)."""
        from byocc.text.printer import print_expr

        return print_expr(self)

    def show(self, **config: Any) -> None:
        print(self.script(**config))  # noqa: T201  (TVM's show prints)

    def astype(self, dtype: str) -> Expr:
        """``R.astype(self, dtype)``."""
        return _operator("astype", (self,), {"dtype": dtype})

    # Python operators build calls, as in TVM (``x + y`` is ``R.add(x, y)``); both sides
    # must be expressions (a number needs ``relax.const`` first). ``==``/``!=`` stay identity.
    def __add__(self, other: Any) -> Expr: return _binary("add", self, other)
    def __radd__(self, other: Any) -> Expr: return _binary("add", other, self)
    def __sub__(self, other: Any) -> Expr: return _binary("subtract", self, other)
    def __rsub__(self, other: Any) -> Expr: return _binary("subtract", other, self)
    def __mul__(self, other: Any) -> Expr: return _binary("multiply", self, other)
    def __rmul__(self, other: Any) -> Expr: return _binary("multiply", other, self)
    def __truediv__(self, other: Any) -> Expr: return _binary("divide", self, other)
    def __rtruediv__(self, other: Any) -> Expr: return _binary("divide", other, self)
    def __floordiv__(self, other: Any) -> Expr: return _binary("floor_divide", self, other)
    def __rfloordiv__(self, other: Any) -> Expr: return _binary("floor_divide", other, self)
    def __mod__(self, other: Any) -> Expr: return _binary("mod", self, other)
    def __rmod__(self, other: Any) -> Expr: return _binary("mod", other, self)
    def __pow__(self, other: Any) -> Expr: return _binary("power", self, other)
    def __rpow__(self, other: Any) -> Expr: return _binary("power", other, self)
    def __lt__(self, other: Any) -> Expr: return _binary("less", self, other)
    def __gt__(self, other: Any) -> Expr: return _binary("greater", self, other)
    def __le__(self, other: Any) -> Expr: return _binary("less_equal", self, other)
    def __ge__(self, other: Any) -> Expr: return _binary("greater_equal", self, other)
    def __neg__(self) -> Expr: return _operator("negative", (self,), None)

    def __getitem__(self, index: int) -> Expr:
        """``t[i]``: item ``i`` of a tuple-typed expression (a :class:`TupleGetItem`;
        negative indices count from the end)."""
        si = self.struct_info
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"a tuple index must be an int, not {type(index).__name__}")
        if isinstance(si, TupleStructInfo):
            n = len(si.fields)
            if not -n <= index < n:
                raise IndexError(f"Tuple index out of range: {index} of a tuple of {n} fields")
            index %= n
            return TupleGetItem(self, index, si.fields[index])
        if si is None or isinstance(si, ObjectStructInfo):
            return TupleGetItem(self, index, ObjectStructInfo())
        raise TypeError("only tuple-typed expressions can be indexed")

    def __iter__(self) -> Iterator[Expr]:
        si = self.struct_info
        if not isinstance(si, TupleStructInfo):
            raise TypeError("only tuple-typed expressions can be iterated")
        return iter([self[i] for i in range(len(si.fields))])


#: Builds the call a Python operator on expressions makes: ``(op name, operands, attrs)`` ->
#: Call. Installed by the facade (:mod:`byocc.relax`); ir cannot import the op registry.
_OPERATOR_BUILDER: list[Callable[[str, tuple[Expr, ...], dict[str, Any] | None], Expr]] = []


def set_operator_builder(build: Callable[[str, tuple[Expr, ...], dict[str, Any] | None], Expr]) -> None:
    """Install what ``x + y`` and friends call (``build("add", (x, y), None)``)."""
    _OPERATOR_BUILDER[:] = [build]


def _operator(name: str, args: tuple[Expr, ...], attrs: dict[str, Any] | None) -> Expr:
    if not _OPERATOR_BUILDER:
        raise TypeError(f"Python operators on Relax expressions need the op registry: import "
                        f"byocc.relax first (R.{name})")
    return _OPERATOR_BUILDER[0](name, args, attrs)


def _binary(name: str, lhs: Any, rhs: Any) -> Expr:
    for side in (lhs, rhs):
        if not isinstance(side, Expr):
            raise TypeError(f"Please convert {side!r} with `const` first (R.{name} takes expressions)")
    return _operator(name, (lhs, rhs), None)


# --------------------------------------------------------------------------- operators
class Op(Expr):
    """An operator, interned by name: ``Op.get("relax.add") is Op.get("relax.add")``.

    ``Op.get`` of an unregistered name raises KeyError unless ``create=True``. The op
    registry (``byocc.ops``) attaches its entry as ``op.op_def``.
    """

    __slots__ = ("name", "op_def", "span", "__weakref__")
    _table: dict[str, Op] = {}

    def __init__(self, name: str) -> None:
        self.name = name
        self.op_def: Any = None  # byocc.ops's OpDef (a layer ir may not import, even for types)
        self.span: Span | None = None

    @property
    def struct_info(self) -> ObjectStructInfo:
        return ObjectStructInfo()

    @classmethod
    def get(cls, name: str, create: bool = False) -> Op:
        op = cls._table.get(name)
        if op is None:
            if not create:
                raise KeyError(name)
            op = cls._table[name] = Op(name)
        return op

    @classmethod
    def registered(cls) -> list[str]:
        return sorted(cls._table)

    def __repr__(self) -> str:
        return f"Op({self.name!r})"


@dataclass(frozen=True, slots=True)
class Attrs:
    """Operator attributes: ordered (name, value) pairs, value-equal, read as ``attrs.axis``.

    Values are ints, floats, bools, strings, ``None``, tuples of ints (printed as lists),
    or nested tuples. The op registry decides names, order and defaults.
    """

    items_: tuple[tuple[str, Any], ...] = ()

    def __getattr__(self, name: str) -> Any:
        for k, v in object.__getattribute__(self, "items_"):
            if k == name:
                return v
        raise AttributeError(name)

    def __getitem__(self, name: str) -> Any:
        for k, v in self.items_:
            if k == name:
                return v
        raise KeyError(name)

    def __contains__(self, name: str) -> bool:
        return any(k == name for k, _ in self.items_)

    def get(self, name: str, default: Any = None) -> Any:
        for k, v in self.items_:
            if k == name:
                return v
        return default

    def keys(self) -> list[str]:
        return [k for k, _ in self.items_]

    def items(self) -> list[tuple[str, Any]]:
        return list(self.items_)

    def replace(self, **changes: Any) -> Attrs:
        return Attrs(tuple((k, changes.get(k, v)) for k, v in self.items_))


# --------------------------------------------------------------------------- leaves
@dataclass(frozen=True, slots=True, eq=False)
class Var(Expr):
    """A variable. Identity is the object; ``name_hint`` is its actual (non-unique) name."""

    name_hint: str
    struct_info: StructInfo | None = None
    span: Span | None = None

    @property
    def name(self) -> str:
        """``name_hint`` (TVM 0.27's spelling)."""
        return self.name_hint

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name_hint!r}@{id(self):x})"


@dataclass(frozen=True, slots=True, eq=False)
class DataflowVar(Var):
    """A variable local to a dataflow block."""

    def __repr__(self) -> str:
        return f"DataflowVar({self.name_hint!r}@{id(self):x})"


@dataclass(frozen=True, slots=True, eq=False)
class GlobalVar(Expr):
    """A reference to a module member by name (``cls.f``)."""

    name_hint: str
    struct_info: StructInfo | None = None
    span: Span | None = None

    def __repr__(self) -> str:
        return f"GlobalVar({self.name_hint!r})"


_TENSOR_DATA: list[type] = []


def _tensor_data_class() -> type:
    """``TensorData``, a numpy array class that also answers TVM's ``tensor.numpy()``
    (defined on first use: numpy is loaded by then, since a constant holds an array)."""
    if not _TENSOR_DATA:
        import numpy as np

        class TensorData(np.ndarray):
            """A constant's values: a numpy array (a view, no copy) with TVM's ``.numpy()``."""

            def numpy(self) -> Any:
                return np.array(self)

        TensorData.__qualname__ = "TensorData"  # importable (and picklable) by name
        TensorData.__module__ = __name__
        _TENSOR_DATA.append(TensorData)
    return _TENSOR_DATA[0]


def __getattr__(name: str) -> Any:
    if name == "TensorData":
        return _tensor_data_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True, slots=True, eq=False)
class Constant(Expr):
    """A tensor constant. ``data`` is a numpy array (a view that also has TVM's
    ``.numpy()``), or ``None`` when the value is unknown (a ``metadata[...]`` reference read
    without its sidecar ``.npz``)."""

    data: Any
    struct_info: StructInfo | None = None
    span: Span | None = None
    # metadata index this constant had in the text it was read from (for sidecar files)
    source_index: int | None = None

    def __post_init__(self) -> None:
        data = self.data
        if data is not None and type(data).__name__ == "ndarray" and hasattr(data, "view"):
            object.__setattr__(self, "data", data.view(_tensor_data_class()))

    @property
    def is_scalar(self) -> bool:
        si = self.struct_info
        return isinstance(si, TensorStructInfo) and si.ndim == 0


@dataclass(frozen=True, slots=True, eq=False)
class ShapeExpr(Expr):
    """``R.shape([2, n * 2])``."""

    values: tuple[Dim, ...]
    span: Span | None = None

    @property
    def struct_info(self) -> ShapeStructInfo:
        return ShapeStructInfo(self.values)


@dataclass(frozen=True, slots=True, eq=False)
class PrimValue(Expr):
    """A primitive scalar value (``R.clip(x, 0, 6)`` bounds, ``T.float64(0.5)``)."""

    value: Dim | float  # an int, float or bool, or a symbolic Dim
    dtype: str = "int64"
    span: Span | None = None

    @property
    def struct_info(self) -> PrimStructInfo:
        return PrimStructInfo(self.dtype, self.value)


@dataclass(frozen=True, slots=True, eq=False)
class StringImm(Expr):
    value: str
    span: Span | None = None

    @property
    def struct_info(self) -> ObjectStructInfo:
        return ObjectStructInfo()


@dataclass(frozen=True, slots=True, eq=False)
class DataTypeImm(Expr):
    value: str
    span: Span | None = None

    @property
    def struct_info(self) -> ObjectStructInfo:
        return ObjectStructInfo()


@dataclass(frozen=True, slots=True, eq=False)
class ExternFunc(Expr):
    """``R.ExternFunc("symbol")``."""

    global_symbol: str
    struct_info: StructInfo | None = FuncStructInfo(None, ObjectStructInfo(), False)
    span: Span | None = None


# --------------------------------------------------------------------------- compound
@dataclass(frozen=True, slots=True, eq=False)
class Tuple(Expr):
    """A tuple literal; a sequence of its fields (``len(t)``, ``t[i]``, ``for f in t``)."""

    fields: tuple[Expr, ...]
    struct_info: StructInfo | None = None
    span: Span | None = None

    def __len__(self) -> int:
        return len(self.fields)

    def __bool__(self) -> bool:  # an expression, however short, is a value (not a container)
        return True

    def __getitem__(self, index: int) -> Expr:
        n = len(self.fields)
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"a tuple index must be an int, not {type(index).__name__}")
        if not -n <= index < n:
            raise IndexError(f"Tuple index out of range: {index} of a tuple of {n} fields")
        return self.fields[index]

    def __iter__(self) -> Iterator[Expr]:
        return iter(self.fields)


@dataclass(frozen=True, slots=True, eq=False)
class TupleGetItem(Expr):
    tuple_value: Expr
    index: int
    struct_info: StructInfo | None = None
    span: Span | None = None


@dataclass(frozen=True, slots=True, eq=False)
class Call(Expr):
    """A call. ``op`` is an :class:`Op`, a :class:`GlobalVar`, a :class:`Var` (local
    function), an :class:`ExternFunc` or a :class:`Function`. ``sinfo_args`` holds
    ``out_ty`` / ``ty_args``."""

    op: Expr
    args: tuple[Expr, ...]
    attrs: Attrs | None = None
    sinfo_args: tuple[StructInfo, ...] = ()
    struct_info: StructInfo | None = None
    span: Span | None = None


@dataclass(frozen=True, slots=True, eq=False)
class If(Expr):
    cond: Expr
    true_branch: Expr
    false_branch: Expr
    struct_info: StructInfo | None = None
    span: Span | None = None


# --------------------------------------------------------------------------- bindings
@dataclass(frozen=True, slots=True, eq=False)
class Binding:
    var: Var

    if TYPE_CHECKING:
        # Both kinds of binding have these (fields of each; declared for the checker).
        @property
        def value(self) -> Expr: ...

        @property
        def span(self) -> Span | None: ...


@dataclass(frozen=True, slots=True, eq=False)
class VarBinding(Binding):
    value: Expr
    span: Span | None = None


@dataclass(frozen=True, slots=True, eq=False)
class MatchCast(Binding):
    value: Expr
    struct_info: StructInfo
    span: Span | None = None


@dataclass(frozen=True, slots=True, eq=False)
class BindingBlock:
    bindings: tuple[Binding, ...]
    span: Span | None = None


@dataclass(frozen=True, slots=True, eq=False)
class DataflowBlock(BindingBlock):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class SeqExpr(Expr):
    blocks: tuple[BindingBlock, ...]
    body: Expr
    span: Span | None = None

    @property
    def struct_info(self) -> StructInfo | None:
        return self.body.struct_info


def _same_after_simplify(a: StructInfo, b: StructInfo) -> bool:
    """Types (tensors, tuples of them) whose dims agree once simplified (``4 * n`` and
    ``n * 4``): TVM's IsBaseOf
    proves such dims equal, so its Function constructor takes the body's form."""
    from .arith import simplify_struct_info_dims

    if type(a) is not type(b):
        return False
    return simplify_struct_info_dims(a) == simplify_struct_info_dims(b)


def well_defined_in(params: Iterable[Var], si: StructInfo) -> StructInfo:
    """``si`` without the symbolic dims the parameters' types do not define (TVM's
    EraseToWellDefined): the return type a function without an annotation gets."""
    defined: set[TirVar] = set()
    for p in params:
        if p.struct_info is not None:
            defined.update(struct_info_vars(p.struct_info))
    return erase_to_well_defined(si, defined)


@dataclass(frozen=True, slots=True, eq=False)
class Function(Expr):
    """A Relax function. ``attrs`` is a dict that must not be mutated after creation."""

    params: tuple[Var, ...]
    body: SeqExpr
    ret_struct_info: StructInfo
    is_pure: bool = True
    attrs: dict[str, Any] = field(default_factory=dict)
    span: Span | None = None

    def __post_init__(self) -> None:
        # As TVM's Function constructor: a body more precise than the declared return type
        # refines it (``-> R.Any`` returning a tensor becomes that tensor type).
        body = self.body
        body_si = body.struct_info if isinstance(body, SeqExpr) else None
        ret = self.ret_struct_info
        if body_si is not None and ret is not None and body_si != ret and (
                is_base_of(ret, body_si) or _same_after_simplify(ret, body_si)):
            body_si = well_defined_in(self.params, body_si)
            if body_si != ret and (is_base_of(ret, body_si) or _same_after_simplify(ret, body_si)):
                object.__setattr__(self, "ret_struct_info", body_si)

    @property
    def struct_info(self) -> FuncStructInfo:
        # well-formed functions type every parameter (well_formed reports one that is not)
        return FuncStructInfo(tuple(p.struct_info for p in self.params),  # type: ignore[misc]
                              self.ret_struct_info, self.is_pure)

    def with_attrs(self, attr_map: Mapping[str, Any] | None = None, **changes: Any) -> Function:
        """A copy with attributes set, from ``attr_map`` (TVM's form) and keywords (value
        ``None`` removes the key)."""
        attrs = dict(self.attrs)
        for k, v in {**(attr_map or {}), **changes}.items():
            if v is None:
                attrs.pop(k, None)
            else:
                attrs[k] = v
        return Function(self.params, self.body, self.ret_struct_info, self.is_pure, attrs, self.span)

    def with_attr(self, attr_key_or_dict: str | Mapping[str, Any], attr_value: Any = None) -> Function:
        """A copy with attribute ``key`` set to ``value``, or with every entry of a dict set
        (TVM's ``with_attr``)."""
        if isinstance(attr_key_or_dict, Mapping):
            return self.with_attrs(attr_key_or_dict)
        return self.with_attrs({attr_key_or_dict: attr_value})

    def without_attr(self, key: str) -> Function:
        """A copy without attribute ``key``."""
        return self.with_attrs({key: None})


def sinfo_of(expr: Expr) -> StructInfo:
    """``expr.struct_info`` of a normalized expression: what the parser, the builder and every
    pass build has its struct info set (``well_formed`` reports one that lacks it). The
    type checker's view of that invariant; nothing is checked at run time."""
    return expr.struct_info  # type: ignore[return-value]


def is_leaf(expr: Expr) -> bool:
    """Leaves of normal form: may appear as call arguments without being bound."""
    if isinstance(expr, (Var, GlobalVar, Constant, ShapeExpr, PrimValue, StringImm, DataTypeImm, ExternFunc, Op)):
        return True
    if isinstance(expr, Tuple):
        return all(is_leaf(f) for f in expr.fields)
    return False


__all__ = [
    "Attrs", "Binding", "BindingBlock", "Call", "Constant", "DataTypeImm", "DataflowBlock",
    "DataflowVar", "Expr", "ExternFunc", "Function", "GlobalVar", "If", "MatchCast", "Op",
    "PrimValue", "SeqExpr", "ShapeExpr", "StringImm", "Tuple", "TupleGetItem", "Var",
    "VarBinding", "is_leaf", "sinfo_of", "TupleStructInfo", "well_defined_in",
]
