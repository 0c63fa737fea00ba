"""The op table: one :class:`OpDef` per Relax operator, looked up by name or printed callee.

An OpDef knows the operator's Python call signature (operands and attributes, as TVM's
``relax.op`` functions spell them), its attribute schema in *print order* with defaults,
how to normalise attributes the way TVM's C++ constructors do, and its struct-info
inference. :func:`make_call` builds a fully normalised, typed :class:`~byocc.ir.Call`;
:meth:`OpDef.bind` maps a parsed ``R.<op>(...)`` argument list onto operands and attributes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from functools import cached_property

from byocc.ir import Attrs
from byocc.ir import Call
from byocc.ir import Expr
from byocc.ir import ExternFunc
from byocc.ir import FuncStructInfo
from byocc.ir import ObjectStructInfo
from byocc.ir import Op
from byocc.ir import StructInfo
from byocc.ir import TupleStructInfo
from byocc.ir import TypeInferenceError
from byocc.ir import UnsupportedError

from . import convert


class _Required:
    __slots__ = ()

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED = _Required()


@dataclass(frozen=True)
class AttrField:
    """One attribute field: its name, default (``REQUIRED`` if none) and value kind
    (a key of :data:`byocc.ops.convert.ATTR_KINDS`)."""

    name: str
    default: object = REQUIRED
    kind: str = "any"


@dataclass(frozen=True, eq=False)
class OpDef:
    """One operator, complete when registered and never changed after. ``params`` is the
    Python call signature (operands and attributes); ``arg_names`` the operands among
    them, in order; ``attrs`` the attribute fields in print order. ``infer(call)`` returns
    the call's struct info; :attr:`reference` is its numpy reference."""

    name: str
    printed: str
    params: tuple
    arg_names: tuple
    attrs: tuple
    infer: Callable
    # --- byocc extensions (all optional) ---
    arg_kinds: dict = field(default_factory=dict)  # operand name -> operand kind (default tensor)
    arg_defaults: dict = field(default_factory=dict)  # optional operands: name -> default (None = omitted)
    normalize: Callable | None = None  # (attrs dict, span) -> attrs dict, TVM constructor rules
    sinfo_key: str | None = None  # "out_ty" / "ty_args": keyword carried in sinfo_args
    varargs: bool = False  # call_packed: positional operands after arg_names are variadic
    prepare: Callable | None = None  # (args, span) -> args, constructor-time rewrites (reshape -1)
    build: Callable | None = None  # custom builder: (opdef, args, attrs, sinfo_args, span) -> Call
    doc: str = ""

    @property
    def reference(self) -> Callable | None:
        """The numpy reference (:func:`byocc.ops.evaluate.reference_of`), or None."""
        from .evaluate import reference_of

        return reference_of(self.name)

    # ------------------------------------------------------------------ binding
    def bind(self, positional: list, keywords: dict, span=None) -> tuple:
        """Map a parsed call's raw arguments onto ``(operands, Attrs)``.

        For ``call_tir``/``call_dps_packed``/``call_packed`` the returned Attrs carries the
        ``out_ty``/``ty_args`` struct info under that key; :func:`make_call` moves it into
        ``sinfo_args``.
        """
        values: dict = {}
        positional = list(positional)
        extra: list = []
        if self.varargs:
            n_fixed = len(self.arg_names)
            extra = positional[n_fixed:]
            positional = positional[:n_fixed]
        elif len(positional) > len(self.params):
            raise TypeInferenceError(
                f"{self.printed} takes at most {len(self.params)} positional arguments "
                f"({', '.join(self.params)}), got {len(positional)}", span)
        for i, value in enumerate(positional):
            values[self.params[i]] = value
        param_set = self._param_set
        for key, value in keywords.items():
            key = _KEYWORD_ALIASES.get(key, key)
            if key not in param_set:
                allowed = ", ".join(self.params)
                raise TypeInferenceError(
                    f"{self.printed} got an unexpected keyword argument {key!r} (parameters: {allowed})", span)
            if key in values:
                raise TypeInferenceError(f"{self.printed} got multiple values for argument {key!r}", span)
            values[key] = value
        args = []
        arg_defaults = self.arg_defaults
        for name, conv in self._operand_convs:
            if name in values:
                raw = values[name]
            elif name in arg_defaults:
                raw = arg_defaults[name]
            else:
                raise TypeInferenceError(f"{self.printed} is missing the required argument {name!r}", span)
            if raw is None and name in arg_defaults:
                continue  # optional operand left out (attention bias, strided_slice strides)
            try:
                args.append(conv(raw))
            except ValueError as e:
                raise TypeInferenceError(f"{self.printed}: argument {name!r}: {e}", span) from None
        for raw in extra:
            try:
                args.append(convert.to_any(raw))
            except ValueError as e:
                raise TypeInferenceError(f"{self.printed}: {e}", span) from None
        attrs = {}
        for name, required in self._attr_specs:
            if name in values:
                attrs[name] = values[name]
            elif required:
                raise TypeInferenceError(f"{self.printed} is missing the required argument {name!r}", span)
        if self.sinfo_key is not None and self.sinfo_key in values:
            attrs[self.sinfo_key] = values[self.sinfo_key]
        return tuple(args), self.make_attrs(attrs, span)

    @cached_property
    def _param_set(self) -> frozenset:
        return frozenset(self.params)

    @cached_property
    def _operand_convs(self) -> tuple:
        """(name, converter) of each operand, by its kind (:data:`convert.OPERAND_KINDS`)."""
        return tuple((name, convert.OPERAND_KINDS[self.arg_kinds.get(name, "tensor")]) for name in self.arg_names)

    @cached_property
    def _attr_specs(self) -> tuple:
        """(name, required) of each attribute field."""
        return tuple((f.name, f.default is REQUIRED) for f in self.attrs)

    # ------------------------------------------------------------------ attributes
    @cached_property
    def _attr_names(self) -> frozenset:
        return frozenset(f.name for f in self.attrs)

    def make_attrs(self, attrs, span=None) -> Attrs | None:
        """Complete, normalised Attrs (every field, print order, defaults filled).

        Given a dict of plain literals (what :meth:`bind` passes for a parsed call), the
        result is remembered by op and typed values (:func:`convert.literal_key`): the
        completion is a pure function of them (the span only goes into errors, and a
        failure is never remembered)."""
        global _last_completed
        key = None
        if type(attrs) is dict:
            key = _attrs_key(self, attrs)
            if key is not None:
                hit = _ATTRS_MEMO.get(key, _MISSING)
                if hit is not _MISSING:
                    if hit is not None:
                        _last_completed = (hit, self)
                    return hit  # type: ignore[return-value]
        done = self._complete_attrs(attrs, span)
        if key is not None and (done is None or all(convert.literal_key(v) is not None for _, v in done.items_)):
            # (only plain values are shared between calls: not an Expr such as resize2d's roi)
            if len(_ATTRS_MEMO) >= _ATTRS_MEMO_SIZE:
                _ATTRS_MEMO.clear()
            _ATTRS_MEMO[key] = done
        return done

    def _complete_attrs(self, attrs, span) -> Attrs | None:
        if isinstance(attrs, Attrs):
            given = dict(attrs.items())
        else:
            given = dict(attrs or {})
        sinfo = given.pop(self.sinfo_key, _MISSING) if self.sinfo_key else _MISSING
        names = self._attr_names
        for key in given:
            if key not in names:
                raise TypeInferenceError(f"{self.name} has no attribute {key!r}", span)
        out = {}
        for f in self.attrs:
            if f.name in given:
                value = given[f.name]
            elif f.default is REQUIRED:
                raise TypeInferenceError(f"{self.name} requires the attribute {f.name!r}", span)
            else:
                value = f.default
            try:
                out[f.name] = convert.ATTR_KINDS[f.kind](value)
            except ValueError as e:
                raise TypeInferenceError(f"{self.printed}: attribute {f.name!r}: {e}", span) from None
        if self.normalize is not None:
            out = self.normalize(out, span)
        items = tuple((f.name, out[f.name]) for f in self.attrs)
        if sinfo is not _MISSING:
            items = items + ((self.sinfo_key, sinfo),)
        if not items:
            return None
        done = Attrs(items)
        global _last_completed
        _last_completed = (done, self)
        return done


def _attrs_key(opdef: OpDef, attrs: dict) -> tuple | None:
    parts: list[object] = [opdef]
    for name, value in attrs.items():
        k = convert.literal_key(value)
        if k is None:
            return None
        parts.append(name)
        parts.append(k)
    return tuple(parts)


_MISSING = object()
#: make_attrs results by _attrs_key (cleared when full).
_ATTRS_MEMO: dict[tuple, object] = {}
_ATTRS_MEMO_SIZE = 4096
#: The last Attrs :meth:`OpDef.make_attrs` built and its OpDef: make_call given exactly
#: that object for that op (a parsed call: bind, then make_call) skips completing it again.
_last_completed: tuple[object, object] = (_MISSING, _MISSING)
_KEYWORD_ALIASES = {"out_sinfo": "out_ty", "sinfo_args": "ty_args"}  # legacy spellings

_BY_NAME: dict[str, OpDef] = {}
_BY_PRINTED: dict[str, OpDef] = {}


def register(opdef: OpDef) -> OpDef:
    if opdef.name in _BY_NAME:
        raise ValueError(f"op {opdef.name} registered twice")
    _BY_NAME[opdef.name] = opdef
    dotted = opdef.printed[2:] if opdef.printed.startswith("R.") else opdef.printed
    _BY_PRINTED.setdefault(dotted, opdef)
    Op.get(opdef.name, create=True).op_def = opdef
    return opdef


def get_op_def(name: str) -> OpDef:
    """The OpDef registered as ``name`` (e.g. ``"relax.nn.conv2d"``); KeyError if unknown."""
    return _BY_NAME[name]


def all_op_defs() -> list[OpDef]:
    return list(_BY_NAME.values())


def lookup_printed(dotted: str, n_positional: int = 0, keywords=()) -> OpDef | None:
    """The OpDef for ``R.<dotted>(...)``, or None. ``nn.attention`` with a 4th positional
    operand (or a ``bias=`` keyword that is not None) means ``relax.nn.attention_bias``."""
    if dotted == "nn.attention":
        kw = dict(keywords) if not isinstance(keywords, dict) else keywords
        has_bias = n_positional >= 4 or ("bias" in kw and kw["bias"] is not None)
        if has_bias:
            return _BY_NAME.get("relax.nn.attention_bias")
    opdef = _BY_PRINTED.get(dotted)
    if opdef is None:
        opdef = _BY_NAME.get("relax." + dotted)
    return opdef


def _resolve(op) -> OpDef:
    if isinstance(op, OpDef):
        return op
    if isinstance(op, Op):
        if op.op_def is None:
            raise UnsupportedError(f"operator {op.name} is not supported by byocc")
        return op.op_def
    if isinstance(op, str):
        try:
            return _BY_NAME[op if op.startswith("relax.") else "relax." + op]
        except KeyError:
            raise UnsupportedError(f"operator {op} is not supported by byocc") from None
    raise TypeError(f"make_call: op must be a name, Op or OpDef, not {type(op).__name__}")


def make_call(op, args, attrs=None, sinfo_args=(), span=None) -> Call:
    """Build a normalised Call with inferred struct info.

    ``attrs`` may be a dict, an Attrs or None; missing fields get their defaults and TVM's
    constructor normalisations apply. For ops with ``out_ty``/``ty_args``, the struct info
    may come in ``sinfo_args`` or under that key in ``attrs``.
    """
    opdef = _resolve(op)
    args = tuple(args)
    if not all(isinstance(a, Expr) for a in args):
        args = tuple(_convert_arg(opdef, i, a, span) for i, a in enumerate(args))
    if opdef.name == "relax.nn.attention" and len(args) == 4:
        opdef = _BY_NAME["relax.nn.attention_bias"]
    if opdef.build is not None:
        return opdef.build(opdef, args, attrs, tuple(sinfo_args), span)
    if opdef.prepare is not None:
        args = tuple(opdef.prepare(args, span))
    if attrs is not None and attrs is _last_completed[0] and opdef is _last_completed[1]:
        full = attrs  # bind() just completed these for this op (make_attrs is idempotent)
    elif attrs is None and not opdef.attrs and opdef.normalize is None:
        full = None  # what make_attrs(None) gives an op without attributes
    else:
        full = opdef.make_attrs(attrs, span)
    if opdef.sinfo_key is not None and full is not None and opdef.sinfo_key in full:
        sinfo_args = _sinfo_list(full[opdef.sinfo_key], opdef, span)
        rest = tuple(kv for kv in full.items_ if kv[0] != opdef.sinfo_key)
        full = Attrs(rest) if rest else None
    call = Call(Op.get(opdef.name), args, full, tuple(sinfo_args), None, span)
    # The inference rule reads the call without its struct info; the result is then set on
    # that same new object (nothing else holds it yet) instead of building the Call again.
    _set_field(call, "struct_info", opdef.infer(call))
    return call


_set_field = object.__setattr__  # a frozen dataclass's own way of filling its fields


def _convert_arg(opdef: OpDef, i: int, value, span):
    """A raw operand (Python number, list of dims...) given to make_call, by its kind."""
    if isinstance(value, Expr):
        return value
    kind = opdef.arg_kinds.get(opdef.arg_names[i], "tensor") if i < len(opdef.arg_names) else "any"
    try:
        return convert.OPERAND_KINDS[kind](value)
    except ValueError as e:
        raise TypeInferenceError(f"{opdef.printed}: argument {i}: {e}", span) from None


def _sinfo_list(value, opdef: OpDef, span) -> tuple:
    """``out_ty`` (one struct info; a list of several becomes one tuple struct info) or
    ``ty_args`` (a list kept as is) as a ``sinfo_args`` tuple."""
    if isinstance(value, StructInfo):
        return (value,)
    if isinstance(value, (list, tuple)) and all(isinstance(v, StructInfo) for v in value):
        if opdef.sinfo_key == "out_ty":
            return (value[0],) if len(value) == 1 else (TupleStructInfo(tuple(value)),)
        return tuple(value)
    raise TypeInferenceError(f"{opdef.printed}: {opdef.sinfo_key} must be a type or a list of types", span)


def infer_struct_info(call: Call) -> StructInfo:
    """Struct info of ``call``: the op's inference rule, or the callee's return type."""
    op = call.op
    if isinstance(op, Op):
        return _resolve(op).infer(call)
    if isinstance(op, ExternFunc):
        return packed_result(call)
    callee = getattr(op, "struct_info", None)
    if isinstance(callee, FuncStructInfo):
        if callee.params is None and call.sinfo_args:
            return packed_result(call)
        return callee.ret
    return ObjectStructInfo()


def packed_result(call: Call) -> StructInfo:
    """A call to an opaque (packed) function: its ``ty_args`` decide the result."""
    if len(call.sinfo_args) == 1:
        return call.sinfo_args[0]
    if not call.sinfo_args:
        return ObjectStructInfo()
    return TupleStructInfo(tuple(call.sinfo_args))


def arg_struct_info(arg: Expr):
    return getattr(arg, "struct_info", None)


def define(name: str, args=("x",), attrs=(), infer=None, params=None, printed=None, **kw) -> OpDef:
    """Register an op: ``params`` defaults to operands then attribute names."""
    attrs = tuple(attrs)
    if params is None:
        params = tuple(args) + tuple(f.name for f in attrs)
    if printed is None:
        printed = "R." + name[len("relax."):]
    return register(OpDef(name, printed, tuple(params), tuple(args), attrs, infer, **kw))
