"""The light wrapper translation unit of one offloaded function (``src/funcs/<symbol>.cu``),
shared by every backend, rendered from ``templates/wrapper.cu.j2``.

It holds no kernel templates: it checks every argument (count, device, dtype, rank, static
and symbolic dims, compact strides, bound constants, scratch size), lays out the scratch
buffer (:mod:`.scratch`), checks the device's compute capability, and runs each step's code
(:class:`~.step.Step`) in order. :class:`WrapperContext` gives the steps C expressions for
dims, pointers and shapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field

from byocc.ir.prim import PrimBinary
from byocc.ir.prim import PrimMinMax
from byocc.ir.prim import TirVar

from ..codegen import CodegenError
from ..dtypes import WRAPPER_DTYPES
from ..dtypes import DType
from ..dtypes import dtype
from ..program import OffloadedProgram
from ..program import ValueRef
from .cxx import c_identifier
from .scratch import ScratchLayout
from .step import Step
from .step import dims_text


def shape_text(sinfo) -> str:
    """The shape of a tensor's struct info as text: ``(n, 128)``."""
    return dims_text(sinfo.shape)


@dataclass
class WrapperContext:
    """C expressions for the program's values, valid inside a step's code."""

    program: OffloadedProgram
    sym_index: dict = field(default_factory=dict)  # symbolic var name -> index (d.s<i>)
    used_constants: set = field(default_factory=set)  # constant indices a step reads

    def dim(self, dim) -> str:
        """A C ``int64_t`` expression for an IR dim (symbolic vars read from ``d``)."""
        if isinstance(dim, bool):
            raise CodegenError("boolean dim")
        if isinstance(dim, int):
            return f"int64_t({dim})"
        if isinstance(dim, TirVar):
            if dim.name not in self.sym_index:
                raise CodegenError(f"{self.program.symbol}: symbolic dim {dim.name} is not determined "
                                   "by any argument's shape")
            return f"d.s{self.sym_index[dim.name]}"
        if isinstance(dim, PrimBinary):
            a, b = self.dim(dim.a), self.dim(dim.b)
            if dim.op == "//":
                return f"byocc_floordiv({a}, {b})"
            if dim.op == "%":
                return f"byocc_floormod({a}, {b})"
            return f"({a} {dim.op} {b})"
        if isinstance(dim, PrimMinMax):
            a, b = self.dim(dim.a), self.dim(dim.b)
            return f"({a} {'>' if dim.op == 'max' else '<'} {b} ? {a} : {b})"
        raise CodegenError(f"{self.program.symbol}: unsupported dim {dim!r}")

    def numel(self, shape) -> str:
        if not shape:
            return "int64_t(1)"
        return " * ".join(self.dim(d) for d in shape)

    def tensor_index(self, ref: ValueRef) -> int | None:
        """Index into ``args`` of a param or output (a temp that is an output included)."""
        p = self.program
        if ref.kind == "param":
            return ref.index
        if ref.kind == "output":
            return len(p.params) + ref.index
        if ref.kind == "temp" and ref in p.outputs:
            return len(p.params) + p.outputs.index(ref)
        return None

    def ptr(self, ref: ValueRef) -> str:
        """``void*`` expression of the value's device memory."""
        idx = self.tensor_index(ref)
        if idx is not None:
            return f"byocc::data_of(args[{idx}])"
        if ref.kind == "temp":
            return f"static_cast<void*>(static_cast<char*>(scratch) + off.temp{ref.index})"
        if ref.kind == "const":
            self.used_constants.add(ref.index)
            return f"const_cast<void*>(c{ref.index})"
        raise CodegenError(f"unknown value {ref}")

    def sinfo(self, ref: ValueRef):
        return self.program.sinfo_of(ref)

    def is_output(self, ref: ValueRef) -> bool:
        return ref.kind == "output" or (ref.kind == "temp" and ref in self.program.outputs)


def wrapper_context(program: OffloadedProgram) -> WrapperContext:
    """The context of ``program``'s wrapper: its symbolic dims numbered in order of first
    appearance in the arguments' shapes (``d.s0``, ``d.s1``, ...)."""
    names: list[str] = []
    for sinfo in _tensor_sinfos(program):
        for d in sinfo.shape:
            if isinstance(d, TirVar) and d.name not in names:
                names.append(d.name)
    return WrapperContext(program, {n: i for i, n in enumerate(names)})


def _tensor_sinfos(program: OffloadedProgram) -> list:
    return [v.struct_info for v in program.params] + list(program.output_sinfo)


def _wrapper_dtype(name: str, where: str) -> DType:
    if name not in WRAPPER_DTYPES:
        raise CodegenError(f"{where}: dtype {name} is not supported by the generated code")
    return dtype(name)


@dataclass(frozen=True)
class _TensorArg:
    """One DLTensor argument as the template checks it."""

    name: str
    dtype: str
    shape_text: str
    dlpack_code: int
    bits: int
    rank: int
    bound_dims: tuple  # {axis, var, value}: a static dim (var None, value the size) or a variable
    # (value: its index in Dims), checked or bound directly, in axis order
    expr_dims: tuple  # {axis, value}: a dim that is an expression of the variables (value: its C
    # expression), checked once every variable is bound


def _tensor_args(program: OffloadedProgram, ctx: WrapperContext) -> list[_TensorArg]:
    named = [(v.name_hint, v.struct_info) for v in program.params] + [
        (f"output{i}", s) for i, s in enumerate(program.output_sinfo)]
    out = []
    for i, (name, sinfo) in enumerate(named):
        dt = _wrapper_dtype(sinfo.dtype, f"{program.symbol} argument {i}")
        bound, derived = [], []
        for axis, d in enumerate(sinfo.shape):
            if isinstance(d, int):
                bound.append({"axis": axis, "var": None, "value": d})
            elif isinstance(d, TirVar):
                bound.append({"axis": axis, "var": d.name, "value": ctx.sym_index[d.name]})
        for axis, d in enumerate(sinfo.shape):
            if not isinstance(d, (int, TirVar)):
                derived.append({"axis": axis, "value": ctx.dim(d)})
        out.append(_TensorArg(name, sinfo.dtype, shape_text(sinfo), dt.dlpack_code, dt.bits,
                              len(sinfo.shape), tuple(bound), tuple(derived)))
    return out


def _constants(program: OffloadedProgram, ctx: WrapperContext) -> list[dict]:
    """Every bound constant (named in the header); the ones a step reads are fetched."""
    out = []
    for k, (name, const) in enumerate(program.constants):
        sinfo = const.struct_info
        item = {"index": k, "name": name, "dtype": sinfo.dtype, "shape_text": shape_text(sinfo),
                "used": k in ctx.used_constants}
        if item["used"]:  # the others are folded into the generated code as literals
            dt = _wrapper_dtype(sinfo.dtype, f"constant {name}")
            item.update(dlpack_code=dt.dlpack_code, bits=dt.bits, numel=ctx.numel(sinfo.shape))
        out.append(item)
    return out


def emit_wrapper(ctx: WrapperContext, steps: Sequence[Step], layout: ScratchLayout, *, header: Sequence[str],
                 includes: Sequence[str], compute_capabilities: Sequence[int]) -> str:
    """The wrapper TU of ``ctx.program`` running ``steps`` (already rendered with ``ctx``) over
    the scratch ``layout``. ``header``: comment lines; ``includes``: ``#include`` lines after
    byocc's own; ``compute_capabilities``: the majors the backend has kernels for (any other
    device gets BYOCC_E_ARCH before the first step)."""
    from .templates import render

    p = ctx.program
    return render(
        "cuda/wrapper.cu.j2",
        symbol=c_identifier(p.symbol, "global symbol"), backend=p.backend, header=list(header),
        tensors=_tensor_args(p, ctx), constants=_constants(p, ctx),
        num_inputs=len(p.params), num_outputs=len(p.output_sinfo),
        dims=sorted(ctx.sym_index, key=ctx.sym_index.get),
        includes=list(includes),
        declarations=list(dict.fromkeys(d for s in steps for d in s.declarations)),
        layout=layout,
        majors=list(compute_capabilities), steps=steps)


__all__ = ["WrapperContext", "emit_wrapper", "shape_text", "wrapper_context"]
