"""ConvertLayout: rewrite convolutions to a desired layout and carry it through the graph.

``ConvertLayout({"relax.nn.conv2d": ["NHWC", "OHWI"]})`` (TVM
``relax.transform.ConvertLayout``) turns every NCHW/OIHW ``conv2d`` of a dataflow block into
an NHWC/OHWI one. Layouts are tracked as *permutations*: each rewritten variable is known
to hold ``permute_dims(original value, perm)``; layout-agnostic consumers compute in that
permuted layout directly (with their axis attributes renumbered), any other consumer gets
the original value back through one ``permute_dims`` inserted just before it.

* Convolutions / pools named in ``desired`` take the desired data (and kernel) layout;
  constant weights are transposed at compile time (numpy), other operands get a
  ``permute_dims`` binding.
* Propagated through: element-wise unary and binary ops (a lower-rank constant operand such
  as a per-channel bias ``(1, C, 1, 1)`` is reshaped and transposed at compile time, a
  full-rank variable gets a ``permute_dims``), ``where``, pools and convolutions not named
  in ``desired`` (their layout attributes), ``adaptive_avg_pool``, ``batch_norm`` (axis),
  ``concat`` (axis), ``softmax``/``log_softmax``/``prelu`` (axis), reductions (axis, keepdims),
  ``nn.pad`` (pad_width) and ``permute_dims`` itself (composed, so
  ``permute_dims(permute_dims(x, p), inverse(p))`` becomes ``x``).
* Only dataflow blocks are rewritten (as TVM), and only in functions that call an op named
  in ``desired``. Variables visible outside a block keep their original layout and identity;
  functions tagged ``Composite``/``Codegen``/``Primitive`` are left alone. ``permute_dims``
  dataflow bindings left unused by the rewrite are dropped. Every binding is visited once:
  linear in the number of bindings.

Transposed variables are named ``lv`` (the printer makes names unique); rewritten bindings
keep their variable's name.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import ClassVar

from byocc.ir import Attrs
from byocc.ir import Binding
from byocc.ir import BindingBlock
from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import DataflowBlock
from byocc.ir import DataflowVar
from byocc.ir import Expr
from byocc.ir import ExprMutator
from byocc.ir import Function
from byocc.ir import IRModule
from byocc.ir import MatchCast
from byocc.ir import Op
from byocc.ir import PassError
from byocc.ir import SeqExpr
from byocc.ir import Span
from byocc.ir import TensorStructInfo
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir import sinfo_of
from byocc.ops import constant_of

from .fold_constant import used_vars
from .pass_manager import Pass
from .pass_manager import map_functions

Perm = tuple[int, ...]  # permute_dims axes taking the original value to the current one

_SKIP_ATTRS = ("Composite", "Codegen", "Primitive")

UNARY_OPS = frozenset(
    "relax." + n for n in (
        "acos acosh asin asinh atan atanh cos cosh exp log rsqrt sigmoid sin sinh sqrt tan tanh "
        "erf abs bitwise_not ceil floor logical_not negative round sign square trunc isfinite "
        "isinf isnan clip astype nn.relu nn.gelu nn.gelu_tanh nn.selu nn.silu nn.leakyrelu "
        "nn.softplus nn.dropout").split())
BINARY_OPS = frozenset(
    "relax." + n for n in (
        "add subtract multiply divide floor_divide power maximum minimum mod floor_mod "
        "log_add_exp atan2 logical_and logical_or logical_xor bitwise_and bitwise_or "
        "bitwise_xor left_shift right_shift equal not_equal less less_equal greater "
        "greater_equal where").split())
REDUCE_OPS = frozenset("relax." + n for n in ("sum", "mean", "max", "min", "prod", "std", "variance"))
CONV_OPS = frozenset(f"relax.nn.conv{n}d{t}" for n in (1, 2, 3) for t in ("", "_transpose"))
POOL_OPS = frozenset(f"relax.nn.{k}_pool{n}d" for n in (1, 2, 3) for k in ("max", "avg", "adaptive_avg"))


# --------------------------------------------------------------------------- permutations
def is_identity(perm: Perm) -> bool:
    return all(i == a for i, a in enumerate(perm))


def inverse(perm: Perm) -> Perm:
    out = [0] * len(perm)
    for i, a in enumerate(perm):
        out[a] = i
    return tuple(out)


def perm_between(src: str, dst: str) -> Perm:
    """Axes taking a tensor laid out as ``src`` to ``dst`` (``NCHW`` -> ``NHWC``: 0, 2, 3, 1)."""
    return tuple(src.index(c) for c in dst)


def permute_layout(layout: str, perm: Perm) -> str:
    """The layout string of ``permute_dims(x, perm)`` for ``x`` laid out as ``layout``."""
    return "".join(layout[a] for a in perm)


def is_plain_layout(layout: object) -> bool:
    """A layout made of distinct upper-case axis letters (``NCHW``; not ``NCHW4c``)."""
    return isinstance(layout, str) and layout.isalpha() and layout.isupper() and len(set(layout)) == len(layout)


def _ndim(expr: Expr) -> int:
    si = getattr(expr, "struct_info", None)
    return si.ndim if isinstance(si, TensorStructInfo) else -1


def _norm_axis(axis: int, n: int) -> int | None:
    a = axis + n if axis < 0 else axis
    return a if 0 <= a < n else None


def _constant(array: Any) -> Constant:
    return constant_of(array)


def _make(op: Op | str, args: Iterable[Expr], attrs: Attrs | Mapping[str, Any] | None = None,
          span: Span | None = None) -> Call:
    from byocc.ops import make_call

    return make_call(op, list(args), attrs, span=span)


def _permute_call(src: Expr, axes: Perm, span: Span | None = None) -> Call:
    return _make("relax.permute_dims", [src], {"axes": tuple(axes)}, span)


# --------------------------------------------------------------------------- block rewriting
def _op_of(call: Call) -> Op:
    """The operator of a call a rule runs on (rules are looked up by operator name)."""
    op = call.op
    assert isinstance(op, Op)
    return op


def _attrs_of(call: Call) -> Attrs:
    """The attributes of a call of an operator that has some (the registry always sets them)."""
    attrs = call.attrs
    assert attrs is not None
    return attrs


class _Subst(ExprMutator):
    def __init__(self, remap: dict[Var, Expr]) -> None:
        super().__init__()
        self.var_remap = remap


class _BlockRewriter:
    """Rewrites the bindings of one dataflow block, in order."""

    def __init__(self, desired: Mapping[str, tuple[str, ...]]) -> None:
        self.desired = desired
        self.out: list[Binding] = []
        self.layout: dict[Var, tuple[Expr, Perm]] = {}  # var -> (expr holding permute_dims(var, perm), perm)
        self.tuple_layout: dict[Var, tuple[Var, tuple[Perm, ...]]] = {}  # tuple var -> (new tuple var, perm per field)
        self.plain: dict[Var, Expr] = {}  # var -> expr holding its value in the original layout
        self.transposed: dict[Var, tuple[Expr, Perm]] = {}  # emitted var -> (src, axes): var = permute_dims(src, axes)
        self.cache: dict[tuple[Expr, Perm], Expr] = {}  # (src, axes) -> emitted var

    # ---------------------------------------------------------------- emitting
    def emit(self, var: Var, value: Expr) -> Var:
        self.out.append(VarBinding(var, value, None))
        self.note_transpose(var, value)
        return var

    def note_transpose(self, var: Var, value: Expr) -> None:
        """Remember ``var = permute_dims(src, axes)`` for composing and reuse."""
        if isinstance(value, Call) and value.op is _PERMUTE and isinstance(value.args[0], (Var, Constant)):
            src = value.args[0]
            n = _ndim(src)
            if n < 0:
                return
            given = value.attrs.axes if value.attrs is not None else None
            axes = tuple(range(n))[::-1] if given is None else tuple(a + n if a < 0 else a for a in given)
            self.transposed[var] = (src, axes)
            self.cache.setdefault((src, axes), var)

    def transpose(self, src: Expr, axes: Perm, bind_to: Var | None = None, span: Span | None = None) -> Expr:
        """An expression holding ``permute_dims(src, axes)``, composing with ``src``'s own
        transpose when it is one and reusing earlier transposes."""
        while isinstance(src, Var) and src in self.transposed:
            inner, a0 = self.transposed[src]
            axes = tuple(a0[a] for a in axes)
            src = inner
        if is_identity(axes):
            if bind_to is not None:
                return self.emit(bind_to, src)
            return src
        if bind_to is None:
            hit = self.cache.get((src, axes))
            if hit is not None:
                return hit
            if isinstance(src, Constant) and src.data is not None:
                import numpy as np

                out = _constant(np.transpose(src.data, axes))
                self.cache[(src, axes)] = out
                return out
        call = _permute_call(src, axes, span)
        var = bind_to if bind_to is not None else DataflowVar("lv", call.struct_info)
        return self.emit(var, call)

    # ---------------------------------------------------------------- operand access
    def value_in(self, x: Expr, perm: Perm) -> Expr:
        """An expression holding ``permute_dims(x, perm)`` (``x`` in its original layout)."""
        if isinstance(x, Var):
            st = self.layout.get(x)
            if st is not None:
                cur, p = st
                if p == perm:
                    return cur
                return self.transpose(cur, tuple(p.index(a) for a in perm))
            y = self.plain_of(x) if x in self.tuple_layout else x
            x = self.plain.get(y, y) if isinstance(y, Var) else y
        return self.transpose(x, perm)

    def plain_of(self, var: Var) -> Expr:
        """``var``'s value in its original layout (materialised once)."""
        hit = self.plain.get(var)
        if hit is not None:
            return hit
        if var in self.layout:
            cur, p = self.layout[var]
            out = self.transpose(cur, inverse(p))
        elif var in self.tuple_layout:
            cur, perms = self.tuple_layout[var]
            cur_si = cur.struct_info
            assert isinstance(cur_si, TupleStructInfo)  # tuple_layout holds tuple variables
            fields: list[Expr] = []
            for i, p in enumerate(perms):
                item = TupleGetItem(cur, i, cur_si.fields[i])
                fvar = self.emit(DataflowVar("lv", item.struct_info), item)
                fields.append(self.transpose(fvar, inverse(p)))
            tup = Tuple(tuple(fields), TupleStructInfo(tuple(sinfo_of(f) for f in fields)))
            out = self.emit(DataflowVar(var.name_hint, tup.struct_info), tup)
        else:
            return var
        self.plain[var] = out
        return out

    def state(self, x: Expr) -> Perm | None:
        """The permutation a variable currently lives in, or None (original layout)."""
        if isinstance(x, Var):
            st = self.layout.get(x)
            if st is not None:
                return st[1]
        return None

    # ---------------------------------------------------------------- bindings
    def visit(self, binding: Binding) -> None:
        if isinstance(binding, VarBinding):
            value = binding.value
            result: _RuleResult | None = None
            if isinstance(value, Call) and isinstance(value.op, Op):
                rule = _RULES.get(value.op.name)
                if rule is not None:
                    result = rule(self, value, binding.var)
            elif isinstance(value, TupleGetItem) and value.tuple_value in self.tuple_layout:
                cur, perms = self.tuple_layout[value.tuple_value]
                cur_si = cur.struct_info
                assert isinstance(cur_si, TupleStructInfo)  # tuple_layout holds tuple variables
                result = (TupleGetItem(cur, value.index, cur_si.fields[value.index], value.span),
                          perms[value.index])
            elif isinstance(value, Var) and value in self.layout:
                result = self.layout[value]
            if result is not None:
                self.define(binding.var, *result)
                return
        self.fallback(binding)

    def define(self, var: Var, value: Expr, perm: Perm | list[Perm]) -> None:
        """Bind ``var`` whose original value is ``value`` seen through ``inverse(perm)``."""
        if isinstance(perm, list):  # tuple-valued (batch_norm): one perm per field
            tup_var = self.emit(DataflowVar(var.name_hint, value.struct_info), value)
            self.tuple_layout[var] = (tup_var, tuple(perm))
            return
        if is_identity(perm):
            if isinstance(value, (Var, Constant)) and isinstance(var, DataflowVar):
                self.plain[var] = value
            else:
                self.emit(var, value)
            return
        cur: Expr
        if isinstance(value, (Var, Constant)):
            cur = value
        else:  # an output keeps its name for the value in the original layout
            hint = var.name_hint if isinstance(var, DataflowVar) else "lv"
            cur = self.emit(DataflowVar(hint, value.struct_info), value)
        self.layout[var] = (cur, perm)
        if not isinstance(var, DataflowVar):  # visible after the block: original layout
            self.transpose(cur, inverse(perm), bind_to=var)
            self.plain[var] = var

    def fallback(self, binding: Binding) -> None:
        """Keep the binding, giving it its operands in their original layout."""
        value = binding.value
        remap: dict[Var, Expr] = {}
        for v in used_vars(value):
            if v in self.layout or v in self.tuple_layout or v in self.plain:
                remap[v] = self.plain_of(v)
        if remap:
            new_value = _Subst(remap).visit_expr(value)
            if isinstance(binding, MatchCast):
                binding = MatchCast(binding.var, new_value, binding.struct_info, binding.span)
            else:
                binding = VarBinding(binding.var, new_value, binding.span)
        self.out.append(binding)
        if isinstance(binding, VarBinding):
            self.note_transpose(binding.var, binding.value)

    def finish(self) -> list[Binding]:
        """The new bindings, without ``permute_dims`` dataflow bindings left unused."""
        uses: dict[Var, int] = {}
        per_binding = []
        for b in self.out:
            used = used_vars(b.value)
            per_binding.append(used)
            for v in used:
                uses[v] = uses.get(v, 0) + 1
        kept: list[Binding] = []
        for b, used in zip(reversed(self.out), reversed(per_binding)):
            if (isinstance(b, VarBinding) and isinstance(b.var, DataflowVar) and uses.get(b.var, 0) == 0
                    and isinstance(b.value, Call) and b.value.op is _PERMUTE):
                for v in used:
                    uses[v] -= 1
                continue
            kept.append(b)
        kept.reverse()
        return kept


_PERMUTE = Op.get("relax.permute_dims", create=True)


# --------------------------------------------------------------------------- rules
# A rule gets (rewriter, call, bound var) and returns (new value, perm) -- the new value
# holds permute_dims(original result, perm); a perm per field for a tuple -- or None to keep
# the binding as it is.
_RuleResult = tuple[Expr, Perm | list[Perm]]
_Rule = Callable[[_BlockRewriter, Call, Var], _RuleResult | None]


def _rule_desired_layout(rw: _BlockRewriter, call: Call, var: Var) -> _RuleResult | None:
    name = _op_of(call).name
    layouts = rw.desired.get(name)
    if layouts is None:
        return _rule_layout_attrs(rw, call, var)
    a = _attrs_of(call)
    conv = name in CONV_OPS
    data_attr = "data_layout" if conv else "layout"
    src, src_out = a[data_attr], a["out_layout"] or a[data_attr]
    dst = layouts[0]
    if not (is_plain_layout(src) and is_plain_layout(src_out)) or sorted(src) != sorted(dst) \
            or sorted(src_out) != sorted(dst):
        return _rule_layout_attrs(rw, call, var)
    if _ndim(call.args[0]) != len(dst) or (conv and _ndim(call.args[1]) != len(a["kernel_layout"])):
        return _rule_layout_attrs(rw, call, var)  # rank unknown (a constant without its value)
    changes = {data_attr: dst, "out_layout": dst}
    args: list[Expr] = [rw.value_in(call.args[0], perm_between(src, dst))]
    if conv:
        ksrc = a["kernel_layout"]
        kdst = layouts[1] if len(layouts) > 1 and layouts[1] != "default" else ksrc
        if not is_plain_layout(ksrc) or sorted(ksrc) != sorted(kdst):
            return _rule_layout_attrs(rw, call, var)
        args.append(rw.value_in(call.args[1], perm_between(ksrc, kdst)))
        changes["kernel_layout"] = kdst
    else:
        args.extend(call.args[1:])
    return _make(_op_of(call), args, a.replace(**changes), call.span), perm_between(src_out, dst)


def _rule_layout_attrs(rw: _BlockRewriter, call: Call, var: Var) -> _RuleResult | None:
    """A conv or pool whose input already lives in another layout: follow it."""
    p = rw.state(call.args[0])
    if p is None:
        return None
    a = _attrs_of(call)
    data_attr = "data_layout" if _op_of(call).name in CONV_OPS else "layout"
    src, out = a[data_attr], a["out_layout"] or a[data_attr]
    if not (is_plain_layout(src) and is_plain_layout(out)) or len(src) != len(p) or sorted(src) != sorted(out):
        return None
    changes = {data_attr: permute_layout(src, p), "out_layout": permute_layout(out, p)}
    args = [rw.value_in(call.args[0], p)] + [_plain_arg(rw, x) for x in call.args[1:]]
    return _make(_op_of(call), args, a.replace(**changes), call.span), p


def _plain_arg(rw: _BlockRewriter, x: Expr) -> Expr:
    if isinstance(x, Var) and (x in rw.layout or x in rw.plain or x in rw.tuple_layout):
        return rw.plain_of(x)
    return x


def _rule_elementwise(rw: _BlockRewriter, call: Call, var: Var) -> _RuleResult | None:
    n = _ndim(var)
    if n <= 0:
        return None
    perm = None
    for x in call.args:
        p = rw.state(x)
        if p is not None and len(p) == n:
            perm = p
            break
    if perm is None:
        return None
    args: list[Expr] = []
    for x in call.args:
        si = getattr(x, "struct_info", None)
        if not isinstance(si, TensorStructInfo):
            args.append(x)
            continue
        k = si.ndim
        if k == n:
            args.append(rw.value_in(x, perm))
        elif k == 0:
            args.append(_plain_arg(rw, x))
        elif 0 < k < n and isinstance(x, Constant) and x.data is not None:
            import numpy as np

            full = x.data.reshape((1,) * (n - k) + tuple(x.data.shape))
            args.append(_constant(np.transpose(full, perm)))
        else:
            return None
    return _make(_op_of(call), args, call.attrs, call.span), perm


def _rule_axis(rw: _BlockRewriter, call: Call, var: Var) -> _RuleResult | None:
    """softmax / log_softmax / prelu / concat / batch_norm: one axis attribute, renumbered."""
    name = _op_of(call).name
    attrs = _attrs_of(call)
    if name == "relax.concat":
        tup = call.args[0]
        if not isinstance(tup, Tuple) or not tup.fields:
            return None
        perm = next((rw.state(f) for f in tup.fields if rw.state(f) is not None), None)
        if perm is None or any(_ndim(f) != len(perm) for f in tup.fields) or attrs.axis is None:
            return None
        axis = _norm_axis(attrs.axis, len(perm))
        if axis is None:
            return None
        fields = tuple(rw.value_in(f, perm) for f in tup.fields)
        new_tup = Tuple(fields, TupleStructInfo(tuple(sinfo_of(f) for f in fields)), tup.span)
        return _make(_op_of(call), [new_tup], attrs.replace(axis=perm.index(axis)), call.span), perm
    perm = rw.state(call.args[0])
    if perm is None:
        return None
    axis = _norm_axis(attrs.axis, len(perm))
    if axis is None:
        return None
    data = call.args[0]
    assert isinstance(data, Var)  # state() knows variables only
    args = [rw.layout[data][0]] + [_plain_arg(rw, x) for x in call.args[1:]]
    new = _make(_op_of(call), args, attrs.replace(axis=perm.index(axis)), call.span)
    if name == "relax.nn.batch_norm":
        if not isinstance(var, DataflowVar):
            return None
        return new, [perm, (0,), (0,)]
    return new, perm


def _data_in_layout(rw: _BlockRewriter, call: Call) -> tuple[Perm, Var, Attrs] | None:
    """``(permutation, data, attrs)`` when the call's data operand has a converted layout."""
    perm = rw.state(call.args[0])
    if perm is None:
        return None
    data = call.args[0]
    assert isinstance(data, Var)  # state() knows variables only
    return perm, data, _attrs_of(call)


def _rule_reduce(rw: _BlockRewriter, call: Call, var: Var) -> _RuleResult | None:
    known = _data_in_layout(rw, call)
    if known is None:
        return None
    perm, data, attrs = known
    n = len(perm)
    axis = attrs.axis
    if axis is None:
        axes = set(range(n))
        new_axis = None
    else:
        norm = [_norm_axis(a, n) for a in axis]
        valid = [a for a in norm if a is not None]
        if len(valid) != len(norm):
            return None
        axes = set(valid)
        new_axis = tuple(sorted(perm.index(a) for a in axes))
    if attrs.keepdims:
        out_perm = perm
    else:
        kept = [j for j in range(n) if j not in axes]
        out_perm = tuple(kept.index(p) for p in perm if p not in axes)
    new = _make(_op_of(call), [rw.layout[data][0]], attrs.replace(axis=new_axis), call.span)
    return new, out_perm


def _rule_pad(rw: _BlockRewriter, call: Call, var: Var) -> _RuleResult | None:
    known = _data_in_layout(rw, call)
    if known is None:
        return None
    perm, data, attrs = known
    n = len(perm)
    width = list(attrs.pad_width)
    if len(width) > 2 * n or len(width) % 2:
        return None
    width += [0] * (2 * n - len(width))
    new_width = tuple(w for a in perm for w in (width[2 * a], width[2 * a + 1]))
    new = _make(_op_of(call), [rw.layout[data][0]], attrs.replace(pad_width=new_width), call.span)
    return new, perm


def _rule_permute(rw: _BlockRewriter, call: Call, var: Var) -> _RuleResult | None:
    x = call.args[0]
    n = _ndim(x)
    if n < 0:
        return None
    given = call.attrs.axes if call.attrs is not None else None
    norm = tuple(range(n))[::-1] if given is None else tuple(_norm_axis(a, n) for a in given)
    axes = tuple(a for a in norm if a is not None)
    if len(axes) != len(norm) or len(axes) != n:
        return None
    perm = rw.state(x)
    if perm is not None:
        assert isinstance(x, Var)  # state() knows variables only
        # cur = permute(x, perm) and var = permute(x, axes) = permute(cur, rel): so cur is
        # var seen through inverse(rel) -- no binding needed.
        rel = tuple(perm.index(a) for a in axes)
        return rw.layout[x][0], inverse(rel)
    src = rw.plain.get(x, x) if isinstance(x, Var) else x
    if isinstance(src, Var) and src in rw.transposed:
        inner, a0 = rw.transposed[src]
        src, axes = inner, tuple(a0[a] for a in axes)
        if is_identity(axes):
            return src, axes
    elif isinstance(src, Constant) and src.data is not None:
        return rw.transpose(src, axes), tuple(range(n))  # transposed at compile time
    elif src is x:
        return None  # nothing known about x: keep the binding as it is
    hit = rw.cache.get((src, axes))
    if hit is not None:
        return hit, tuple(range(n))
    return _permute_call(src, axes, call.span), tuple(range(n))


_RULES: dict[str, _Rule] = {}
for _n in CONV_OPS | POOL_OPS:
    _RULES[_n] = _rule_desired_layout
for _n in UNARY_OPS | BINARY_OPS:
    _RULES[_n] = _rule_elementwise
for _n in ("relax.nn.softmax", "relax.nn.log_softmax", "relax.nn.prelu", "relax.concat", "relax.nn.batch_norm"):
    _RULES[_n] = _rule_axis
for _n in REDUCE_OPS:
    _RULES[_n] = _rule_reduce
_RULES["relax.nn.pad"] = _rule_pad
_RULES["relax.permute_dims"] = _rule_permute


# --------------------------------------------------------------------------- the pass
def _validate(desired: Mapping[str, str | Sequence[str]]) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for op, layouts in dict(desired).items():
        name = op if op.startswith("relax.") else "relax." + op
        if name not in CONV_OPS and name not in POOL_OPS:
            raise PassError(f"ConvertLayout: no layout rule for {op!r} (supported: convolutions and pools)")
        layouts = (layouts,) if isinstance(layouts, str) else tuple(layouts)
        if not layouts or len(layouts) > 2:
            raise PassError(f"ConvertLayout: {op!r} needs [data_layout] or [data_layout, kernel_layout]")
        for i, lay in enumerate(layouts):
            if not (i == 1 and lay == "default") and not is_plain_layout(lay):
                raise PassError(f"ConvertLayout: layout {lay!r} for {op!r} is not a plain layout "
                                "(distinct upper-case axis letters such as NHWC)")
        out[name] = layouts
    return out


def convert_layout_function(func: Function, desired: Mapping[str, tuple[str, ...]]) -> Function:
    """``func`` with its dataflow blocks rewritten (the same object when nothing applies)."""
    if any(k in func.attrs for k in _SKIP_ATTRS) or not isinstance(func.body, SeqExpr):
        return func
    if not any(isinstance(b.value, Call) and isinstance(b.value.op, Op) and b.value.op.name in desired
               for block in func.body.blocks if isinstance(block, DataflowBlock) for b in block.bindings
               if isinstance(b, VarBinding)):
        return func
    blocks: list[BindingBlock] = []
    for block in func.body.blocks:
        if not isinstance(block, DataflowBlock):
            blocks.append(block)
            continue
        rw = _BlockRewriter(desired)
        for b in block.bindings:
            rw.visit(b)
        blocks.append(DataflowBlock(tuple(rw.finish()), block.span))
    body = SeqExpr(tuple(blocks), func.body.body, func.body.span)
    return Function(func.params, body, func.ret_struct_info, func.is_pure, dict(func.attrs), func.span)


def convert_layout(mod: IRModule, desired: Mapping[str, str | Sequence[str]]) -> IRModule:
    """Functional form of :class:`ConvertLayout`."""
    table = _validate(desired)
    mod = map_functions(mod, lambda f: convert_layout_function(f, table))
    return mod


def _default_desired() -> tuple[tuple[str, tuple[str, ...]], ...]:
    return (("relax.nn.conv2d", ("NHWC", "OHWI")),)


@dataclass(frozen=True)
class ConvertLayout(Pass):
    """Convert the layout of the ops in ``desired`` (op name -> [data layout, kernel layout]),
    propagating it through layout-agnostic ops (module docstring)."""

    desired: Mapping[str, Sequence[str]] | tuple[tuple[str, tuple[str, ...]], ...] = field(
        default_factory=_default_desired)

    name: ClassVar[str] = "ConvertLayout"
    opt_level: ClassVar[int] = 0

    def __post_init__(self) -> None:
        items = self.desired.items() if isinstance(self.desired, Mapping) else self.desired
        table = _validate(dict(items))
        object.__setattr__(self, "desired", tuple((k, tuple(v)) for k, v in table.items()))

    def run(self, mod: IRModule) -> IRModule:
        return convert_layout(mod, dict(self.desired))


__all__ = ["ConvertLayout", "convert_layout", "convert_layout_function"]
