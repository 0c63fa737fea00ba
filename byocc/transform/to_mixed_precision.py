"""ToMixedPrecision: run the tensor-core operators of an fp32 module in half precision.

The policy of every operator is TVM's (``TMixedPrecisionPolicy`` in TVM 0.27's op
registrations; byocc reimplements the pass from its documented behaviour):

* **always** -- ``matmul``, the convolutions (1-3-D, transposed too) and the attention ops:
  the floating-point operands are cast to the half dtype; ``matmul``/``conv`` get
  ``out_dtype`` (the accumulator, TVM's ``out_dtype`` parameter of the pass; ``float32`` by
  default as in TVM, the CLI passes ``float16`` so the fused epilogues still match -- the
  cutlass/cublas kernels accumulate in fp32 either way). The result counts as half.
* **follow** -- element-wise unary and binary ops, the activations, ``layer_norm``,
  ``group_norm``, ``instance_norm``, ``rms_norm``, ``dropout``, the pools, ``resize2d``,
  ``astype``, ``strided_slice`` and the shape-only manipulations: computed in half when every
  floating-point operand is half (a constant counts as half when its values fit the half
  dtype's range), else in fp32 with the half operands cast back.
* **never** -- everything else (``softmax``, ``log_softmax``, the reductions ``mean``/``sum``
  /``variance``..., ``batch_norm``, ``take``, ``where``, ``cumsum``...): the operands get
  their original dtype back, so softmax and the statistics of decomposed norms stay fp32.

Differences from TVM:

* ``take``, ``where``, ``gather_elements``, ``gather_nd``, ``repeat`` and ``tile`` follow
  their floating-point operands (TVM: never). They compute nothing, so the half result is exactly the cast of the
  fp32 one; an embedding lookup from a half table then keeps a transformer's residual stream
  in half (as PyTorch's fp16 models run) instead of fp32 with casts around every layer.

* A cast is made once per variable and dtype inside a dataflow block and reused (TVM
  casts at every use). A variable keeps every dtype it has been seen in: where an fp32
  user needs the fp32 accumulator of a ``matmul`` whose half version exists, it gets the
  accumulator itself, and ``astype(astype(x, float16), float32)`` never appears: a cast of a
  cast is made from the most precise version there is (``astype`` bindings of the module
  itself are looked through the same way). Casts are emitted only where a user needs them.
* Constants are converted at compile time (numpy), never as ``astype`` bindings; a constant
  counts as half-castable when its *finite* values fit (TVM: all values, so an additive
  mask holding ``-inf`` kept its users in fp32).
* ``bfloat16`` is accepted as the half dtype (TVM's pass is fp16 only); its range is fp32's.

Only dataflow blocks are rewritten (as TVM); variables visible outside a block (its
outputs) keep their original dtype and identity, so function signatures do not change.
Functions tagged ``Composite``/``Codegen``/``Primitive`` are left alone. Every binding is
visited a bounded number of times: linear in the number of bindings, no recursion over them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from typing import ClassVar

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
from byocc.ir import TensorStructInfo
from byocc.ir import Tuple
from byocc.ir import Var
from byocc.ir import VarBinding

from .pass_manager import Pass
from .pass_manager import map_functions

HALF_DTYPES = ("float16", "bfloat16")
_SKIP_ATTRS = ("Composite", "Codegen", "Primitive")
_FP16_MAX = 65504.0

#: TVM's kAlways operators; the value: whether the op has an ``out_dtype`` attribute.
ALWAYS_OPS: dict[str, bool] = {
    "relax.matmul": True,
    **{f"relax.nn.conv{n}d{t}": True for n in (1, 2, 3) for t in ("", "_transpose")},
    "relax.nn.attention": False, "relax.nn.attention_bias": False, "relax.nn.attention_var_len": False,
}

#: TVM's kFollow operators.
FOLLOW_OPS = frozenset("relax." + n for n in (
    # unary arithmetic (RELAX_REGISTER_UNARY_OP)
    "abs acos acosh asin asinh atan atanh bitwise_not ceil cos cosh exp floor log logical_not "
    "negative round rsqrt sigmoid sign sin sinh square sqrt tan tanh trunc erf clip "
    "isfinite isinf isnan "
    # binary (RELAX_REGISTER_BINARY_OP_AND_IMPL and the comparisons)
    "add subtract multiply divide floor_divide power maximum minimum mod floor_mod log_add_exp "
    "equal not_equal less less_equal greater greater_equal "
    # activations, norms, dropout
    "nn.relu nn.gelu nn.gelu_tanh nn.selu nn.silu nn.layer_norm nn.group_norm nn.instance_norm "
    "nn.rms_norm nn.dropout nn.batch_flatten "
    # pools, resize
    "nn.max_pool1d nn.max_pool2d nn.max_pool3d nn.avg_pool1d nn.avg_pool2d nn.avg_pool3d "
    "nn.adaptive_avg_pool1d nn.adaptive_avg_pool2d nn.adaptive_avg_pool3d image.resize2d "
    "image.resize3d "
    # manipulation, creation, indexing, datatype
    "broadcast_to concat expand_dims flatten layout_transform permute_dims reshape split "
    "squeeze stack full full_like ones zeros strided_slice dynamic_strided_slice astype "
    "ewise_fma").split())


#: Index, select and repeat ops: no arithmetic, so computing them in half gives exactly the cast of
#: the fp32 result. TVM registers no policy for them (never); byocc lets them follow their
#: floating-point operands (indices and conditions do not count), so an fp16 embedding table
#: or select keeps the stream in half instead of sending it back to fp32.
SELECT_OPS = frozenset(("relax.take", "relax.where", "relax.gather_elements", "relax.gather_nd",
                        "relax.repeat", "relax.tile"))


def _tensor_dtype(expr: Expr) -> str | None:
    si = getattr(expr, "struct_info", None)
    return si.dtype if isinstance(si, TensorStructInfo) else None


def _is_float_tensor(expr: Expr) -> bool:
    return _tensor_dtype(expr) in ("float16", "bfloat16", "float32")


def _make(op: Any, args: list[Expr], attrs: Any = None, span: Any = None) -> Call:
    from byocc.ops import make_call

    return make_call(op, args, attrs, span=span)


class _Block:
    """The forward rewrite of one dataflow block."""

    def __init__(self, half: str, out_dtype: str) -> None:
        self.half = half
        self.out_dtype = out_dtype
        self.out: list[Binding] = []
        # original var -> {dtype: expression holding its value in that dtype}
        self.versions: dict[Var, dict[str | None, Expr]] = {}
        # original var -> the dtype it "lives" in (decides follow ops); default: its own
        self.primary: dict[Var, str | None] = {}
        self.const_cache: dict[tuple[int, str], Constant] = {}
        self.n_casts = 0

    # ------------------------------------------------------------------ values
    def dtype_of(self, x: Expr) -> str | None:
        if isinstance(x, Var) and x in self.primary:
            return self.primary[x]
        return _tensor_dtype(x)

    def castable(self, x: Expr) -> bool:
        """Whether a follow op may take ``x`` in the half dtype."""
        if not _is_float_tensor(x):
            return not isinstance(getattr(x, "struct_info", None), TensorStructInfo)
        if isinstance(x, Constant):
            return self._const_fits(x)
        return self.dtype_of(x) == self.half

    def _const_fits(self, c: Constant) -> bool:
        if c.data is None:
            return False
        if self.half == "bfloat16" or _tensor_dtype(c) == self.half:
            return True
        import numpy as np

        data = np.abs(np.asarray(c.data, dtype=np.float64))
        finite = data[np.isfinite(data)]  # inf and nan convert exactly (a mask's -inf)
        return bool(finite.size == 0 or finite.max() <= _FP16_MAX)

    def get(self, x: Expr, dtype: str) -> Expr:
        """An expression holding ``x`` in ``dtype`` (casts made once, from the most precise
        version there is; constants converted now). Non-float tensors are returned as they are."""
        if not _is_float_tensor(x) or dtype not in ("float16", "bfloat16", "float32"):
            return x
        if isinstance(x, Constant):
            if _tensor_dtype(x) == dtype or x.data is None:
                return x if _tensor_dtype(x) == dtype else self._cast(x, dtype)
            key = (id(x), dtype)
            known = self.const_cache.get(key)
            if known is None:
                from byocc.ops import constant_of
                from byocc.ops.reference import np_dtype

                known = constant_of(x.data.astype(np_dtype(dtype)))
                self.const_cache[key] = known
            return known
        if not isinstance(x, Var):
            return x if _tensor_dtype(x) == dtype else self._cast(x, dtype)
        have = self.versions.setdefault(x, {_tensor_dtype(x): x})
        hit = have.get(dtype)
        if hit is not None:
            return hit
        source = have.get("float32") or next(iter(have.values()))
        cast = self._cast(source, dtype, x.name_hint)
        have[dtype] = cast
        return cast

    def _cast(self, src: Expr, dtype: str, name: str = "lv") -> Var:
        call = _make("relax.astype", [src], {"dtype": dtype})
        var = DataflowVar(name, call.struct_info)
        self.out.append(VarBinding(var, call, None))
        self.n_casts += 1
        return var

    def original(self, x: Expr) -> Expr:
        """``x`` in the dtype the input module gave it."""
        dtype = _tensor_dtype(x)
        return self.get(x, dtype) if isinstance(x, Var) and dtype is not None else x

    # ------------------------------------------------------------------ bindings
    def visit(self, b: Binding) -> None:
        if isinstance(b, VarBinding) and isinstance(b.value, Call) and isinstance(b.value.op, Op):
            name = b.value.op.name
            if name in ALWAYS_OPS:
                return self._always(b, b.value, ALWAYS_OPS[name])
            if name == "relax.astype":
                return self._astype(b, b.value)
            if (name in FOLLOW_OPS or name in SELECT_OPS) and isinstance(b.var.struct_info, TensorStructInfo):
                return self._follow(b, b.value, select=name in SELECT_OPS)
        self._keep(b)

    def _bind(self, b: VarBinding, value: Call, half_result: bool) -> None:
        """Bind the rewritten ``value`` for ``b.var``: a new dataflow var when its dtype
        changed, the original var (cast back to its dtype) when it is visible outside."""
        var = b.var
        orig = _tensor_dtype(var)
        new_dtype = _tensor_dtype(value)
        if new_dtype == orig:
            self.out.append(VarBinding(var, value, b.span))
            self.versions[var] = {orig: var}
        elif not isinstance(var, DataflowVar):  # a block output keeps its dtype and identity
            tmp = DataflowVar("lv", value.struct_info)
            self.out.append(VarBinding(tmp, value, b.span))
            self.out.append(VarBinding(var, _make("relax.astype", [tmp], {"dtype": orig}), b.span))
            self.n_casts += 1
            self.versions[var] = {orig: var, new_dtype: tmp}
        else:
            new = DataflowVar(var.name_hint, value.struct_info, var.span)
            self.out.append(VarBinding(new, value, b.span))
            self.versions[var] = {new_dtype: new}
        if half_result and isinstance(var, DataflowVar):
            self.primary[var] = self.half
        else:
            self.primary[var] = orig if not isinstance(var, DataflowVar) else new_dtype

    def _always(self, b: VarBinding, call: Call, has_out_dtype: bool) -> None:
        args = [self.get(a, self.half) for a in call.args]
        attrs: Any = call.attrs
        if has_out_dtype:
            attrs = (attrs.replace(out_dtype=self.out_dtype) if attrs is not None
                     else {"out_dtype": self.out_dtype})
        self._bind(b, _make(call.op, args, attrs, call.span), half_result=True)

    def _follow(self, b: VarBinding, call: Call, select: bool = False) -> None:
        tensors = [a for a in _leaves(call.args) if isinstance(getattr(a, "struct_info", None), TensorStructInfo)
                   and (not select or _is_float_tensor(a))]
        half = bool(tensors) and all(self.castable(a) for a in tensors)
        dtype = self.half if half else "float32"
        args = [_map_leaves(a, lambda x: self.get(x, dtype)) for a in call.args]
        if all(n is o for n, o in zip(args, call.args)):
            self._keep(b)
            return
        self._bind(b, _make(call.op, args, call.attrs, call.span), half_result=half)

    def _astype(self, b: VarBinding, call: Call) -> None:
        """``v = astype(x, d)``: ``v`` is ``x`` in ``d``; made from the most precise version."""
        x = call.args[0]
        target = call.attrs.dtype if call.attrs is not None else None
        if not isinstance(x, Var) or not _is_float_tensor(x) or target not in ("float16", "bfloat16", "float32"):
            self._keep(b)
            return
        if x not in self.versions and x not in self.primary:
            self._keep(b)  # nothing rewritten about x: the module's own cast stays as it is
            return
        var = b.var
        if isinstance(var, DataflowVar):
            # var and x are one value: they share their versions, and a cast is made only
            # where a user needs one (from the most precise version)
            self.versions[var] = self.versions.setdefault(x, {_tensor_dtype(x): x})
            self.primary[var] = target
            return
        self.out.append(VarBinding(var, self.get(x, target), b.span))  # a block output: an alias
        self.versions[var] = {target: var}
        self.primary[var] = target

    def _keep(self, b: Binding) -> None:
        """Any other binding: its operands in their original dtypes (never ops, tuples...)."""
        value = b.value
        remap: dict[Var, Expr] = {}
        for v in _free_vars(value):
            got = self.original(v)
            if got is not v:
                remap[v] = got
        if remap:
            mut = ExprMutator()
            mut.var_remap = remap
            value = mut.visit_expr(value)  # same dtypes as before: the struct info stays
        if isinstance(b, MatchCast):
            self.out.append(MatchCast(b.var, value, b.struct_info, b.span))
        else:
            self.out.append(VarBinding(b.var, value, b.span))
        orig = _tensor_dtype(b.var)
        if orig is not None:
            self.versions[b.var] = {orig: b.var}


def _leaves(args: tuple[Expr, ...]) -> list[Expr]:
    out: list[Expr] = []
    for a in args:
        out += list(a.fields) if isinstance(a, Tuple) else [a]
    return out


def _map_leaves(a: Expr, fn: Callable[[Expr], Expr]) -> Expr:
    if isinstance(a, Tuple):
        fields = tuple(fn(f) if isinstance(getattr(f, "struct_info", None), TensorStructInfo) else f
                       for f in a.fields)
        if all(n is o for n, o in zip(fields, a.fields)):
            return a
        from byocc.ir import TupleStructInfo
        from byocc.ir import sinfo_of

        return Tuple(fields, TupleStructInfo(tuple(sinfo_of(f) for f in fields)), a.span)
    return fn(a) if isinstance(getattr(a, "struct_info", None), TensorStructInfo) else a


def _free_vars(expr: Expr) -> list[Var]:
    """The variables ``expr`` reads, in first-seen order (an explicit stack)."""
    from byocc.ir import If
    from byocc.ir import TupleGetItem

    seen: dict[Var, None] = {}
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Var):
            seen.setdefault(e, None)
        elif isinstance(e, Call):
            stack += list(e.args)
        elif isinstance(e, Tuple):
            stack += list(e.fields)
        elif isinstance(e, TupleGetItem):
            stack.append(e.tuple_value)
        elif isinstance(e, If):
            stack += [e.cond]
    return list(seen)


def to_mixed_precision_function(func: Function, dtype: str = "float16", out_dtype: str = "float32") -> Function:
    """``func`` with its dataflow blocks rewritten (the same object when nothing changes)."""
    if any(k in func.attrs for k in _SKIP_ATTRS) or not isinstance(func.body, SeqExpr):
        return func
    if not any(isinstance(b.value, Call) and isinstance(b.value.op, Op) and b.value.op.name in ALWAYS_OPS
               and any(_tensor_dtype(a) == "float32" for a in _leaves(b.value.args))
               for block in func.body.blocks if isinstance(block, DataflowBlock) for b in block.bindings):
        return func
    blocks: list[BindingBlock] = []
    for block in func.body.blocks:
        if not isinstance(block, DataflowBlock):
            blocks.append(block)
            continue
        rw = _Block(dtype, out_dtype)
        for b in block.bindings:
            rw.visit(b)
        blocks.append(DataflowBlock(tuple(rw.out), block.span))
    body = SeqExpr(tuple(blocks), func.body.body, func.body.span)
    return Function(func.params, body, func.ret_struct_info, func.is_pure, dict(func.attrs), func.span)


def _check(dtype: str, out_dtype: str) -> None:
    if dtype not in HALF_DTYPES:
        raise PassError(f"ToMixedPrecision: dtype must be one of {', '.join(HALF_DTYPES)}, not {dtype!r}")
    if out_dtype not in ("float32", dtype):
        raise PassError(f"ToMixedPrecision: out_dtype (the accumulator) must be float32 or {dtype}, "
                        f"not {out_dtype!r}")


def to_mixed_precision(mod: IRModule, dtype: str = "float16", out_dtype: str = "float32") -> IRModule:
    """Functional form of :class:`ToMixedPrecision`."""
    _check(dtype, out_dtype)
    return map_functions(mod, lambda f: to_mixed_precision_function(f, dtype, out_dtype))


@dataclass(frozen=True)
class ToMixedPrecision(Pass):
    """TVM's ``relax.transform.ToMixedPrecision(out_dtype)`` with the half dtype a
    parameter (module docstring)."""

    dtype: str = "float16"
    out_dtype: str = "float32"

    name: ClassVar[str] = "ToMixedPrecision"
    opt_level: ClassVar[int] = 0

    def __post_init__(self) -> None:
        _check(self.dtype, self.out_dtype)

    def run(self, mod: IRModule) -> IRModule:
        return to_mixed_precision(mod, self.dtype, self.out_dtype)


__all__ = ["ALWAYS_OPS", "FOLLOW_OPS", "HALF_DTYPES", "SELECT_OPS", "ToMixedPrecision", "to_mixed_precision",
           "to_mixed_precision_function"]
