"""Generate transformer-like Relax modules (TVM-printed text) of a given number of bindings.

Each layer: matmul+bias+gelu MLP pieces, layer_norm, a residual add, a transposed matmul,
softmax - the ops the cutlass table looks for, float16, static shapes.
"""

from __future__ import annotations

T = 'R.Tensor((32, 64), dtype="float16")'
W = 'R.Tensor((64, 64), dtype="float16")'
V = 'R.Tensor((64,), dtype="float16")'


def make_module_text(n_bindings: int) -> str:
    lines = [
        "# from tvm.script import ir as I",
        "# from tvm.script import relax as R",
        "",
        "@I.ir_module",
        "class Module:",
        "    @R.function",
        f"    def main(x: {T}, w: {W}, b: {V}, g: {V}) -> {T}:",
        "        with R.dataflow():",
    ]
    cur = "x"
    i = 0
    body = []

    def emit(value: str, ty: str = T) -> str:
        nonlocal i
        name = f"lv{i}"
        i += 1
        body.append(f"            {name}: {ty} = {value}")
        return name

    while i < n_bindings - 1:
        layer_in = cur
        mm = emit(f"R.matmul({cur}, w, out_dtype=None)")
        bias = emit(f"R.add({mm}, b)")
        act = emit(f"R.nn.gelu({bias})")
        wt = emit("R.permute_dims(w, axes=None)", W)
        mm2 = emit(f"R.matmul({act}, {wt}, out_dtype=None)")
        res = emit(f"R.add({mm2}, {layer_in})")
        sm = emit(f"R.nn.softmax({res}, axis=-1)")
        cur = emit(f"R.nn.layer_norm({sm}, g, b, axes=[-1], epsilon=1.0000000000000001e-05, center=True, scale=True)")
    lines += body
    lines.append(f"            gv: {T} = R.nn.relu({cur})")
    lines.append("            R.output(gv)")
    lines.append("        return gv")
    return "\n".join(lines) + "\n"


def count_bindings(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.startswith("            ") and " = " in line)


if __name__ == "__main__":
    import sys

    sys.stdout.write(make_module_text(int(sys.argv[1]) if len(sys.argv) > 1 else 100))
