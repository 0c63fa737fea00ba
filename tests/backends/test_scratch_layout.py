"""The scratch layout of a merged function is computed once, in Python, and both the manifest
(``scratch_bytes`` / ``scratch_expr``) and the wrapper's C++ ``scratch_layout()`` come from it.

Two chained matmuls (the first one's result is a temporary in scratch), fp32 so that the
CUTLASS steps transpose B into their own scratch region, with static and symbolic dims. The
C++ ``scratch_layout()`` of the generated wrapper is evaluated here (its statements are plain
arithmetic) and compared with the Python layout and with the manifest's numbers/formula.
"""

from __future__ import annotations

import re

import pytest

from byocc.backends.cublas import codegen as cublas_codegen
from byocc.backends.cuda.function import generate_function
from byocc.backends.cuda.step import round_up
from byocc.backends.cutlass import codegen as cutlass_codegen
from byocc.backends.registry import get_patterns_with_prefix
from byocc.text import parse_module
from byocc.transform import partition

MODULE = '''# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(({M}, 64), dtype="float32"), w1: R.Tensor((64, {H}), dtype="float32"), w2: R.Tensor(({H}, 32), dtype="float32")) -> R.Tensor(({M}, 32), dtype="float32"):
        {vars}
        with R.dataflow():
            h: R.Tensor(({m}, {h}), dtype="float32") = R.matmul(x, w1, out_dtype="void")
            y: R.Tensor(({m}, 32), dtype="float32") = R.matmul(h, w2, out_dtype="void")
            R.output(y)
        return y
'''


def merged(backend: str, m, h):
    """The one merged function of the two matmuls (``m``/``h``: an int or a variable name)."""
    names = [d for d in (m, h) if isinstance(d, str)]
    text = MODULE.format(M=f'"{m}"' if m in names else m, H=f'"{h}"' if h in names else h, m=m, h=h,
                         vars="\n        ".join(f"{v} = T.int64()" for v in names) or "pass")
    part = partition(parse_module(text, "<test>"), get_patterns_with_prefix(backend), path="merge",
                     bind_constants=True)
    [(symbol, func)] = [(f.attrs.get("global_symbol", name), f) for name, f in part.items()
                        if "Codegen" in getattr(f, "attrs", {})]
    return symbol, func


def generated(backend: str, m, h):
    symbol, func = merged(backend, m, h)
    if backend == "cutlass":
        skeleton = cutlass_codegen.function_codegen({})
    else:
        skeleton = cublas_codegen.function_codegen(cublas_codegen.parse_options({}))
    return generate_function(skeleton, symbol, func)


WORKSPACE = 32 * 1024 * 1024  # byocc::kCublasLtWorkspaceBytes


def run_scratch_layout(text: str, dims: dict[int, int]) -> dict[str, int]:
    """Evaluate the wrapper's ``scratch_layout(d)`` with ``d.s<i> = dims[i]``: the offsets."""
    body = text.split("Offsets scratch_layout(const Dims& d) {\n", 1)[1].split("\n}\n", 1)[0]
    code = []
    for line in body.splitlines():
        line = line.split("//")[0].strip()
        need = re.fullmatch(r"\{ uint64_t need = (.*); if \(need > step\) step = need; \}", line)
        if need:
            code.append(f"step = max(step, {need[1]})")
        elif line and line not in ("(void)d;", "Offsets off{};", "return off;"):
            code.append(line.removeprefix("const ").removeprefix("uint64_t ").removesuffix(";"))
    src = "\n".join(code)
    src = src.replace("byocc::kCublasLtWorkspaceBytes", str(WORKSPACE)).replace("byocc::round_up", "round_up")
    src = re.sub(r"\bu?int64_t\(", "(", src)
    src = re.sub(r"(\d+)u\b", r"\1", src)
    src = re.sub(r"\bd\.s(\d+)", r"s\1", src)
    src = re.sub(r"\boff\.(\w+)", r"off_\1", src)
    env = {"round_up": round_up, **{f"s{i}": v for i, v in dims.items()}}
    exec(src, env)  # noqa: S102 - the generated arithmetic only
    return {k.removeprefix("off_"): v for k, v in env.items() if k.startswith("off_")}


def formula(text: str, **dims) -> int:
    """The value of a manifest ``scratch_expr`` / a Size's text for the given dims."""
    return eval(text, {"round_up": round_up, "max": max}, dims)  # noqa: S307


@pytest.mark.parametrize("backend", ["cutlass", "cublas"])
def test_static_layout_is_the_manifest_and_the_wrapper(backend):
    fn = generated(backend, 16, 128)
    layout, entry = fn.layout, fn.entry
    [temp] = layout.temps  # h, (16, 128) float32, at the start of the buffer
    assert (temp.offset.value, temp.size.value) == (0, round_up(16 * 128 * 4))
    need = [64 * 128 * 4, 128 * 32 * 4] if backend == "cutlass" else [WORKSPACE, WORKSPACE]
    assert [s.size.value for s in layout.steps] == need
    assert layout.scratch_bytes == entry.scratch_bytes == temp.size.value + max(need)
    assert entry.scratch_expr is None
    off = run_scratch_layout(fn.source.text, {})
    assert off == {f"temp{temp.temp}": 0, "step": layout.step_offset.value, "total": entry.scratch_bytes}


@pytest.mark.parametrize("backend", ["cutlass", "cublas"])
@pytest.mark.parametrize("n", [1, 37, 1000])
def test_symbolic_layout_is_the_manifest_and_the_wrapper(backend, n):
    fn = generated(backend, "n", 128)
    layout, entry = fn.layout, fn.entry
    assert entry.scratch_bytes is None and entry.scratch_expr == layout.scratch_expr
    step = "max(round_up(64 * 128 * 4), round_up(128 * 32 * 4))" if backend == "cutlass" else f"max({WORKSPACE}, {WORKSPACE})"
    assert entry.scratch_expr == f"round_up(n * 128 * 4) + {step}"
    [temp] = layout.temps
    off = run_scratch_layout(fn.source.text, {0: n})
    assert off[f"temp{temp.temp}"] == formula(temp.offset.text, n=n) == 0
    assert off["step"] == formula(layout.step_offset.text, n=n) == round_up(n * 128 * 4)
    assert off["total"] == formula(entry.scratch_expr, n=n)


def test_symbolic_step_need_is_evaluated_the_same_way():
    # N of the first GEMM is symbolic: its transposed B (64 x k) is a symbolic step region
    fn = generated("cutlass", "n", "k")
    layout, entry = fn.layout, fn.entry
    assert [s.size.value for s in layout.steps].count(None) >= 1
    assert entry.scratch_expr == layout.scratch_expr
    sym = {name: i for i, name in enumerate(["n", "k"])}
    for n, k in ((3, 5), (64, 200)):
        off = run_scratch_layout(fn.source.text, {sym["n"]: n, sym["k"]: k})
        assert off["total"] == formula(entry.scratch_expr, n=n, k=k)
        assert off["step"] == formula(layout.step_offset.text, n=n, k=k)


CHAIN = '''# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((64, 64), dtype="float16"), w: R.Tensor((64, 64), dtype="float16"), b: R.Tensor((64,), dtype="float16"), n: R.Tensor((64, {N}), dtype="float16")) -> R.Tensor((64, 64), dtype="float16"):
        with R.dataflow():
            a0: R.Tensor((64, 64), dtype="float16") = R.matmul(x, w, out_dtype="void")
            a1: R.Tensor((64, 64), dtype="float16") = R.matmul(a0, w, out_dtype="void")
            a2: R.Tensor((64, 64), dtype="float16") = R.matmul(a1, w, out_dtype="void")
            a3: R.Tensor((64, {N}), dtype="float16") = R.matmul(a2, n, out_dtype="void")
            a4: R.Tensor((64, 64), dtype="float16") = R.matmul(a3, R.permute_dims(n), out_dtype="void")
            y: R.Tensor((64, 64), dtype="float16") = R.add(R.matmul(a4, w, out_dtype="void"), a1)
            R.output(y)
        return y
'''


@pytest.mark.parametrize("backend", ["cutlass", "cublas"])
def test_temporaries_share_scratch_after_their_last_use(backend):
    """ResNet-50 at batch 32 merged into one function held every activation apart: 653 MB of
    scratch. A temporary's region is free after the last call that reads it; a call's output
    never overlaps its own inputs; a temporary read late (a residual) keeps its region."""
    text = CHAIN.format(N=128)
    part = partition(parse_module(text, "<test>"), get_patterns_with_prefix(backend), path="merge",
                     bind_constants=True)
    [(symbol, func)] = [(f.attrs.get("global_symbol", name), f) for name, f in part.items()
                        if "Codegen" in getattr(f, "attrs", {})]
    skeleton = (cutlass_codegen.function_codegen({}) if backend == "cutlass"
                else cublas_codegen.function_codegen(cublas_codegen.parse_options({})))
    fn = generate_function(skeleton, symbol, func)
    layout = fn.layout
    regions = {t.temp: (t.offset.value, t.offset.value + t.size.value) for t in layout.temps}
    assert len(regions) >= 4
    total = sum(b - a for a, b in regions.values())
    assert layout.step_offset.value == max(b for _, b in regions.values()) < total  # some region was reused
    off = run_scratch_layout(fn.source.text, {})
    assert {k: v for k, v in off.items() if k.startswith("temp")} == {f"temp{t}": a for t, (a, _) in regions.items()}
    assert off["step"] == layout.step_offset.value and off["total"] == fn.entry.scratch_bytes
    # no two temporaries alive at the same call overlap: recompute lifetimes from the program
    from byocc.backends.program import ValueRef
    from byocc.backends.program import offloaded_program

    program = offloaded_program(symbol, func).calls
    first, last = {}, {}
    for i, call in enumerate(program):
        for ref in call.args:
            if isinstance(ref, ValueRef) and ref.kind == "temp":
                last[ref.index] = i
        for r in call.results:
            first[r] = i
    for t, (a, b) in regions.items():
        for u, (c, e) in regions.items():
            if t < u and not (last.get(t, first[t]) < first[u] or last.get(u, first[u]) < first[t]):
                assert b <= c or e <= a, (t, u)


IN_PLACE = '''# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((64, 64), dtype="float16"), w: R.Tensor((64, 64), dtype="float16")) -> R.Tensor((64, 64), dtype="float16"):
        with R.dataflow():
            a0: R.Tensor((64, 64), dtype="float16") = R.matmul(x, w, out_dtype="void")
            a1: R.Tensor((64, 64), dtype="float16") = R.matmul(a0, w, out_dtype="void")
            a2: R.Tensor((64, 64), dtype="float16") = R.add(R.matmul(a1, w, out_dtype="void"), {addend})
            y: R.Tensor((64, 64), dtype="float16") = R.matmul(a2, {last}, out_dtype="void")
            R.output(y)
        return y
'''


@pytest.mark.parametrize("addend, last, in_place, regions", [
    ("a0", "w", True, 2),    # a2 = a1 @ w + a0, a0's last use: a2 is written over a0
    ("a0", "a0", False, 3),  # a0 is read again later: its region stays
    ("a1", "w", False, 2),   # a1 is also the call's lhs (the GEMM still reads it): a2 takes a0's free region
])
def test_a_full_addend_read_for_the_last_time_is_overwritten_in_place(addend, last, in_place, regions):
    """A GEMM (or conv) step whose full-shape residual or bias is a temporary at its last use
    writes its result over it: each output element is computed from the addend's element at
    the same index only, so no element is read after the call wrote it (a ResNet block need not
    hold its input and its output at once)."""
    part = partition(parse_module(IN_PLACE.format(addend=addend, last=last), "<test>"),
                     get_patterns_with_prefix("cutlass"), path="merge", bind_constants=True)
    [(symbol, func)] = [(f.attrs.get("global_symbol", name), f) for name, f in part.items()
                        if "Codegen" in getattr(f, "attrs", {})]
    fn = generate_function(cutlass_codegen.function_codegen({}), symbol, func)
    offsets = {t.temp: t.offset.value for t in fn.layout.temps}
    assert len(offsets) == 3 and all(t.size.value == 64 * 64 * 2 for t in fn.layout.temps)
    assert (offsets[2] == offsets[int(addend[1])]) == in_place
    assert offsets[1] != offsets[0] and offsets[2] != offsets[1]
    assert fn.layout.step_offset.value == regions * 64 * 64 * 2
    off = run_scratch_layout(fn.source.text, {})
    assert {k: v for k, v in off.items() if k.startswith("temp")} == {f"temp{t}": a for t, a in offsets.items()}
