"""The light wrapper translation unit of one offloaded function (``src/funcs/<symbol>.cu``),
shared by every backend (spec/backends.md sections 6.1-6.4).

It holds no kernel templates: it checks every argument (count, device, dtype, rank, static
and symbolic dims, compact strides, bound constants, scratch size), lays out the scratch
buffer (one region per temporary of a merged function, then one region shared by the steps'
own needs), and runs the backend's code for each composite call in order. The backend gives
the per-call code and scratch expression through :class:`Wrapper`'s callbacks; this module
gives them C expressions for dims, pointers and shapes (:class:`WrapperContext`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field

from byocc.ir.prim import PrimBinary
from byocc.ir.prim import PrimMinMax
from byocc.ir.prim import TirVar
from byocc.ir.prim import dim_text

from ..codegen import CodegenError
from ..program import CompositeCall
from ..program import OffloadedProgram
from ..program import ValueRef
from .cxx import c_comment
from .cxx import c_identifier
from .cxx import c_string

#: dtype -> (DLPack code, bits, C++ storage type)
DTYPES = {
    "float16": (2, 16, "__half"),
    "bfloat16": (4, 16, "__nv_bfloat16"),
    "float32": (2, 32, "float"),
    "float64": (2, 64, "double"),
    "int8": (0, 8, "int8_t"),
    "uint8": (1, 8, "uint8_t"),
    "int16": (0, 16, "int16_t"),
    "int32": (0, 32, "int32_t"),
    "int64": (0, 64, "int64_t"),
    "bool": (6, 8, "bool"),
}


def dtype_info(dtype: str, where: str) -> tuple[int, int, str]:
    if dtype not in DTYPES:
        raise CodegenError(f"{where}: dtype {dtype} is not supported by the generated code")
    return DTYPES[dtype]


def itemsize(dtype: str) -> int:
    return DTYPES[dtype][1] // 8


def shape_text(sinfo) -> str:
    return "(" + ", ".join(dim_text(d) for d in sinfo.shape) + ")"


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


@dataclass
class Wrapper:
    """The pieces a backend contributes to one wrapper TU."""

    program: OffloadedProgram
    header_lines: list  # comment lines (already safe text; passed through c_comment)
    includes: list  # extra #include lines
    prelude: str  # declarations after the includes (kernel prototypes, helpers)
    step_code: Callable[[int, CompositeCall, WrapperContext], str]
    step_scratch: Callable[[int, CompositeCall, WrapperContext], str]  # C uint64 expr
    compute_capabilities: tuple[int, ...] = (8, 9)
    """Compute-capability majors the backend has kernels for (spec 6.5: 9.x takes the sm_90a
    variants where their run-time checks pass, 8.x the sm_80 ones); on any other device the
    function returns BYOCC_E_ARCH before its first step."""


def emit_wrapper(w: Wrapper) -> str:
    p = w.program
    sym = c_identifier(p.symbol, "global symbol")
    tensors = [(v.name_hint, v.struct_info) for v in p.params] + [
        (f"output{i}", s) for i, s in enumerate(p.output_sinfo)]
    sym_names: list[str] = []
    for _, sinfo in tensors:
        for d in sinfo.shape:
            if isinstance(d, TirVar) and d.name not in sym_names:
                sym_names.append(d.name)
    ctx = WrapperContext(p, {n: i for i, n in enumerate(sym_names)})
    lines: list[str] = []
    out = lines.append
    out(f"// {c_comment(p.symbol)}.cu: generated by byocc for backend {c_comment(p.backend)}.")
    out("//")
    for line in w.header_lines:
        out(f"// {c_comment(line)}")
    out("//")
    out("// Arguments (DLTensor*, in order; the output(s) last):")
    for i, (name, sinfo) in enumerate(tensors):
        out(f"//   [{i}] {c_comment(name)}: {c_comment(sinfo.dtype)} {c_comment(shape_text(sinfo))}")
    for name, const in p.constants:
        out(f"//   constant {c_comment(name)}: {c_comment(const.struct_info.dtype)} "
            f"{c_comment(shape_text(const.struct_info))} (bind with byocc_set_constant)")
    out("#include <stdint.h>")
    out("")
    out('#include "byocc_internal.h"')
    for inc in w.includes:
        out(inc)
    out("")
    if w.prelude:
        out(w.prelude.rstrip("\n"))
        out("")
    out("namespace {")
    out("")
    out("[[maybe_unused]] inline int64_t byocc_floordiv(int64_t a, int64_t b) { int64_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }")
    out("[[maybe_unused]] inline int64_t byocc_floormod(int64_t a, int64_t b) { return a - byocc_floordiv(a, b) * b; }")
    out("")
    out("// Symbolic dims of this function, bound from the arguments' shapes.")
    out("struct Dims {")
    if not sym_names:
        out("  int unused;")
    for i, n in enumerate(sym_names):
        out(f"  int64_t s{i};  // {c_comment(n)}")
    out("};")
    out("")
    out(f"constexpr int32_t kNumArgs = {len(tensors)};")
    out("")
    # ---- argument checks
    out("// Checks every argument; binds the symbolic dims into *dp.")
    out("int check_args(const DLTensor* const* args, int32_t num_args, Dims* dp, int* device) {")
    out("  Dims& d = *dp;")
    out("  (void)d;")
    for i in range(len(sym_names)):
        out(f"  d.s{i} = -1;")
    out("  if (args == nullptr || num_args != kNumArgs) {")
    out(f'    return byocc::fail(BYOCC_E_NARGS, "{c_string(p.symbol)[1:-1]}: expected %d arguments '
        f'({len(p.params)} inputs, {len(p.output_sinfo)} output), got %d", kNumArgs, static_cast<int>(num_args));')
    out("  }")
    out("  if (args[0] == nullptr) return byocc::fail(BYOCC_E_NARGS, \"argument 0 is NULL\");")
    out("  *device = args[0]->device.device_id;")
    out("  int rc = BYOCC_OK;")
    for i, (name, sinfo) in enumerate(tensors):
        code, bits, _ = dtype_info(sinfo.dtype, f"{p.symbol} argument {i}")
        cname = c_string(name)
        out(f"  rc = byocc::check_tensor(args[{i}], {i}, {cname}, *device, {code}, {bits}, {len(sinfo.shape)});")
        out("  if (rc != BYOCC_OK) return rc;")
        for axis, dim in enumerate(sinfo.shape):
            if isinstance(dim, int):
                out(f"  rc = byocc::check_dim(args[{i}], {i}, {cname}, {axis}, {dim});")
                out("  if (rc != BYOCC_OK) return rc;")
            elif isinstance(dim, TirVar):
                k = ctx.sym_index[dim.name]
                out(f"  rc = byocc::bind_dim(args[{i}], {i}, {cname}, {axis}, {c_string(dim.name)}, &d.s{k});")
                out("  if (rc != BYOCC_OK) return rc;")
    for i, (name, sinfo) in enumerate(tensors):
        for axis, dim in enumerate(sinfo.shape):
            if not isinstance(dim, (int, TirVar)):
                out(f"  rc = byocc::check_dim(args[{i}], {i}, {c_string(name)}, {axis}, {ctx.dim(dim)});")
                out("  if (rc != BYOCC_OK) return rc;")
    out("  return BYOCC_OK;")
    out("}")
    out("")
    # ---- scratch layout
    out("// Scratch layout: the temporaries of a merged function, then the steps' shared region.")
    out("struct Offsets {")
    temps = [c.result for c in p.calls if not ctx.is_output(ValueRef("temp", c.result))]
    for t in temps:
        out(f"  uint64_t temp{t};")
    out("  uint64_t step;")
    out("  uint64_t total;")
    out("};")
    out("")
    out("Offsets scratch_layout(const Dims& d) {")
    out("  (void)d;")
    out("  Offsets off{};")
    out("  uint64_t at = 0;")
    for t in temps:
        sinfo = p.temps[t]
        size = itemsize(sinfo.dtype)
        out(f"  off.temp{t} = at;  // {c_comment(sinfo.dtype)} {c_comment(shape_text(sinfo))}")
        out(f"  at += byocc::round_up(uint64_t({ctx.numel(sinfo.shape)}) * {size}u);")
    out("  off.step = at;")
    out("  uint64_t step = 0;")
    for i, call in enumerate(p.calls):
        expr = w.step_scratch(i, call, ctx)
        if expr and expr != "0":
            out(f"  {{ uint64_t need = {expr}; if (need > step) step = need; }}  // step {i}: {c_comment(call.composite)}")
    out("  off.total = at + step;")
    out("  return off;")
    out("}")
    out("")
    out("}  // namespace")
    out("")
    out(f"BYOCC_EXPORT uint64_t byocc_scratch_bytes_{sym}(const DLTensor* const* args, int32_t num_args) {{")
    out("  byocc::clear_error();")
    out("  Dims d;")
    out("  int device = 0;")
    out("  if (check_args(args, num_args, &d, &device) != BYOCC_OK) return 0;")
    out("  return scratch_layout(d).total;")
    out("}")
    out("")
    out(f"BYOCC_EXPORT int32_t {sym}(const DLTensor* const* args, int32_t num_args, void* scratch,")
    out("                            uint64_t scratch_bytes, cudaStream_t stream) {")
    out("  byocc::clear_error();")
    out("  try {")
    out("    Dims d;")
    out("    int device = 0;")
    out("    int rc = check_args(args, num_args, &d, &device);")
    out("    if (rc != BYOCC_OK) return rc;")
    out("    const Offsets off = scratch_layout(d);")
    out("    if (off.total > 0 && (scratch == nullptr || scratch_bytes < off.total)) {")
    out('      return byocc::fail(BYOCC_E_SCRATCH, "scratch of %llu bytes given, %llu needed",')
    out("                         static_cast<unsigned long long>(scratch == nullptr ? 0 : scratch_bytes),")
    out("                         static_cast<unsigned long long>(off.total));")
    out("    }")
    out("    if (off.total > 0 && !byocc::aligned_to(scratch, 256)) {")
    out('      return byocc::fail(BYOCC_E_SCRATCH, "scratch must be 256-byte aligned");')
    out("    }")
    out("    byocc::DeviceInfo dev;")
    out("    rc = byocc::device_info(device, &dev);")
    out("    if (rc != BYOCC_OK) return rc;")
    majors = w.compute_capabilities
    out(f"    if ({' && '.join(f'dev.major != {m}' for m in majors)}) {{")
    out(f'      return byocc::fail(BYOCC_E_ARCH, "%s: no %s kernel for compute capability %d.%d '
        f'({" and ".join(f"{m}.x" for m in majors)} only)", {c_string(p.symbol)}, {c_string(p.backend)}, '
        "dev.major, dev.minor);")
    out("    }")
    bodies = [w.step_code(i, call, ctx).rstrip("\n") for i, call in enumerate(p.calls)]
    for k, (name, const) in enumerate(p.constants):
        if k not in ctx.used_constants:
            continue  # folded into the generated code as a literal
        code, bits, _ = dtype_info(const.struct_info.dtype, f"constant {name}")
        out(f"    const void* c{k} = byocc::constant({c_string(name)}, {code}, {bits}, "
            f"{ctx.numel(const.struct_info.shape)}, device);")
        out(f"    if (c{k} == nullptr) return BYOCC_E_CONSTANT;")
    out("    [[maybe_unused]] void* step_scratch = static_cast<char*>(scratch) + off.step;")
    out("    [[maybe_unused]] const uint64_t step_scratch_bytes = off.total - off.step;")
    out("    (void)stream;")
    for i, call in enumerate(p.calls):
        out(f"    // step {i}: {c_comment(call.composite)}")
        out("    {")
        body = bodies[i]
        for line in body.split("\n"):
            out(("      " + line) if line else "")
        out("    }")
    out("    return BYOCC_OK;")
    out("  } catch (...) {")
    out('    return byocc::fail(BYOCC_E_INTERNAL, "unexpected C++ exception");')
    out("  }")
    out("}")
    return "\n".join(lines) + "\n"


__all__ = ["DTYPES", "Wrapper", "WrapperContext", "dtype_info", "emit_wrapper", "itemsize", "shape_text"]
