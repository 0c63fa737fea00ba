"""Reading expressions (docs/textual-ir.md#expressions, #meaning-of-the-text): variables, operator calls,
calls of module members and local functions, tuples, items, shapes, constants, metadata.

:class:`ExprReader` is a mixin of the function reader in :mod:`byocc.text.parser`.
:meth:`ExprReader.evaluate` gives a *raw* value: an Expr, a Python literal, a Python
tuple/list/dict of raw values, a symbolic dim or a struct info (``out_ty=R.Tensor(...)``).
Operator calls hand raw values to :meth:`byocc.ops.OpDef.bind`, which converts them by
operand kind; :meth:`ExprReader.to_expr` converts them everywhere else.

Relax normal form: an argument that is not a leaf (``R.add(R.multiply(a, b), c)``) is bound
to a fresh variable first (``lv``/``gv``), as TVM's block builder does.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any
from typing import NoReturn
from typing import cast

from byocc.ir import ByoccError
from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowVar
from byocc.ir import DataTypeImm
from byocc.ir import Dim
from byocc.ir import Expr
from byocc.ir import ExternFunc
from byocc.ir import FuncStructInfo
from byocc.ir import ObjectStructInfo
from byocc.ir import PrimExpr
from byocc.ir import PrimValue
from byocc.ir import ShapeExpr
from byocc.ir import Span
from byocc.ir import StringImm
from byocc.ir import StructInfo
from byocc.ir import TensorStructInfo
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import TupleStructInfo
from byocc.ir import TypeInferenceError
from byocc.ir import UnsupportedError
from byocc.ir import Var
from byocc.ir import is_leaf
from byocc.ir import sinfo_of
from byocc.ops import lookup_printed
from byocc.ops import make_call
from byocc.ops.convert import literal_key

from ._parse_types import TYPE_NAMES
from ._parse_types import _span
from ._parse_types import dotted_name
from ._parse_types import is_valid_dtype
from ._parse_types import match_sinfo_vars
from ._parse_types import slot_maker
from ._parse_types import substitute_sinfo
from .syntax import Attr
from .syntax import BinOp
from .syntax import CallExpr
from .syntax import DictExpr
from .syntax import ListExpr
from .syntax import Literal
from .syntax import Name
from .syntax import Neg
from .syntax import Node
from .syntax import Subscript
from .syntax import TensorType
from .syntax import TupleExpr

if TYPE_CHECKING:
    from typing import TypeAlias
    from typing import TypeGuard

    import numpy as np

    from byocc.ir import TirVar

    from ._parse_metadata import MetadataTable
    from ._parse_metadata import RuntimeModuleRef
    from .parser import ModuleReader
    from .syntax import LiteralValue

    #: What :meth:`ExprReader.evaluate` gives (see the module docstring).
    Raw: TypeAlias = (Expr | LiteralValue | PrimExpr | StructInfo | RuntimeModuleRef | "_Module" | "_Metadata"
                      | np.ndarray | tuple["Raw", ...] | list["Raw"] | list[StructInfo]
                      | dict["str | int | bool | None", "Raw"])

TYPE_KEYWORDS = ("out_ty", "out_sinfo", "ty_args", "sinfo_args")
#: Python's infix operators on Relax values, as TVM's ``Expr`` overloads them.
INFIX_OPS = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide", "//": "floor_divide", "%": "mod",
             "**": "power", "<": "less", ">": "greater", "<=": "less_equal", ">=": "greater_equal"}
COMPARISONS = frozenset(("<", ">", "<=", ">=", "==", "!="))
NAMESPACES = ("R", "T", "I")
STATEMENT_CALLS = ("R.func_attr", "R.output", "R.dataflow", "I.module_attrs")


class _Module:
    """The value of the module's class name or an alias of it (``cls``)."""

    __repr__ = lambda self: "<module>"  # noqa: E731


MODULE = _Module()


class _Metadata:
    __repr__ = lambda self: "<metadata>"  # noqa: E731


METADATA = _Metadata()


def _is_number(v: object) -> TypeGuard[int | float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def tuple_of(fields: Sequence[Expr], span: Span | None = None) -> Tuple:
    return Tuple(tuple(fields), TupleStructInfo(tuple(sinfo_of(f) for f in fields)), span)


class ExprReader:
    """Mixin: expressions. See the module docstring."""

    if TYPE_CHECKING:  # from the host (FunctionReader) and its other mixin (TypeReader)
        source: str
        metadata: MetadataTable
        module: ModuleReader

        def span(self, node: Node) -> Span: ...
        def error(self, message: str, node: Node | None, cls: type[ByoccError] = ...) -> NoReturn: ...
        def emit_temp(self, expr: Expr, node: Node) -> Expr: ...
        def lookup_value(self, name: str) -> Var | _Module | None: ...
        def find_dim(self, name: str, create: bool = True) -> TirVar | None: ...
        def read_type(self, node: Node, in_signature: bool = False) -> StructInfo: ...
        def read_types(self, node: Node, in_signature: bool = False) -> StructInfo | list[StructInfo]: ...
        def read_dim(self, node: Node, in_signature: bool = False, quoted: bool = False) -> Dim: ...
        def read_dtype(self, node: Node) -> str | None: ...
        def _args(self, node: CallExpr, names: tuple[str, ...], what: str) -> dict[str, Node]: ...

    # ------------------------------------------------------------------ entry points
    def read_value(self, node: Node, hint: StructInfo | None = None) -> Expr:
        """A binding's right-hand side, a return value, ...: an Expr."""
        if hint is not None and isinstance(node, Subscript):
            ref = self._metadata_ref(node)
            if ref is not None:  # the annotation types a constant without its sidecar array
                return self.to_expr(self.metadata.lookup(ref[0], ref[1], self.span(node), hint), node)
        return self.to_expr(self.evaluate(node), node)

    def to_expr(self, raw: Raw, node: Node) -> Expr:
        if isinstance(raw, Expr):
            return raw
        if isinstance(raw, (tuple, list)):
            return tuple_of([self.leaf(self.to_expr(x, node), node) for x in raw], self.span(node))
        if isinstance(raw, bool) or _is_number(raw):
            return self._const(raw, None, node)
        if type(raw).__name__ == "ndarray":  # a numpy array of the script's surroundings
            return self._const(raw, str(getattr(raw, "dtype", "float32")), node)
        if isinstance(raw, str):
            return StringImm(raw, self.span(node))
        if isinstance(raw, PrimExpr):
            return PrimValue(raw, "int64", self.span(node))
        if raw is None:
            self.error("None is not a value here", node)
        if isinstance(raw, StructInfo):
            self.error("a type is not a value here", node)
        if raw is MODULE:
            self.error("the module itself is not a value; use cls.NAME for one of its functions", node)
        self.error("this is not a value", node)

    def leaf(self, expr: Expr, node: Node) -> Expr:
        """``expr`` if it may be an argument as is, else a fresh variable bound to it."""
        if is_leaf(expr):
            return expr
        if isinstance(expr, Tuple):
            fields = [self.leaf(f, node) for f in expr.fields]
            if all(a is b for a, b in zip(fields, expr.fields)):
                return expr
            return tuple_of(fields, expr.span)
        return self.emit_temp(expr, node)

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, node: Node) -> Raw:
        """The raw value of an expression (see the module docstring)."""
        if type(node) is Name:
            return self._name(node)
        if type(node) is CallExpr:
            return self._call(node)
        if type(node) is Literal:
            return node.value
        if type(node) is TensorType:
            return self.read_type(node)
        if type(node) is TupleExpr:
            return tuple(self.evaluate(e) for e in node.elts)
        if type(node) is ListExpr:
            return [self.evaluate(e) for e in node.elts]
        if type(node) is Attr:
            return self._attr(node)
        if type(node) is Subscript:
            return self._subscript(node)
        if type(node) is Neg:
            inner = node.operand
            if isinstance(inner, Literal) and _is_number(inner.value):
                return -inner.value
            v = self.evaluate(inner)
            if _is_number(v):
                return -v
            if isinstance(v, Expr) and not isinstance(v, PrimValue):
                return self._make_op_call("negative", [v], {}, node)  # TVM: -x is R.negative(x)
            return self.read_dim(node)
        if type(node) is BinOp:
            return self._binop(node)
        if type(node) is DictExpr:
            return {self._dict_key(k): self.evaluate(v) for k, v in node.pairs}
        self.error("unsupported expression", node)

    def _binop(self, node: BinOp) -> Raw:
        """``a + b``: on Relax values the operator TVM's Python operators build (``R.add``,
        ``R.floor_divide``...); on dimensions and numbers, dimension arithmetic."""
        if node.op in COMPARISONS and any(type(x) is BinOp and x.op in COMPARISONS for x in (node.a, node.b)):
            self.error("chained comparisons (a < b < c) are not supported: compare two values", node)
        if node.op == "**" and type(node.a) is Neg:
            self.error("write -(a ** b) or (-a) ** b: the sign of a power's base is ambiguous here", node.a)
        a = self._binop_operand(node.a)
        b = self._binop_operand(node.b)
        if isinstance(a, Expr) or isinstance(b, Expr):
            op = INFIX_OPS.get(node.op)
            if op is None:  # == and !=: TVM defines neither on Relax values
                name = "equal" if node.op == "==" else "not_equal"
                self.error(f"'{node.op}' is not defined on Relax values: write R.{name}(a, b)", node)
            for v, n in ((a, node.a), (b, node.b)):
                if not isinstance(v, Expr):
                    what = repr(v) if _is_number(v) else "this operand"
                    self.error(f"{what} is not a Relax value: convert it with R.const(...) first", n,
                               TypeInferenceError)
            return self._make_op_call(op, [a, b], {}, node)
        return self.read_dim(node)

    def _binop_operand(self, node: Node) -> Raw:
        """An operand of ``+ - * / // %``: a Relax value, or None where the operand is
        read as a dimension (then the whole expression is)."""
        if type(node) is BinOp:
            v = self._binop(node)
            return v if isinstance(v, Expr) else None
        if type(node) is Name and self.lookup_value(node.id) is None:
            return None  # a dimension (or an error read_dim reports)
        v = self.evaluate(node)
        return v if isinstance(v, Expr) or _is_number(v) or isinstance(v, PrimExpr) else None

    def _dict_key(self, node: Node) -> str | int | bool | None:
        v = self.evaluate(node)
        if isinstance(v, (str, int, bool)) or v is None:
            return v
        self.error("dictionary keys must be strings or numbers", node)

    def _name(self, node: Name) -> Raw:
        name = node.id
        v = self.lookup_value(name)
        if v is not None:
            return v
        dim = self.find_dim(name)
        if dim is not None:
            return dim
        if name in NAMESPACES:
            self.error(f"'{name}' is a namespace, not a value", node)
        if name == "metadata":
            return METADATA
        scope = self.module.scope
        if scope is not None and scope.has(name):
            return self.python_value(scope.value(name), node)
        self.error(f"undefined variable '{name}'", node)

    def python_value(self, value: object, node: Node) -> Raw:
        """The raw value of a Python object a script reads from its surroundings (TVM's
        closure variables): numbers, strings, tuples and lists of them, numpy arrays (for
        ``R.const(weight)``), IR values (a GlobalVar, a Var, a struct info, a dimension)."""
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, (tuple, list)):
            items = [self.python_value(v, node) for v in value]
            return tuple(items) if isinstance(value, tuple) else items
        if isinstance(value, (Expr, StructInfo, PrimExpr)):
            return value
        module = type(value).__module__
        if module == "numpy":
            import numpy as np

            if isinstance(value, np.ndarray):
                return value
            if isinstance(value, np.generic):
                item = value.item()
                if item is None or isinstance(item, (bool, int, float, str)):
                    return item
        self.error(f"the Python value of '{getattr(node, 'id', '...')}' ({type(value).__name__}) "
                   "cannot be used in a script", node)

    def _attr(self, node: Attr) -> Raw:
        name = dotted_name(node)
        root: Node = node
        while isinstance(root, Attr):
            root = root.value
        if isinstance(root, Name) and root.id in NAMESPACES and self.lookup_value(root.id) is None:
            if name in TYPE_NAMES or (name is not None and name.startswith("T.") and name.count(".") == 1):
                return self.read_type(node)
            self.error(f"'{name}' is not a value", node)
        base = self.evaluate(node.value)
        if base is MODULE:
            return self.module.global_var(node.attr, node)
        if isinstance(base, Expr) and node.attr in ("ty", "struct_info") and base.struct_info is not None:
            return base.struct_info  # TVM evaluates ``x.ty`` in a script: the value's struct info
        self.error(f"'{dotted_name(node.value) or 'this value'}' has no attribute '{node.attr}'", node)

    # ------------------------------------------------------------------ subscripts
    def _metadata_ref(self, node: Subscript) -> tuple[str, int] | None:
        """(key, index) of ``metadata["KEY"][i]``, or None if ``node`` is something else."""
        inner = node.value
        if not (isinstance(inner, Subscript) and isinstance(inner.value, Name) and inner.value.id == "metadata"):
            return None
        if self.lookup_value("metadata") is not None:
            return None
        if len(inner.indices) != 1 or not isinstance(inner.indices[0], Literal) or not isinstance(inner.indices[0].value, str):
            self.error('expected metadata["KEY"][INDEX]', inner)
        if len(node.indices) != 1 or not isinstance(node.indices[0], Literal) or type(node.indices[0].value) is not int:
            self.error('expected metadata["KEY"][INDEX] with an integer index', node)
        return inner.indices[0].value, node.indices[0].value

    def _subscript(self, node: Subscript) -> Raw:
        ref = self._metadata_ref(node)
        if ref is not None:
            return self.metadata.lookup(ref[0], ref[1], self.span(node))
        if len(node.indices) != 1:
            self.error("expected one index", node)
        return self._item(node.value, node.indices[0], node)

    def _r_tuple_get_item(self, node: CallExpr) -> TupleGetItem:
        """``R.TupleGetItem(t, i)``: TVM's constructor, the same as ``t[i]``."""
        if len(node.args) != 2 or node.kwargs:
            self.error("R.TupleGetItem takes a tuple and an index", node)
        return self._item(node.args[0], node.args[1], node)

    def _item(self, tuple_node: Node, idx_node: Node, node: Node) -> TupleGetItem:
        if not isinstance(idx_node, Literal) or type(idx_node.value) is not int:
            self.error("a tuple index must be a non-negative integer", idx_node)
        index = idx_node.value
        base = self.evaluate(tuple_node)
        if base is METADATA:
            self.error('expected metadata["KEY"][INDEX]', node)
        if isinstance(base, (tuple, list)):
            base = self.to_expr(base, tuple_node)
        if not isinstance(base, Expr):
            self.error("only tuples can be indexed", tuple_node)
        base = self.leaf(base, tuple_node)
        si = base.struct_info
        if isinstance(si, TupleStructInfo):
            if index >= len(si.fields):
                self.error(f"tuple index {index} is out of range for a tuple of {len(si.fields)} fields", idx_node,
                           TypeInferenceError)
            field_si = si.fields[index]
        elif si is None or isinstance(si, ObjectStructInfo):
            field_si = ObjectStructInfo()
        else:
            self.error("only tuples can be indexed", tuple_node, TypeInferenceError)
        return TupleGetItem(base, index, field_si, self.span(node))

    # ------------------------------------------------------------------ calls
    def _call(self, node: CallExpr) -> Raw:
        func = node.func
        name = dotted_name(func)
        if name is None:
            self.error("only operators (R.op), module functions (cls.f) and local functions can be called", func)
        root = name.split(".", 1)[0]
        bound = self.lookup_value(root)
        if bound is None and root in NAMESPACES:
            return self._namespace_call(name, node)
        if bound is MODULE:
            if name.count(".") != 1:
                self.error(f"'{name}' is not a function of the module", func)
            return self._function_call(self.module.global_var(name.split(".", 1)[1], func), node)
        if bound is None and "." not in name and self.module.scope is not None and self.module.scope.has(name):
            value = self.python_value(self.module.scope.value(name), func)
            if isinstance(value, Expr) and isinstance(value.struct_info, (FuncStructInfo, type(None))):
                return self._function_call(value, node)  # a GlobalVar defined in Python
            self.error(f"'{name}' is not a function", func)
        if bound is None:
            if root == "TypeVar":
                self.error("TypeVar(...) declares a symbolic dimension: NAME = TypeVar(\"NAME\")", node)
            self.error(f"undefined variable '{root}'", func if isinstance(func, Name) else _root(func))
        if "." in name:
            self.error(f"'{root}' has no attribute '{name.split('.', 1)[1]}'", func)
        if not isinstance(bound, Expr) or not isinstance(bound.struct_info, FuncStructInfo):
            self.error(f"'{root}' is not a function", func)
        return self._function_call(bound, node)

    def _function_call(self, callee: Expr, node: CallExpr) -> Call:
        if node.kwargs:
            self.error("functions take positional arguments only", node.kwargs[0])
        args = [self.leaf(self.to_expr(self.evaluate(a), a), a) for a in node.args]
        fsi = callee.struct_info
        ret: StructInfo = ObjectStructInfo()
        if isinstance(fsi, FuncStructInfo):
            ret = fsi.ret
            if fsi.params is not None:
                if len(fsi.params) != len(args):
                    self.error(f"'{_callee_name(callee)}' takes {len(fsi.params)} arguments, "
                               f"but {len(args)} were given", node, TypeInferenceError)
                mapping: dict[TirVar, Dim] = {}
                for p, a in zip(fsi.params, args):
                    match_sinfo_vars(p, a.struct_info, mapping)
                ret = substitute_sinfo(ret, mapping)
        return Call(callee, tuple(args), None, (), ret, self.span(node))

    def _namespace_call(self, name: str, node: CallExpr) -> Raw:
        handler = _SPECIAL_CALLS.get(name)
        if handler is not None:
            return handler(self, node)
        if name in TYPE_NAMES:
            return self.read_type(node)
        if name in STATEMENT_CALLS:
            self.error(f"{name}(...) is a statement, not a value", node)
        if name.startswith("T."):
            dtype = name[2:]
            if is_valid_dtype(dtype) and len(node.args) == 1 and not node.kwargs:
                return self._prim_literal(node.args[0], dtype)
            self.error(f"unsupported construct {name}(...)", node.func)
        if not name.startswith("R."):
            self.error(f"unsupported construct {name}(...)", node.func)
        return self._op_call(name[2:], node)

    def _op_call(self, dotted: str, node: CallExpr) -> Expr:
        # evaluate() inlined for the common operands (names) and keywords (literals, lists)
        positional = [self._name(a) if type(a) is Name else self.evaluate(a) for a in node.args]
        keywords: dict[str, Raw] = {}
        for kw in node.kwargs:
            name = kw.name
            if name in keywords:
                self.error(f"keyword argument '{name}' repeated", kw)
            value = kw.value
            if name in TYPE_KEYWORDS:
                keywords[name] = self.read_types(value)
            elif type(value) is Literal:
                keywords[name] = value.value
            elif type(value) is ListExpr:
                keywords[name] = [e.value if type(e) is Literal else self.evaluate(e) for e in value.elts]
            else:
                keywords[name] = self.evaluate(value)
        return self._op_call_cached(dotted, positional, keywords, node)

    def _make_op_call(self, dotted: str, positional: list[Raw], keywords: dict[str, Raw], node: Node) -> Expr:
        """The call of the operator printed ``R.<dotted>`` on raw arguments."""
        opdef = lookup_printed(dotted, len(positional), keywords)
        if opdef is None:
            self.error(f"unknown operator R.{dotted}", node.func if isinstance(node, CallExpr) else node,
                       UnsupportedError)
        span = self.span(node)
        args, attrs = opdef.bind(positional, keywords, span)
        args = [self.leaf(a, node) for a in args]
        return make_call(opdef, args, attrs, span=span)

    def _op_call_cached(self, dotted: str, positional: list[Raw], keywords: dict[str, Raw], node: Node) -> Expr:
        """:meth:`_make_op_call`, answered from :data:`_CALL_CACHE` when an identical call
        (same operator, operand types, keyword values) was built before (see _call_key)."""
        key = _call_key(dotted, positional, keywords)
        if key is None:
            return self._make_op_call(dotted, positional, keywords, node)
        hit = _CALL_CACHE.get(key)
        if hit is not None:
            args = cast("tuple[Expr, ...]", tuple(positional))  # variables: _call_key checked
            return _make_call(hit[0], args, hit[1], hit[2], hit[3],
                              _span(self.source, node.line, node.col, node.end_line, node.end_col))
        call = self._make_op_call(dotted, positional, keywords, node)
        opdef = getattr(getattr(call, "op", None), "op_def", None)
        if (type(call) is Call and opdef is not None and opdef.build is None and opdef.prepare is None
                and len(call.args) == len(positional)
                and all(a is b for a, b in zip(call.args, positional))
                and all(_static_sinfo(a.struct_info) for a in call.args)
                and all(_static_sinfo(s) for s in call.sinfo_args) and _static_sinfo(call.struct_info)
                and (call.attrs is None or all(literal_key(v) is not None for _, v in call.attrs.items_))):
            if len(_CALL_CACHE) >= _CALL_CACHE_SIZE:
                _CALL_CACHE.clear()
            _CALL_CACHE[key] = (call.op, call.attrs, call.sinfo_args, call.struct_info)
        return call

    # ------------------------------------------------------------------ R.* constructors
    def _const(self, value: Raw, dtype: str | None, node: Node) -> Constant:
        import numpy as np

        if dtype is None:
            dtype = "bool" if isinstance(value, bool) else "int32" if isinstance(value, int) else "float32"
        if isinstance(value, str):
            if value not in ("inf", "-inf", "nan"):
                self.error(f"R.const takes a number, not the string \"{value}\"", node)
            value = float(value)
        try:
            with np.errstate(all="ignore"):
                data = np.array(value, dtype=dtype)
        except (TypeError, ValueError, OverflowError) as exc:
            self.error(f"cannot make a {dtype} constant of {value!r}: {exc}", node, UnsupportedError)
        if data.dtype == object:
            self.error("R.const takes a number or a nested list of numbers", node)
        return Constant(data, TensorStructInfo(tuple(int(d) for d in data.shape), dtype), self.span(node))

    def _r_const(self, node: CallExpr) -> Constant:
        a = self._args(node, ("value", "dtype"), "R.const")
        if "value" not in a:
            self.error("R.const needs a value", node)
        value = self.evaluate(a["value"])
        dtype = self.read_dtype(a["dtype"]) if "dtype" in a else None
        if dtype is None and type(value).__name__ == "ndarray":  # a numpy array keeps its dtype
            dtype = str(getattr(value, "dtype", "float32"))
        if not (_is_number(value) or isinstance(value, (bool, str, list, tuple))
                or type(value).__name__ == "ndarray"):
            self.error("R.const takes a number or a nested list of numbers", a["value"])
        return self._const(value, dtype, a["value"])

    def _r_shape(self, node: CallExpr) -> ShapeExpr:
        if len(node.args) != 1 or node.kwargs or not isinstance(node.args[0], (ListExpr, TupleExpr)):
            self.error("R.shape takes one list of dimensions: R.shape([2, n])", node)
        return ShapeExpr(tuple(self.read_dim(d) for d in node.args[0].elts), self.span(node))

    def _r_tuple(self, node: CallExpr) -> Tuple:
        if node.kwargs:
            self.error("R.tuple takes no keyword arguments", node.kwargs[0])
        return tuple_of([self.leaf(self.to_expr(self.evaluate(a), a), a) for a in node.args], self.span(node))

    def _r_extern(self, node: CallExpr) -> ExternFunc:
        a = self._args(node, ("global_symbol",), "R.ExternFunc")
        sym = a.get("global_symbol")
        if not isinstance(sym, Literal) or not isinstance(sym.value, str):
            self.error("R.ExternFunc takes the symbol name as a string", sym or node)
        return ExternFunc(sym.value, span=self.span(node))

    def _r_prim_value(self, node: CallExpr) -> PrimValue:
        if len(node.args) != 1 or node.kwargs:
            self.error("R.prim_value takes one value", node)
        return self._prim_literal(node.args[0], None)

    def _prim_literal(self, arg: Node, dtype: str | None) -> PrimValue:
        v = self.evaluate(arg)
        if isinstance(v, bool):
            return PrimValue(v, dtype or "bool", self.span(arg))
        if isinstance(v, int) or isinstance(v, PrimExpr):
            return PrimValue(v, dtype or "int64", self.span(arg))
        if isinstance(v, float):
            return PrimValue(v, dtype or "float64", self.span(arg))
        self.error("expected a number", arg)

    def _r_str(self, node: CallExpr) -> StringImm:
        if len(node.args) != 1 or not isinstance(node.args[0], Literal) or not isinstance(node.args[0].value, str):
            self.error("R.str takes one string", node)
        return StringImm(node.args[0].value, self.span(node))

    def _r_dtype(self, node: CallExpr) -> DataTypeImm:
        if len(node.args) != 1:
            self.error("R.dtype takes one data type string", node)
        dtype = self.read_dtype(node.args[0])
        return DataTypeImm(dtype or "void", self.span(node))

    def _r_match_cast(self, node: CallExpr) -> NoReturn:
        self.error("R.match_cast must be the whole right-hand side of a binding", node)

    def _t_minmax(self, node: CallExpr) -> Dim:
        return self.read_dim(node)


#: Operator calls already built, by :func:`_call_key`: (op, attrs, sinfo_args, struct_info).
#: Binding, attribute completion and struct-info inference depend only on what the key
#: holds, so a call with an equal key gets the same parts (attrs and struct info are frozen
#: and value-equal, and an entry is kept only when its operand and result types are fully
#: static, so no symbolic dimension is shared between calls, and its attribute values plain
#: Python values, so no Expr is either). Failures are never stored:
#: an erroneous call is rebuilt, and reports, every time.
_CALL_CACHE: dict[tuple, tuple] = {}
_CALL_CACHE_SIZE = 8192
_make_call = slot_maker(Call)


def _call_key(dotted: str, positional: list[Raw], keywords: dict[str, Raw]) -> tuple | None:
    """The key of an operator call in :data:`_CALL_CACHE`, or None (not cached): every
    operand a variable of tensor type, every keyword value a plain literal."""
    parts: list[object] = [dotted, len(positional)]
    for v in positional:
        t = type(v)
        if t is not Var and t is not DataflowVar:
            return None
        si = v.struct_info  # type: ignore[union-attr]
        if type(si) is not TensorStructInfo:
            return None
        parts.append(t)
        parts.append(si)
    for k, v in keywords.items():
        vk = literal_key(v)
        if vk is None:
            return None
        parts.append(k)
        parts.append(vk)
    return tuple(parts)


def _static_sinfo(si: Any) -> bool:
    """True for a struct info with no symbolic dimension and no variable in it."""
    t = type(si)
    if t is TensorStructInfo:
        return si.shape_var is None and (si.shape is None or all(type(d) is int for d in si.shape))
    if t is TupleStructInfo:
        return all(_static_sinfo(f) for f in si.fields)
    if t is ObjectStructInfo:
        return True
    return False


def _root(node: Node) -> Node:
    while isinstance(node, Attr):
        node = node.value
    return node


def _callee_name(callee: Expr) -> str:
    return getattr(callee, "name_hint", None) or type(callee).__name__


_SPECIAL_CALLS: dict[str, Callable[[Any, CallExpr], Raw]] = {
    "R.const": ExprReader._r_const,
    "R.shape": ExprReader._r_shape,
    "R.tuple": ExprReader._r_tuple,
    "R.ExternFunc": ExprReader._r_extern,
    "R.prim_value": ExprReader._r_prim_value,
    "R.str": ExprReader._r_str,
    "R.dtype": ExprReader._r_dtype,
    "R.match_cast": ExprReader._r_match_cast,
    "R.TupleGetItem": ExprReader._r_tuple_get_item,
    "T.max": ExprReader._t_minmax,
    "T.min": ExprReader._t_minmax,
}

__all__ = ["ExprReader", "METADATA", "MODULE", "TYPE_KEYWORDS", "tuple_of"]
