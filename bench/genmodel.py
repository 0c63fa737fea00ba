"""Generate Relax modules (TVM-printed text) of a given number of bindings, for the scaling
benchmarks. Three generators (``GENERATORS``), float16, static shapes, one dataflow block:

* ``mlp``: the original transformer-like chain: matmul+bias+gelu, a transposed matmul, a
  residual add of the layer input, softmax, layer_norm. No match carries a residual.
* ``transformer``: a deep pre-LN residual transformer (the layer of
  ``samples/transformer_block_fp16.relax`` repeated): attention (q/k/v matmuls, a transposed
  matmul, scale, softmax), an output projection with bias and residual add, an MLP with
  bias+gelu and a second residual add. Every layer has two ``*_residual_add`` matches whose
  residual is bound long before the root, plus one whose residual (a relu of the layer input)
  is bound *between* the root and the add, so the residual check's dependency search really
  runs.
* ``cnn``: a deep ResNet of NHWC/OHWI basic blocks: conv2d+bias+relu, conv2d+bias, residual
  add of the block input, relu (``conv2d_bias_residual_add_relu``), every fourth block with a
  1x1 projection on the skip path.
"""

from __future__ import annotations

from collections.abc import Callable

_HEADER = [
    "# from tvm.script import ir as I",
    "# from tvm.script import relax as R",
    "",
    "@I.ir_module",
    "class Module:",
    "    @R.function",
]
_LN = "axes=[-1], epsilon=1.0000000000000001e-05, center=True, scale=True"


def _tensor(shape: tuple) -> str:
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    return f'R.Tensor(({dims}), dtype="float16")'


class _Body:
    """Emits ``lv<i>`` bindings; ``full`` says when the next layer would not fit."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __len__(self) -> int:
        return len(self.lines)

    def emit(self, value: str, ty: str) -> str:
        name = f"lv{len(self.lines)}"
        self.lines.append(f"            {name}: {ty} = {value}")
        return name


def _module(params: list[tuple[str, str]], ret: str, body: _Body, last: str) -> str:
    sig = ", ".join(f"{n}: {t}" for n, t in params)
    lines = _HEADER + [f"    def main({sig}) -> {ret}:", "        with R.dataflow():"]
    lines += body.lines
    lines.append(f"            gv: {ret} = R.nn.relu({last})")
    lines.append("            R.output(gv)")
    lines.append("        return gv")
    return "\n".join(lines) + "\n"


def make_mlp_text(n_bindings: int) -> str:
    t, w, v = _tensor((32, 64)), _tensor((64, 64)), _tensor((64,))
    body = _Body()
    cur = "x"
    while len(body) < n_bindings - 1:
        layer_in = cur
        mm = body.emit(f"R.matmul({cur}, w, out_dtype=None)", t)
        bias = body.emit(f"R.add({mm}, b)", t)
        act = body.emit(f"R.nn.gelu({bias})", t)
        wt = body.emit("R.permute_dims(w, axes=None)", w)
        mm2 = body.emit(f"R.matmul({act}, {wt}, out_dtype=None)", t)
        res = body.emit(f"R.add({mm2}, {layer_in})", t)
        sm = body.emit(f"R.nn.softmax({res}, axis=-1)", t)
        cur = body.emit(f"R.nn.layer_norm({sm}, g, b, {_LN})", t)
    return _module([("x", t), ("w", w), ("b", v), ("g", v)], t, body, cur)


def make_transformer_text(n_bindings: int) -> str:
    t, s, w, w1, w2 = (_tensor(x) for x in ((16, 64), (16, 16), (64, 64), (64, 256), (256, 64)))
    v, v1, t1 = _tensor((64,)), _tensor((256,)), _tensor((16, 256))
    params = [("x", t), ("g", v), ("b", v), ("wq", w), ("wk", w), ("wv", w), ("wo", w),
              ("bo", v), ("w1", w1), ("bw1", v1), ("w2", w2), ("bw2", v)]
    body = _Body()
    cur = "x"
    while len(body) < n_bindings - 1:
        e = body.emit
        ln1 = e(f"R.nn.layer_norm({cur}, g, b, {_LN})", t)
        q = e(f"R.matmul({ln1}, wq, out_dtype=None)", t)
        k = e(f"R.matmul({ln1}, wk, out_dtype=None)", t)
        val = e(f"R.matmul({ln1}, wv, out_dtype=None)", t)
        kt = e(f"R.permute_dims({k}, axes=None)", _tensor((64, 16)))
        sc = e(f"R.matmul({q}, {kt}, out_dtype=None)", s)
        ss = e(f'R.multiply({sc}, R.const(0.125, "float16"))', s)
        p = e(f"R.nn.softmax({ss}, axis=-1)", s)
        a = e(f"R.matmul({p}, {val}, out_dtype=None)", t)
        o = e(f"R.matmul({a}, wo, out_dtype=None)", t)
        ob = e(f"R.add({o}, bo)", t)
        h = e(f"R.add({ob}, {cur})", t)                      # residual bound long before
        ln2 = e(f"R.nn.layer_norm({h}, g, b, {_LN})", t)
        f1 = e(f"R.matmul({ln2}, w1, out_dtype=None)", t1)
        f1b = e(f"R.add({f1}, bw1)", t1)
        f1a = e(f"R.nn.gelu({f1b})", t1)
        f2 = e(f"R.matmul({f1a}, w2, out_dtype=None)", t)
        f2b = e(f"R.add({f2}, bw2)", t)
        y = e(f"R.add({f2b}, {h})", t)                       # residual bound long before
        o2 = e(f"R.matmul({y}, wo, out_dtype=None)", t)
        o2b = e(f"R.add({o2}, bo)", t)
        skip = e(f"R.nn.relu({y})", t)                       # residual bound after the root
        cur = e(f"R.add({o2b}, {skip})", t)
    return _module(params, t, body, cur)


def make_cnn_text(n_bindings: int) -> str:
    act, wt, bt, wp = (_tensor(x) for x in ((1, 8, 8, 16), (16, 3, 3, 16), (1, 1, 1, 16), (16, 1, 1, 16)))
    conv = ('strides=[1, 1], padding=[{p}, {p}, {p}, {p}], dilation=[1, 1], groups=1, '
            'data_layout="NHWC", kernel_layout="OHWI", out_layout="NHWC", out_dtype=None')
    body = _Body()
    cur = "x"
    block = 0
    while len(body) < n_bindings - 1:
        e = body.emit
        c1 = e(f"R.nn.conv2d({cur}, w, {conv.format(p=1)})", act)
        b1 = e(f"R.add({c1}, b)", act)
        r1 = e(f"R.nn.relu({b1})", act)
        skip = cur
        if block % 4 == 3:
            skip = e(f"R.nn.conv2d({cur}, wp, {conv.format(p=0)})", act)
        c2 = e(f"R.nn.conv2d({r1}, w, {conv.format(p=1)})", act)
        b2 = e(f"R.add({c2}, b)", act)
        s = e(f"R.add({b2}, {skip})", act)
        cur = e(f"R.nn.relu({s})", act)
        block += 1
    return _module([("x", act), ("w", wt), ("b", bt), ("wp", wp)], act, body, cur)


GENERATORS: dict[str, Callable[[int], str]] = {
    "mlp": make_mlp_text,
    "transformer": make_transformer_text,
    "cnn": make_cnn_text,
}


def make_module_text(n_bindings: int, kind: str = "mlp") -> str:
    """A module of about ``n_bindings`` bindings from generator ``kind``."""
    return GENERATORS[kind](n_bindings)


def count_bindings(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.startswith("            ") and " = " in line)


if __name__ == "__main__":
    import sys

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    sys.stdout.write(make_module_text(n, sys.argv[2] if len(sys.argv) > 2 else "mlp"))
