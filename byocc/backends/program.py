"""What an offloaded function computes, in a form the C++ generators read (docs/codegen.md#codegen-contract, #problem-mapping).

Both partition paths hand a codegen a function carrying ``Codegen``. Its body binds local
``Composite`` functions and calls them: once (annotate path) or several times, in order,
feeding one call's result to the next (merge path). :func:`offloaded_program` turns it into
an :class:`OffloadedProgram`: the parameters, one :class:`CompositeCall` per call in order
(arguments as :class:`ValueRef`: a parameter, an earlier call's result, or a bound
constant), the temporaries (kept in scratch) and the outputs.

:func:`gemm_step` reads a composite of the GEMM family *from its body* (not its name, so a
user's pattern file with other names works): ``[permute_dims(w)] -> matmul -> [add bias] ->
[relu|gelu|silu] -> [add|multiply residual] -> [relu]``, each stage the sole use of the
previous one.

Dims are kept as IR dims (``int`` or a symbolic :class:`~byocc.ir.prim.PrimExpr`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import Function
from byocc.ir import Op
from byocc.ir import SeqExpr
from byocc.ir import TensorStructInfo
from byocc.ir import Tuple
from byocc.ir import TupleGetItem
from byocc.ir import TupleStructInfo
from byocc.ir import Var
from byocc.ir import VarBinding
from byocc.ir.analysis import post_order_visit
from byocc.ir.prim import TirVar

from .codegen import CodegenError

ACTIVATIONS = {"relax.nn.relu": "relu", "relax.nn.gelu": "gelu", "relax.nn.silu": "silu"}


@dataclass(frozen=True)
class ValueRef:
    """A tensor the generated code can address: ``param`` (entry-point argument ``index``),
    ``temp`` (the result of call ``index``, in scratch unless it is an output), ``const``
    (bound constant ``index`` of the program's ``constants``), or ``output``."""

    kind: str
    index: int


@dataclass(frozen=True)
class CompositeCall:
    composite: str
    func: Function
    args: tuple  # ValueRef per composite parameter
    constants: tuple  # (Constant, ValueRef) inside the composite body
    result: int  # temp index
    sinfo: TensorStructInfo
    more: tuple = ()  # (temp index, TensorStructInfo) of the fields after the first (a tuple result)

    @property
    def results(self) -> tuple[int, ...]:
        """The temporaries of the call's results: one, or one per field of a returned tuple."""
        return (self.result, *(t for t, _ in self.more))

    @property
    def result_sinfos(self) -> tuple:
        return (self.sinfo, *(s for _, s in self.more))


@dataclass(frozen=True)
class OffloadedProgram:
    symbol: str
    backend: str
    func: Function
    params: tuple  # Var
    calls: tuple  # CompositeCall
    temps: tuple  # TensorStructInfo per temp (= per call)
    outputs: tuple  # ValueRef (temp or param) per output
    output_sinfo: tuple  # TensorStructInfo per output
    constants: tuple  # (name, Constant)

    @property
    def composites(self) -> tuple[str, ...]:
        return tuple(c.composite for c in self.calls)

    def sinfo_of(self, ref: ValueRef) -> TensorStructInfo:
        if ref.kind == "param":
            return self.params[ref.index].struct_info
        if ref.kind == "temp":
            return self.temps[ref.index]
        if ref.kind == "const":
            return self.constants[ref.index][1].struct_info
        if ref.kind == "output":
            return self.output_sinfo[ref.index]
        raise ValueError(ref.kind)


def _tensor_sinfo(sinfo, what: str, symbol: str) -> TensorStructInfo:
    if not isinstance(sinfo, TensorStructInfo) or sinfo.shape is None or sinfo.dtype in (None, ""):
        raise CodegenError(f"{symbol}: {what} must be a tensor with known shape and dtype "
                           f"(got {sinfo!s})")
    return sinfo


def _bindings(body: SeqExpr):
    for block in body.blocks:
        for binding in block.bindings:
            if not isinstance(binding, VarBinding):
                raise CodegenError("match_cast inside an offloaded function is not supported")
            yield binding


class _Reader:
    """The bindings of one offloaded function, read in order: each value's :class:`ValueRef`,
    the composite calls, their temporaries and the bound constants (one index each)."""

    def __init__(self, symbol: str, backend: str, params: tuple, constant_names: dict):
        self.symbol, self.backend, self.names = symbol, backend, constant_names
        self.env: dict[Var, Any] = {p: ValueRef("param", i) for i, p in enumerate(params)}
        self.local_funcs: dict[Var, Function] = {}
        self.calls: list[CompositeCall] = []
        self.temps: list[TensorStructInfo] = []
        self.constants: list[tuple[str, Constant]] = []
        self.const_index: dict[int, int] = {}

    def fail(self, what: str) -> CodegenError:
        return CodegenError(f"{self.symbol}: {what}")

    def const_ref(self, c: Constant) -> ValueRef:
        key = id(c)
        if key not in self.const_index:
            name = self.names.get(c) or f"{self.symbol}_{self.backend}_const_{len(self.constants)}"
            _tensor_sinfo(c.struct_info, f"constant {name}", self.symbol)
            self.const_index[key] = len(self.constants)
            self.constants.append((name, c))
        return ValueRef("const", self.const_index[key])

    def ref_of(self, e) -> Any:
        if isinstance(e, Var) and e in self.env:
            return self.env[e]
        if isinstance(e, Constant):
            return self.const_ref(e)
        if isinstance(e, Tuple):
            return tuple(self.ref_of(f) for f in e.fields)
        raise self.fail(f"unsupported value {type(e).__name__} in the offloaded function")

    def composite_call(self, value: Call) -> Any:
        """The call of a local composite function: its arguments, the constants its body binds
        and a new temporary for its result (one per field when it returns a tuple: TVM returns
        an intermediate used outside the composite as an extra field)."""
        comp = self.local_funcs[value.op]
        name = str(comp.attrs["Composite"])
        args = tuple(self.ref_of(a) for a in value.args)
        if any(not isinstance(a, ValueRef) for a in args):
            raise self.fail(f"composite {name} takes a tuple argument; only tensor arguments are supported")
        fields = value.struct_info.fields if isinstance(value.struct_info, TupleStructInfo) else None
        if fields is not None and not fields:
            raise self.fail(f"composite {name} returns an empty tuple")
        if fields is not None and any(isinstance(s, TupleStructInfo) for s in fields):
            raise self.fail(f"composite {name} returns a nested tuple (a tuple value used outside the composite, "
                            "e.g. a split's whole result); the generated functions take and return tensors only")
        sinfos = [_tensor_sinfo(s, f"the result of {name}" if fields is None else f"field {k} of the result of {name}",
                                self.symbol) for k, s in enumerate(fields if fields is not None else [value.struct_info])]
        sinfo = sinfos[0]
        inner_consts: list = []

        def collect(e):
            if isinstance(e, Constant):
                inner_consts.append((e, self.const_ref(e)))

        post_order_visit(comp.body, collect)
        first = len(self.temps)
        more = tuple((first + k, s) for k, s in enumerate(sinfos) if k)
        self.calls.append(CompositeCall(name, comp, args, tuple(inner_consts), first, sinfo, more))
        self.temps.extend(sinfos)
        if fields is None:
            return ValueRef("temp", first)
        return tuple(ValueRef("temp", first + k) for k in range(len(sinfos)))

    def bind(self, binding: VarBinding) -> None:
        value = binding.value
        if isinstance(value, Function):
            if "Composite" not in value.attrs:
                raise self.fail("a local function without a Composite attribute")
            self.local_funcs[binding.var] = value
            return
        if isinstance(value, Call) and isinstance(value.op, Var) and value.op in self.local_funcs:
            self.env[binding.var] = self.composite_call(value)
            return
        if isinstance(value, (Var, Tuple)):
            self.env[binding.var] = self.ref_of(value)
            return
        if isinstance(value, TupleGetItem):
            base = self.ref_of(value.tuple_value)
            if isinstance(base, tuple):
                self.env[binding.var] = base[value.index]
                return
        raise self.fail(f"unsupported binding {binding.var.name_hint} ({type(value).__name__}) in the "
                        "offloaded function")

    def outputs(self, func: Function) -> tuple[tuple, tuple]:
        """The returned values and their struct info, checked against the function's return type."""
        result = self.ref_of(func.body.body)
        outputs = result if isinstance(result, tuple) else (result,)
        if any(not isinstance(r, ValueRef) for r in outputs):
            raise self.fail("nested tuple outputs are not supported")
        ret = func.ret_struct_info
        fields = getattr(ret, "fields", None) if not isinstance(ret, TensorStructInfo) else None
        sinfos = list(fields) if fields is not None else [ret]
        if len(sinfos) != len(outputs):
            raise self.fail("return type does not match the returned values")
        return tuple(outputs), tuple(_tensor_sinfo(s, f"output {i}", self.symbol) for i, s in enumerate(sinfos))


def offloaded_program(symbol: str, func: Function, constant_names: dict | None = None) -> OffloadedProgram:
    """The :class:`OffloadedProgram` of the ``Codegen`` function ``func``."""
    backend = str(func.attrs.get("Codegen"))
    params = tuple(func.params)
    for i, p in enumerate(params):
        if isinstance(p.struct_info, TupleStructInfo):
            raise CodegenError(f"{symbol}: parameter {i} ({p.name_hint}) is a tuple; the generated functions take "
                               "tensors only (a tuple the pattern matches through a bound variable becomes a "
                               "parameter: build it in the same expression as its use)")
        _tensor_sinfo(p.struct_info, f"parameter {i} ({p.name_hint})", symbol)
    reader = _Reader(symbol, backend, params, constant_names or {})
    for binding in _bindings(func.body):
        reader.bind(binding)
    outputs, out_sinfo = reader.outputs(func)
    return OffloadedProgram(symbol, backend, func, params, tuple(reader.calls), tuple(reader.temps),
                            outputs, out_sinfo, tuple(reader.constants))


# --------------------------------------------------------------------------- GEMM family
@dataclass(frozen=True)
class GemmStep:
    """``out = post(bin(act(lhs @ rhs' + bias), residual))`` with ``rhs' = rhs`` or
    ``permute_dims(rhs, axes)`` (``transposed``). Operands are composite-parameter indices
    (:class:`int`) or :class:`Constant` nodes; :func:`resolve` maps them to ValueRefs."""

    lhs: Any
    rhs: Any
    transposed: bool
    perm_axes: tuple | None  # None = reverse all axes (permute_dims default)
    bias: Any
    act: str | None
    residual_op: str | None  # "add" | "multiply"
    residual: Any
    post: str | None  # "relu"
    lhs_sinfo: TensorStructInfo
    rhs_sinfo: TensorStructInfo  # before the permute
    out_sinfo: TensorStructInfo
    bias_sinfo: TensorStructInfo | None
    residual_sinfo: TensorStructInfo | None
    matmul_out_dtype: str

    @property
    def last_two_swapped(self) -> bool:
        """The permute (if any) is a swap of the last two axes (CUTLASS's TN case)."""
        nd = self.rhs_sinfo.ndim
        axes = self.perm_axes if self.perm_axes is not None else tuple(reversed(range(nd)))
        want = tuple(range(nd - 2)) + (nd - 1, nd - 2)
        return tuple(int(a) % nd for a in axes) == want

    def describe(self) -> str:
        return describe_chain("matmul" + ("(x, permute_dims(w))" if self.transposed else "(x, w)"), self)


def describe_chain(root: str, step) -> str:
    """A GEMM or conv step's epilogue chain as one line: ``root -> + bias -> relu -> ...``
    (``step``: anything with ``bias``, ``act``, ``residual_op`` and ``post``)."""
    parts = [root]
    if step.bias is not None:
        parts.append("+ bias")
    if step.act:
        parts.append(step.act)
    if step.residual_op:
        parts.append(f"{step.residual_op} residual")
    if step.post:
        parts.append(step.post)
    return " -> ".join(parts)


def _operand(e, params: dict) -> Any:
    if isinstance(e, Var) and e in params:
        return params[e]
    if isinstance(e, Constant):
        return e
    return None



def composite_operand(e, params: dict) -> Any:
    """A composite-parameter index (``params``: Var -> index) or a Constant, else None."""
    return _operand(e, params)


def composite_bindings(comp: Function) -> list[tuple[Var, Call]] | None:
    """The bindings of a composite body, each an operator call, the last one returned; None
    when the body is not of that form."""
    binds: list[tuple[Var, Call]] = []
    for binding in _bindings(comp.body):
        if not isinstance(binding.value, Call) or not isinstance(binding.value.op, Op):
            return None
        binds.append((binding.var, binding.value))
    if not binds or comp.body.body is not binds[-1][0]:
        return None
    return binds


def epilogue_chain(binds, prev: Var, params: dict) -> tuple | None:
    """``(bias, act, residual_op, residual, post)`` of the bindings after the root op (whose
    result is ``prev``): ``[add bias] -> [relu|gelu|silu] -> [add|multiply residual] ->
    [relu]``, each stage the sole use of the previous one; None when they are not of that
    form. Operands are composite-parameter indices or Constants."""
    bias = act = residual_op = residual = post = None
    stage = 0  # 0: after the root, 1: after bias, 2: after act, 3: after residual, 4: done
    for var, call in binds:
        name = call.op.name
        if name in ("relax.add", "relax.multiply") and len(call.args) == 2:
            a, b = call.args
            if a is prev and b is not prev:
                other = b
            elif b is prev and a is not prev:
                other = a
            else:
                return None
            operand = _operand(other, params)
            if operand is None:
                return None
            if name == "relax.add" and stage == 0:
                bias, stage = operand, 1
            elif stage <= 2:
                residual_op = "add" if name == "relax.add" else "multiply"
                residual, stage = operand, 3
            else:
                return None
        elif name in ACTIVATIONS and len(call.args) == 1 and call.args[0] is prev:
            if stage <= 1:
                act, stage = ACTIVATIONS[name], 2
            elif stage == 3 and name == "relax.nn.relu":
                post, stage = "relu", 4
            else:
                return None
        else:
            return None
        prev = var
    return bias, act, residual_op, residual, post

def gemm_step(comp: Function) -> GemmStep | None:
    """The GEMM reading of a composite, or None when its body is not of that form."""
    params = {p: i for i, p in enumerate(comp.params)}
    binds = composite_bindings(comp)
    if binds is None:
        return None
    i = 0
    transposed, perm_axes, rhs_expr = False, None, None
    permuted: Var | None = None
    if binds[0][1].op.name == "relax.permute_dims":
        permuted = binds[0][0]
        rhs_expr = binds[0][1].args[0]
        perm_axes = binds[0][1].attrs.get("axes") if binds[0][1].attrs is not None else None
        transposed = True
        i = 1
    if i >= len(binds) or binds[i][1].op.name != "relax.matmul":
        return None
    mm_var, mm = binds[i]
    lhs_e, rhs_e = mm.args
    if transposed:
        if rhs_e is not permuted:
            return None
    else:
        rhs_expr = rhs_e
    lhs = _operand(lhs_e, params)
    rhs = _operand(rhs_expr, params)
    if lhs is None or rhs is None:
        return None
    chain = epilogue_chain(binds[i + 1:], mm_var, params)
    if chain is None:
        return None
    bias, act, residual_op, residual, post = chain
    def sinfo(e):
        return e.struct_info if isinstance(e, Constant) else comp.params[e].struct_info
    return GemmStep(
        lhs=lhs, rhs=rhs, transposed=transposed, perm_axes=None if perm_axes is None else tuple(perm_axes),
        bias=bias, act=act, residual_op=residual_op, residual=residual, post=post,
        lhs_sinfo=sinfo(lhs), rhs_sinfo=sinfo(rhs), out_sinfo=comp.body.body.struct_info,
        bias_sinfo=None if bias is None else sinfo(bias),
        residual_sinfo=None if residual is None else sinfo(residual),
        matmul_out_dtype=mm.struct_info.dtype,
    )


def resolve(call: CompositeCall, operand) -> ValueRef:
    """The program-level reference of a GemmStep operand of ``call``."""
    if isinstance(operand, int):
        return call.args[operand]
    for const, ref in call.constants:
        if const is operand:
            return ref
    raise CodegenError(f"composite {call.composite}: operand not found")


# --------------------------------------------------------------------------- dims
def symbolic_positions(tensors) -> dict[str, list[tuple[int, int]]]:
    """For every symbolic variable appearing as a whole dim: its (tensor index, axis)
    positions, in order. ``tensors`` are TensorStructInfo (args then outputs)."""
    out: dict[str, list[tuple[int, int]]] = {}
    for t, sinfo in enumerate(tensors):
        for axis, dim in enumerate(sinfo.shape):
            if isinstance(dim, TirVar):
                out.setdefault(dim.name, []).append((t, axis))
    return out


def static_numel(dims) -> int | None:
    """The product of ``dims`` when every one is static, else None."""
    total = 1
    for d in dims:
        if not isinstance(d, int):
            return None
        total *= d
    return total


__all__ = [
    "ACTIVATIONS", "CompositeCall", "GemmStep", "OffloadedProgram", "ValueRef", "composite_bindings",
    "composite_operand", "epilogue_chain", "gemm_step",
    "static_numel", "offloaded_program", "resolve", "symbolic_positions",
]
