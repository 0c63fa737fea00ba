"""Generate TVM 0.27 goldens for step 1 of ``partition_for_cutlass`` (the attention rewrites).

Runs ONLY under a Python that has apache-tvm 0.27 installed (never in the test suite):

    /tmp/tvmenv/bin/python tools/gen_attention_goldens.py [--out tests/data/attention_rewrite]

For every case below it writes, into the output folder:

- ``X.relax``          the input module as TVM parses and prints it (canonical text);
- ``X.rewrite.txt``    the module after the rewrites only: per Relax function, the multi-query
                       rewrite first (unless the case is ``_nomqa``), then the 16 attention
                       rewrites, each applied through ``tvm.relax.dpl.rewrite_call``;
- ``X.annotate.txt``   full ``partition_for_cutlass(mod, annotate_codegen=True)``;
- ``X.composite.txt``  full ``partition_for_cutlass(mod, annotate_codegen=False)``;

and, when TVM raises during a step, ``X.<step>.error.txt`` (one line,
``ExceptionType: first line of message``) instead of that step's output.
It also writes README.md (how the goldens were made, plus a per-case table).
The cases are hand-written templates with fixed parameters, so the output is deterministic.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DEFAULT_OUT = os.path.join(ROOT, "tests", "data", "attention_rewrite")

Dim = int | str


# ----------------------------------------------------------------------------------------------
# Module text builder
# ----------------------------------------------------------------------------------------------


def mul(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if a == 1:
        return b
    if b == 1:
        return a
    return f"{a} * {b}"


def tensor(shape: tuple[Dim, ...], dtype: str, quote: bool = True) -> str:
    """quote: symbolic names are written as strings (declaring them); otherwise they are bare
    names, declared at module level (needed when a shape holds an expression like b * 4)."""
    dims = ", ".join(f'"{d}"' if isinstance(d, str) and quote else str(d) for d in shape)
    if len(shape) == 1:
        dims += ","
    return f'R.Tensor(({dims}), dtype="{dtype}")'


def shape_expr(shape: tuple[Dim, ...]) -> str:
    return "R.shape([" + ", ".join(str(d) for d in shape) + "])"


def axes(perm: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(a) for a in perm) + "]"


class Body:
    """Collects binding lines of one block; hands out fresh variable names."""

    def __init__(self, counter: list[int] | None = None) -> None:
        self.lines: list[str] = []
        self.counter = counter if counter is not None else [0]

    def let(self, value: str, name: str | None = None) -> str:
        if name is None:
            name = f"lv{self.counter[0]}" if self.counter[0] else "lv"
            self.counter[0] += 1
        self.lines.append(f"{name} = {value}")
        return name


@dataclass(frozen=True)
class Chain:
    """One hand-written attention chain; defaults give the canonical BSNH/BSNH f16 form."""

    qkv: str = "BSNH"
    out: str = "BSNH"
    cast: bool = False
    dtype: str = "float16"
    softmax_dtype: str = "float32"
    B: Dim = 2
    S: Dim = 16
    Skv: Dim = 16
    N: Dim = 4
    H: Dim = 32
    bias_shape: tuple[Dim, ...] | None = None
    bias_swapped: bool = False
    scale: str = "0.125"
    scale_swapped: bool = False
    scale_param: bool = False  # scale is a function parameter, not a constant
    softmax_axis: int | None = -1  # None: R.nn.softmax(x) with the default axis
    q_perm: tuple[int, ...] = (0, 2, 1, 3)
    k_perm: tuple[int, ...] = (0, 2, 1, 3)
    v_perm: tuple[int, ...] = (0, 2, 1, 3)
    kt_perm: tuple[int, ...] = (0, 2, 1)
    out_perm: tuple[int, ...] = (0, 2, 1, 3)
    kv_repeat: tuple[bool, bool] = (False, False)  # R.repeat(., N, axis=2) on K / V (BSNH)
    cast_scale: bool | None = None  # None: follows `cast`

    # --- shapes -------------------------------------------------------------------------------
    def raw_shape(self, role: str) -> tuple[Dim, ...]:
        s = self.S if role == "q" else self.Skv
        if self.qkv == "BSH":
            return (self.B, s, self.H)
        rep = self.kv_repeat[0] if role == "k" else self.kv_repeat[1] if role == "v" else False
        return (self.B, s, 1 if rep else self.N, self.H)

    def bn(self) -> Dim:
        return mul(self.B, self.N) if self.qkv == "BSNH" else self.B

    def out_shape(self) -> tuple[Dim, ...]:
        if self.qkv == "BSNH":
            if self.out == "BSNH":
                return (self.B, self.S, self.N, self.H)
            return (self.bn(), self.S, self.H)
        if self.out == "BSNH":
            return (self.B, self.S, 1, self.H)
        return (self.B, self.S, self.H)

    # --- emission -----------------------------------------------------------------------------
    def emit_input(self, body: Body, x: str, role: str) -> str:
        rep = (role == "k" and self.kv_repeat[0]) or (role == "v" and self.kv_repeat[1])
        if rep:
            x = body.let(f"R.repeat({x}, repeats={self.N}, axis=2)")
        if self.qkv == "BSNH":
            perm = {"q": self.q_perm, "k": self.k_perm, "v": self.v_perm}[role]
            s = self.S if role == "q" else self.Skv
            x = body.let(f"R.permute_dims({x}, axes={axes(perm)})")
            x = body.let(f"R.reshape({x}, {shape_expr((self.bn(), s, self.H))})")
        if role == "k":
            x = body.let(f"R.permute_dims({x}, axes={axes(self.kt_perm)})")
        return x

    def emit(self, body: Body, q: str, k: str, v: str, bias: str | None, scale: str | None) -> str:
        qq = self.emit_input(body, q, "q")
        kk = self.emit_input(body, k, "k")
        mm = body.let(f"R.matmul({qq}, {kk})")
        cast_scale = self.cast if self.cast_scale is None else self.cast_scale
        if self.scale_param:
            sc = scale
        elif cast_scale:
            sc = body.let(f'R.astype(R.const({self.scale}, "float32"), dtype="{self.dtype}")')
        else:
            sc = f'R.const({self.scale}, "{self.dtype}")'
        args = (sc, mm) if self.scale_swapped else (mm, sc)
        x = body.let(f"R.multiply({args[0]}, {args[1]})")
        if bias is not None:
            args = (bias, x) if self.bias_swapped else (x, bias)
            x = body.let(f"R.add({args[0]}, {args[1]})")
        if self.cast:
            x = body.let(f'R.astype({x}, dtype="{self.softmax_dtype}")')
        if self.softmax_axis is None:
            x = body.let(f"R.nn.softmax({x})")
        else:
            x = body.let(f"R.nn.softmax({x}, axis={self.softmax_axis})")
        if self.cast:
            x = body.let(f'R.astype({x}, dtype="{self.dtype}")')
        vv = self.emit_input(body, v, "v")
        x = body.let(f"R.matmul({x}, {vv})")
        if self.out == "BSNH":
            n = self.N if self.qkv == "BSNH" else 1
            x = body.let(f"R.reshape({x}, {shape_expr((self.B, n, self.S, self.H))})")
            x = body.let(f"R.permute_dims({x}, axes={axes(self.out_perm)})")
        return x

    def symbols(self) -> list[str]:
        """Symbolic names to declare at module level (only when the bias uses an expression)."""
        if not any(isinstance(d, str) and not d.isidentifier() for d in self.bias_shape or ()):
            return []
        dims = [self.B, self.S, self.Skv, self.N, self.H]
        return sorted({d for d in dims if isinstance(d, str) and d.isidentifier()})

    def params(self, suffix: str = "") -> list[tuple[str, str]]:
        quote = not self.symbols()
        ps = [(f"{r}{suffix}", tensor(self.raw_shape(r), self.dtype, quote)) for r in ("q", "k", "v")]
        if self.bias_shape is not None:
            ps.append((f"bias{suffix}", tensor(self.bias_shape, self.dtype, quote)))
        if self.scale_param:
            ps.append((f"scale{suffix}", tensor((), self.dtype)))
        return ps


def function(name: str, params: list[tuple[str, str]], blocks: list[tuple[bool, list[str]]],
             ret: str) -> str:
    """Function text; each block is (is_dataflow, lines); dataflow blocks output `ret`-needed vars."""
    sig = ", ".join(f"{n}: {t}" for n, t in params)
    out = ["    @R.function", f"    def {name}({sig}):"]
    for dataflow, lines in blocks:
        if dataflow:
            out.append("        with R.dataflow():")
            out += [f"            {ln}" for ln in lines]
        else:
            out += [f"        {ln}" for ln in lines]
    out.append(f"        return {ret}")
    return "\n".join(out)


def module(*funcs: str, symbols: list[str] | tuple[str, ...] = ()) -> str:
    decl = "".join(f'{s} = TypeVar("{s}")\n' for s in symbols)
    return decl + "@I.ir_module\nclass Module:\n" + "\n\n".join(funcs) + "\n"


def single(c: Chain, *, extra_outputs: tuple[str, ...] = ()) -> str:
    """A module whose `main` holds exactly one chain `c` in a dataflow block."""
    body = Body()
    bias = "bias" if c.bias_shape is not None else None
    scale = "scale" if c.scale_param else None
    res = c.emit(body, "q", "k", "v", bias, scale)
    outs = (res, *extra_outputs)
    body.lines.append(f"R.output({', '.join(outs)})")
    ret = res if len(outs) == 1 else "(" + ", ".join(outs) + ")"
    return module(function("main", c.params(), [(True, body.lines)], ret), symbols=c.symbols())


# ----------------------------------------------------------------------------------------------
# Cases
# ----------------------------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    text: str
    desc: str
    mqa: bool = True  # use_flash_mqa for the full driver and the rewrite-only step
    notes: list[str] = field(default_factory=list)


def lname(s: str) -> str:
    return s.lower()


def combo_cases() -> list[Case]:
    cases = []
    for qkv in ("BSNH", "BSH"):
        for out in ("BSNH", "BSH"):
            for bias in (True, False):
                for cast in (True, False):
                    c = Chain(qkv=qkv, out=out, cast=cast, Skv=24)
                    if bias:
                        c = replace(c, bias_shape=(c.bn(), c.S, c.Skv))
                    name = (f"combo_{lname(qkv)}_{lname(out)}_{'bias' if bias else 'nobias'}_"
                            f"{'cast' if cast else 'nocast'}_f16")
                    desc = (f"qkv {qkv}, out {out}, bias {'(B*N,S,Skv)' if bias else 'none'}, "
                            f"cast {'yes' if cast else 'no'}, float16")
                    cases.append(Case(name, single(c), desc))
    f32 = [
        ("BSNH", "BSNH", False, False), ("BSNH", "BSH", True, False),
        ("BSH", "BSH", True, False), ("BSH", "BSNH", False, False),
        ("BSNH", "BSNH", True, True),
    ]
    for qkv, out, bias, cast in f32:
        c = Chain(qkv=qkv, out=out, cast=cast, dtype="float32", softmax_dtype="float16", Skv=24)
        if bias:
            c = replace(c, bias_shape=(c.bn(), c.S, c.Skv))
        name = (f"combo_{lname(qkv)}_{lname(out)}_{'bias' if bias else 'nobias'}_"
                f"{'cast' if cast else 'nocast'}_f32")
        desc = f"qkv {qkv}, out {out}, bias {'yes' if bias else 'no'}, cast {'yes (softmax in float16)' if cast else 'no'}, float32"
        cases.append(Case(name, single(c), desc))
    return cases


def mqa_cases() -> list[Case]:
    base = Chain(cast=True, kv_repeat=(True, True), Skv=24)
    out = []
    out.append(Case("mqa_repeat_kv_cast", single(base),
                    "multi-query: R.repeat on K and V, BSNH/BSNH, cast, no bias"))
    out.append(Case("mqa_repeat_kv_cast_nomqa", single(base),
                    "same as mqa_repeat_kv_cast with use_flash_mqa=False", mqa=False))
    nc = replace(base, cast=False)
    out.append(Case("mqa_repeat_kv_nocast", single(nc),
                    "R.repeat on K and V, no cast (multi-query rewrite needs cast)"))
    b = replace(base, bias_shape=(8, 16, 24))
    out.append(Case("mqa_repeat_kv_cast_bias", single(b),
                    "R.repeat on K and V, cast, bias (8,16,24) (multi-query rewrite has no bias)"))
    k = replace(base, kv_repeat=(True, False))
    out.append(Case("mqa_repeat_k_only_cast", single(k),
                    "R.repeat on K only (V is plain BSNH), cast"))
    s = replace(base, B="b", S="s", Skv="s")
    out.append(Case("mqa_repeat_kv_cast_symbolic", single(s),
                    "multi-query with symbolic batch b and sequence s"))
    return out


def bias_cases() -> list[Case]:
    # B=2, N=4, S=16, Skv=24. The score tensor is (B*N, S, Skv), so the (B, ...) forms only
    # broadcast when N=1, i.e. in the BSH layout (where B*N == B and the first form wins).
    forms = [
        ("bn_s_skv", "BSNH", (8, 16, 24)), ("bn_1_skv", "BSNH", (8, 1, 24)),
        ("b_s_skv_bsh", "BSH", (2, 16, 24)), ("b_1_skv_bsh", "BSH", (2, 1, 24)),
        ("1_s_skv", "BSNH", (1, 16, 24)), ("s_skv", "BSNH", (16, 24)),
        ("1_1_skv", "BSNH", (1, 1, 24)), ("1_skv", "BSNH", (1, 24)), ("skv", "BSNH", (24,)),
        ("unsupported_bn_s_1", "BSNH", (8, 16, 1)), ("unsupported_s_1", "BSNH", (16, 1)),
        ("unsupported_1_1_1", "BSNH", (1, 1, 1)),
    ]
    out = []
    for tag, qkv, shape in forms:
        c = Chain(qkv=qkv, out="BSNH", Skv=24, bias_shape=shape)
        n = "N=4" if qkv == "BSNH" else "N=1"
        desc = f"{qkv}/BSNH f16, bias shape {shape} (B=2,{n},S=16,Skv=24)"
        out.append(Case(f"bias_{tag}", single(c), desc))
    c = Chain(qkv="BSNH", out="BSNH", B=1, Skv=24, bias_shape=(1, 16, 24))
    out.append(Case("bias_b1_s_skv", single(c), "BSNH/BSNH, B=1, bias (1,S,Skv) = (B,S,Skv)"))
    c = Chain(qkv="BSH", out="BSH", Skv=24, bias_shape=(1, 24), cast=True)
    out.append(Case("bias_bsh_1_skv_cast", single(c), "BSH/BSH f16 cast, bias (1,Skv)"))
    c = Chain(qkv="BSNH", out="BSNH", Skv=24, bias_shape=(8, 16, 24), bias_swapped=True)
    out.append(Case("bias_swapped_add", single(c), "bias added as R.add(bias, scaled)"))
    c = Chain(qkv="BSNH", out="BSNH", B="b", S="s", Skv="s", bias_shape=("b * 4", "s", "s"))
    out.append(Case("bias_symbolic_bn_s_s", single(c),
                    "symbolic b, s; bias shape (b*4, s, s)"))
    c = Chain(qkv="BSNH", out="BSNH", B="b", S="s", Skv="s", bias_shape=("b", "s", "s"))
    out.append(Case("bias_symbolic_b_s_s", single(c), "symbolic b, s; bias shape (b, s, s)"))
    c = Chain(qkv="BSNH", out="BSNH", B="b", S="s", Skv="s", bias_shape=(1, "s"))
    out.append(Case("bias_symbolic_1_s", single(c), "symbolic b, s; bias shape (1, s)"))
    return out


def softmax_cases() -> list[Case]:
    out = []
    for tag, ax in (("axis1", 1), ("axis_neg2", -2), ("axis2", 2), ("default_axis", None)):
        c = Chain(softmax_axis=ax, Skv=16)
        out.append(Case(f"softmax_{tag}", single(c), f"BSNH/BSNH f16, softmax axis={ax}"))
    c = Chain(qkv="BSH", out="BSH", softmax_axis=1, cast=True)
    out.append(Case("softmax_axis1_bsh_cast", single(c), "BSH/BSH cast, softmax axis=1"))
    return out


def perm_cases() -> list[Case]:
    out = []
    # Shapes kept valid: B=N so that permuting B and N still type-checks.
    c = Chain(B=4, N=4, q_perm=(2, 1, 0, 3), S=16, Skv=16)
    out.append(Case("perm_q_wrong_bsnh", single(c), "BSNH: Q permuted with axes [2,1,0,3] (B=N=4)"))
    c = Chain(B=4, N=4, k_perm=(2, 1, 0, 3))
    out.append(Case("perm_k_wrong_bsnh", single(c), "BSNH: K permuted with axes [2,1,0,3] (B=N=4)"))
    c = Chain(B=4, N=4, v_perm=(2, 1, 0, 3))
    out.append(Case("perm_v_wrong_bsnh", single(c), "BSNH: V permuted with axes [2,1,0,3] (B=N=4)"))
    c = Chain(Skv=32, H=32, kt_perm=(0, 1, 2))
    out.append(Case("perm_kt_identity_bsnh", single(c),
                    "BSNH: K transpose after reshape has axes [0,1,2] (Skv=H=32)"))
    c = Chain(qkv="BSH", out="BSH", Skv=32, H=32, kt_perm=(0, 1, 2))
    out.append(Case("perm_kt_identity_bsh", single(c), "BSH: K permuted with [0,1,2] (Skv=H=32)"))
    c = Chain(out_perm=(0, 1, 3, 2), S=16, H=16)
    out.append(Case("perm_out_wrong_bsnh", single(c),
                    "BSNH output permute [0,1,3,2] instead of [0,2,1,3] (S=H=16)"))
    # BSH: K given as (H, B, Skv) and permuted [1,0,2]: a rank-3 permute that is not [0,2,1].
    text = module(function(
        "main",
        [("q", tensor((2, 16, 32), "float16")), ("k", tensor((32, 2, 24), "float16")),
         ("v", tensor((2, 24, 32), "float16"))],
        [(True, [
            "lv = R.permute_dims(k, axes=[1, 0, 2])",
            'lv1 = R.matmul(q, lv)',
            'lv2 = R.multiply(lv1, R.const(0.125, "float16"))',
            "lv3 = R.nn.softmax(lv2, axis=-1)",
            'lv4 = R.matmul(lv3, v)',
            "R.output(lv4)",
        ])], "lv4"))
    out.append(Case("perm_k_bsh_102", text, "BSH: K is (H,B,Skv) permuted [1,0,2] (not [0,2,1])"))
    # 4-D attention with no reshapes (common in real models): Q (B,N,S,H) @ permute(K,[0,1,3,2]).
    text = module(function(
        "main",
        [("q", tensor((2, 4, 16, 32), "float16")), ("k", tensor((2, 4, 16, 32), "float16")),
         ("v", tensor((2, 4, 16, 32), "float16"))],
        [(True, [
            "lv = R.permute_dims(k, axes=[0, 1, 3, 2])",
            'lv1 = R.matmul(q, lv)',
            'lv2 = R.multiply(lv1, R.const(0.125, "float16"))',
            "lv3 = R.nn.softmax(lv2, axis=-1)",
            'lv4 = R.matmul(lv3, v)',
            "R.output(lv4)",
        ])], "lv4"))
    out.append(Case("rank4_no_reshape", text, "4-D BNSH attention without reshapes"))
    # BSH-like chain whose K is already (B, H, Skv): no permute, so no pattern matches.
    text = module(function(
        "main",
        [("q", tensor((2, 16, 32), "float16")), ("k", tensor((2, 32, 24), "float16")),
         ("v", tensor((2, 24, 32), "float16"))],
        [(True, [
            "lv = R.matmul(q, k)",
            'lv1 = R.multiply(lv, R.const(0.125, "float16"))',
            "lv2 = R.nn.softmax(lv1, axis=-1)",
            "lv3 = R.matmul(lv2, v)",
            "R.output(lv3)",
        ])], "lv3"))
    out.append(Case("no_chain_lookalike", text,
                    "BSH-like chain with K given pre-transposed (no permute_dims on K)"))
    return out


def symbolic_cases() -> list[Case]:
    out = []
    for qkv, out_l in (("BSNH", "BSNH"), ("BSNH", "BSH"), ("BSH", "BSH"), ("BSH", "BSNH")):
        c = Chain(qkv=qkv, out=out_l, B="b", S="s", Skv="t")
        out.append(Case(f"symbolic_{lname(qkv)}_{lname(out_l)}", single(c),
                        f"qkv {qkv}, out {out_l}, symbolic batch b, seq s, kv seq t"))
    c = Chain(cast=True, B="b", S="s", Skv="s", dtype="float32", softmax_dtype="float16")
    out.append(Case("symbolic_bsnh_bsnh_cast_f32", single(c), "symbolic b, s; f32 with cast"))
    return out


def structure_cases() -> list[Case]:
    out = []
    # Two chains in one function, the second consuming the first's output as Q.
    c = Chain()
    body = Body()
    r1 = c.emit(body, "q", "k", "v", None, None)
    r2 = c.emit(body, r1, "k", "v", None, None)
    body.lines.append(f"R.output({r2})")
    out.append(Case("two_chains_sequential", module(function("main", c.params(), [(True, body.lines)], r2)),
                    "two BSNH chains in one function; the 2nd uses the 1st's output as Q"))
    # Two independent chains (BSNH and BSH) in one function, result tuple.
    c2 = Chain(qkv="BSH", out="BSNH", cast=True, bias_shape=(2, 16, 16))
    body = Body()
    r1 = c.emit(body, "q", "k", "v", None, None)
    r2 = c2.emit(body, "q2", "k2", "v2", "bias2", None)
    body.lines.append(f"R.output({r1}, {r2})")
    params = c.params() + c2.params("2")
    out.append(Case("two_chains_independent", module(function("main", params, [(True, body.lines)], f"({r1}, {r2})")),
                    "a BSNH/BSNH chain and a BSH/BSNH cast+bias chain in one function"))
    # Two functions, each with a chain; the second is not called.
    fa = Body()
    ra = c.emit(fa, "q", "k", "v", None, None)
    fa.lines.append(f"R.output({ra})")
    fb = Body()
    rb = c2.emit(fb, "q", "k", "v", "bias", None)
    fb.lines.append(f"R.output({rb})")
    text = module(function("main", c.params(), [(True, fa.lines)], ra),
                  function("attn_bsh", c2.params(), [(True, fb.lines)], rb))
    out.append(Case("two_functions", text, "functions main (BSNH/BSNH) and attn_bsh (BSH/BSNH cast bias)"))
    # Chain in a non-dataflow block.
    body = Body()
    r = c.emit(body, "q", "k", "v", None, None)
    out.append(Case("non_dataflow_block", module(function("main", c.params(), [(False, body.lines)], r)),
                    "chain in a plain (non-dataflow) binding block"))
    # Dataflow chain followed by non-dataflow bindings, plus dead bindings inside the chain block.
    cnt = [0]
    body = Body(cnt)
    dead = body.let('R.add(q, R.const(1, "float16"))', name="dead0")
    r = c.emit(body, "q", "k", "v", None, None)
    body.let(f"R.nn.relu({r})", name="dead1")
    body.lines.append(f"R.output({r})")
    tail = Body(cnt)
    t = tail.let(f'R.add({r}, R.const(1, "float16"))', name="post")
    tail.let(f"R.multiply({t}, {t})", name="dead2")
    text = module(function("main", c.params(), [(True, body.lines), (False, tail.lines)], t))
    out.append(Case("dead_and_non_dataflow", text,
                    f"dataflow chain with dead bindings ({dead}, dead1) then a non-dataflow block"))
    # Dead chain: the attention result is never used.
    body = Body()
    r = c.emit(body, "q", "k", "v", None, None)
    o = body.let('R.add(q, R.const(1, "float16"))', name="other")
    body.lines.append(f"R.output({o})")
    # No chain at all: dead bindings in a dataflow block and in a plain block.
    body = Body()
    body.let('R.nn.relu(q)', name="dead0")
    o = body.let('R.add(q, k)', name="s")
    body.lines.append(f"R.output({o})")
    tail = Body()
    t = tail.let(f"R.multiply({o}, v)", name="t")
    tail.let(f"R.nn.relu({t})", name="dead1")
    text = module(function("main", c.params(), [(True, body.lines), (False, tail.lines)], t))
    out.append(Case("dead_no_chain", text, "no attention; dead bindings in a dataflow and a plain block"))
    out.append(Case("dead_chain", module(function("main", c.params(), [(True, body.lines)], o)),
                    "a complete chain whose result is unused"))
    return out


def self_attention_cases() -> list[Case]:
    out = []
    c = Chain(qkv="BSH", out="BSNH", Skv=16)
    body = Body()
    r = c.emit(body, "x", "x", "x", None, None)
    body.lines.append(f"R.output({r})")
    text = module(function("main", [("x", tensor((2, 16, 32), "float16"))], [(True, body.lines)], r))
    out.append(Case("self_attention_bsh", text, "BSH/BSNH self-attention: q = k = v = x"))
    c = Chain(qkv="BSH", out="BSNH", Skv=16, cast=True, bias_shape=(16, 16))
    body = Body()
    r = c.emit(body, "x", "x", "x", "bias", None)
    body.lines.append(f"R.output({r})")
    text = module(function("main", [("x", tensor((2, 16, 32), "float16")),
                                    ("bias", tensor((16, 16), "float16"))], [(True, body.lines)], r))
    out.append(Case("self_attention_bsh_bsnh_cast_bias", text, "BSH->BSNH self-attention, cast, bias (S,Skv)"))
    c = Chain(Skv=16)
    body = Body()
    r = c.emit(body, "x", "x", "x", None, None)
    body.lines.append(f"R.output({r})")
    text = module(function("main", [("x", tensor((2, 16, 4, 32), "float16"))], [(True, body.lines)], r))
    out.append(Case("self_attention_bsnh", text, "BSNH self-attention: q = k = v = x (separate permutes)"))
    # BSNH with a single shared permute+reshape feeding Q, K (via transpose) and V.
    text = module(function(
        "main", [("x", tensor((2, 16, 4, 32), "float16"))],
        [(True, [
            "lv = R.permute_dims(x, axes=[0, 2, 1, 3])",
            "lv1 = R.reshape(lv, R.shape([8, 16, 32]))",
            "lv2 = R.permute_dims(lv1, axes=[0, 2, 1])",
            'lv3 = R.matmul(lv1, lv2)',
            'lv4 = R.multiply(lv3, R.const(0.125, "float16"))',
            "lv5 = R.nn.softmax(lv4, axis=-1)",
            'lv6 = R.matmul(lv5, lv1)',
            "lv7 = R.reshape(lv6, R.shape([2, 4, 16, 32]))",
            "lv8 = R.permute_dims(lv7, axes=[0, 2, 1, 3])",
            "R.output(lv8)",
        ])], "lv8"))
    out.append(Case("self_attention_bsnh_shared", text,
                    "BSNH self-attention sharing one permute+reshape for Q, K and V"))
    return out


def projection_case(name: str, desc: str, share: str, cast: bool = False) -> Case:
    """x (B,S,D) -> matmul W{q,k,v} -> reshape (B,S,N,H) -> BSNH chain -> reshape (B,S,D).

    share: "" (producers private), "proj" (the projection matmul of K also feeds an output),
    "inner" (the permuted Q inside the matched chain also feeds an output),
    "qkv4" (the 4-D reshaped V is also an output).
    """
    c = Chain(cast=cast)
    body = Body()
    raws = {}
    for r in ("q", "k", "v"):
        p = body.let(f'R.matmul(x, w_{r})', name=f"{r}_proj")
        raws[r] = body.let(f"R.reshape({p}, R.shape([2, 16, 4, 32]))", name=f"{r}_4d")
    start = len(body.lines)
    a = c.emit(body, raws["q"], raws["k"], raws["v"], None, None)
    res = body.let(f"R.reshape({a}, R.shape([2, 16, 128]))", name="attn_out")
    y = body.let(f'R.matmul({res}, w_o)', name="y")
    outs = [y]
    if share == "proj":
        outs.append(body.let('R.nn.relu(k_proj)', name="k_side"))
    elif share == "inner":
        inner = body.lines[start].split(" = ")[0]
        outs.append(body.let(f"R.nn.relu({inner})", name="q_side"))
    elif share == "qkv4":
        outs.append(raws["v"])
    body.lines.append(f"R.output({', '.join(outs)})")
    params = [("x", tensor((2, 16, 128), "float16"))] + [
        (f"w_{r}", tensor((128, 128), "float16")) for r in ("q", "k", "v", "o")]
    ret = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
    return Case(name, module(function("main", params, [(True, body.lines)], ret)), desc)


def producer_cases() -> list[Case]:
    return [
        projection_case("proj_private", "projection matmul -> reshape -> BSNH chain; producers used only by the chain", ""),
        projection_case("proj_private_cast", "as proj_private with casts around scale and softmax", "", cast=True),
        projection_case("proj_shared_proj", "K projection also used outside the chain (relu output)", "proj"),
        projection_case("proj_shared_inner", "Q's permute (inside the matched chain) also used outside", "inner"),
        projection_case("proj_shared_v4d", "V's 4-D reshape also a function output", "qkv4"),
    ]


def scale_cases() -> list[Case]:
    out = []
    out.append(Case("scale_swapped", single(Chain(scale_swapped=True)),
                    "scale multiply written R.multiply(const, matmul)"))
    out.append(Case("scale_swapped_cast", single(Chain(scale_swapped=True, cast=True)),
                    "cast form with R.multiply(astype(const), matmul)"))
    out.append(Case("scale_inv_sqrt", single(Chain(scale="0.17677669529663687")),
                    "scale 1/sqrt(32) as a float16 scalar constant"))
    out.append(Case("scale_f32_inv_sqrt", single(Chain(scale="0.17677669529663687", dtype="float32")),
                    "scale 1/sqrt(32) as a float32 scalar constant, float32 compute"))
    out.append(Case("scale_param", single(Chain(scale_param=True)),
                    "scale is a function parameter (not a constant)"))
    out.append(Case("scale_cast_missing", single(Chain(cast=True, cast_scale=False)),
                    "astype around softmax but the scale constant is not cast"))
    return out


def escaping_cases() -> list[Case]:
    out = []
    # Softmax also returned.
    c = Chain()
    body = Body()
    r = c.emit(body, "q", "k", "v", None, None)
    sm = next(ln.split(" = ")[0] for ln in body.lines if "softmax" in ln)
    body.lines.append(f"R.output({r}, {sm})")
    out.append(Case("escape_softmax", module(function("main", c.params(), [(True, body.lines)], f"({r}, {sm})")),
                    "the softmax result is also a function output"))
    c = Chain(qkv="BSH", out="BSNH", cast=True, bias_shape=(2, 16, 16))
    body = Body()
    r = c.emit(body, "q", "k", "v", "bias", None)
    mm = next(ln.split(" = ")[0] for ln in body.lines if "matmul" in ln)
    body.lines.append(f"R.output({r}, {mm})")
    out.append(Case("escape_first_matmul_bsh_bsnh_cast", module(function("main", c.params(), [(True, body.lines)], f"({r}, {mm})")),
                    "BSH/BSNH cast+bias chain whose Q*K^T matmul is also an output"))
    return out


def all_cases() -> list[Case]:
    cases = (combo_cases() + mqa_cases() + bias_cases() + softmax_cases() + perm_cases()
             + symbolic_cases() + structure_cases() + self_attention_cases() + producer_cases()
             + scale_cases() + escaping_cases())
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "duplicate case names"
    return cases


# ----------------------------------------------------------------------------------------------
# TVM side
# ----------------------------------------------------------------------------------------------


def tvm_steps():
    import tvm
    import tvm_workspace_fix  # tools/: TVM's annotate_workspace with its KeyError fixed
    from tvm.relax import Function
    from tvm.relax.backend.cuda import cutlass
    from tvm.relax.backend.patterns import make_attention_rewrite_pattern
    from tvm.relax.dpl import rewrite_call

    tvm_workspace_fix.install()

    def parse(text: str):
        return tvm.script.from_source(text)

    def rewrite(text: str, mqa: bool) -> str:
        mod = parse(text)
        for name, func in mod.functions_items():
            if isinstance(func, Function):
                if mqa:
                    pat, rw = make_attention_rewrite_pattern(
                        "BSNH", "BSNH", with_bias=False, with_cast=True, with_kv_repeat=True)
                    func = rewrite_call(pat, rw, func)
                for pat, rw in cutlass._REWRITE_PATTERNS:
                    func = rewrite_call(pat, rw, func)
            mod[name] = func
        return mod.script()

    def full(text: str, mqa: bool, annotate: bool) -> str:
        mod = parse(text)
        return cutlass.partition_for_cutlass(mod, annotate_codegen=annotate, use_flash_mqa=mqa).script()

    return parse, rewrite, full


def error_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0] if lines else ''}"


README_HEAD = """\
# attention_rewrite goldens (TVM 0.27, `partition_for_cutlass` step 1)

Generated by `tools/gen_attention_goldens.py` under a Python with apache-tvm 0.27.0
(`/tmp/tvmenv/bin/python tools/gen_attention_goldens.py`). Do not edit by hand; rerun the tool.
The inputs are hand-written templates with fixed parameters (see the tool), so the output is
deterministic. The tool never runs in the test suite.

Files per case `X`:

- `X.relax`: the input, parsed and printed by TVM (canonical text).
- `X.rewrite.txt`: the module after step 1 only. Per Relax function (in module order), the
  multi-query rewrite `make_attention_rewrite_pattern("BSNH", "BSNH", with_bias=False,
  with_cast=True, with_kv_repeat=True)` runs first, then the 16 patterns of
  `tvm.relax.backend.cuda.cutlass._REWRITE_PATTERNS`, each through
  `tvm.relax.dpl.rewrite_call(pattern, rewriter, func)`; then `mod.script()`. This is exactly
  what `partition_for_cutlass(use_flash_mqa=True)` does before fusion.
- `X.annotate.txt` / `X.composite.txt`: the full `partition_for_cutlass(mod,
  annotate_codegen=True / False)` with `use_flash_mqa=True`. TVM's `annotate_workspace` raises
  `KeyError` (it looks up the output dtype object in a dict keyed by strings); the tool
  replaces it by an equivalent pass that uses the dtype's string (WorkspaceSize = output bytes,
  8 when symbolic; the outer Codegen function copies it).
- `X.<step>.error.txt` (step = rewrite, annotate or composite) instead of the step's output when
  TVM raises: one line `ExceptionType: first non-empty line of the message`. A step-1 error
  is repeated by both full-driver steps. Errors seen in TVM 0.27's Python rewriter:
  - `TypeError: cannot unpack non-iterable NoneType object`: a Q/K/V sub-check (rank,
    permutation axes, reshape dims) failed after the pattern matched structurally.
  - `TypeError: shape must be a tuple/list or a Relax shape expression`: every rewrite with
    output layout BSH that gets past the Q/K/V, softmax-axis and bias checks (its output
    reshape passes an FFI array to `R.reshape`). So BSH-output rewrites never succeed; a
    BSNH-output chain whose output permute/reshape check fails falls through to them.
  - `TypeError: object of type 'NoneType' has no len()`: the softmax input has an unknown
    shape (symbolic bias that does not broadcast provably).
- TVM prints a symbolic expression in a parameter annotation as a string (`"b * 4"`);
  symbolic names are declared as module-level `b = TypeVar("b")` lines in TVM's output.
- `rewrite_call` also removes unused bindings (dataflow and plain blocks) even where nothing
  was rewritten (see `dead_no_chain`, `dead_chain`, `dead_and_non_dataflow`).

Cases whose name ends in `_nomqa` use `use_flash_mqa=False`: the multi-query rewrite is left
out of `X.rewrite.txt` and the full driver is called with `use_flash_mqa=False`.

Naming: `<group>_<detail>`. Groups: `combo_<qkv>_<out>_<bias|nobias>_<cast|nocast>_<f16|f32>`
(the 16 pattern combinations plus some float32), `mqa_` (R.repeat on K/V), `bias_` (bias
shape forms), `softmax_` (softmax axis), `perm_` / `rank4_` / `no_chain_` (mismatching
permutes, ranks, look-alikes), `symbolic_`, `two_`, `non_dataflow_`, `dead_`,
`self_attention_`, `proj_` (Q/K/V produced by projection matmul -> reshape in the block),
`scale_`, `escape_` (an intermediate is also a function output).

Result column: `attention` = `R.nn.attention` or `R.nn.attention_bias` appears in `X.rewrite.txt`; `unchanged` = no
rewrite happened; `error (steps)` = TVM raised.

| case | description | result |
|---|---|---|
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--only", default=None, help="generate only cases whose name contains this")
    ap.add_argument("--dump-inputs", action="store_true", help="print the raw template texts")
    args = ap.parse_args()
    cases = all_cases()
    if args.only:
        cases = [c for c in cases if args.only in c.name]
    if args.dump_inputs:
        for c in cases:
            print(f"### {c.name}\n{c.text}")
        return 0
    parse, rewrite, full = tvm_steps()
    os.makedirs(args.out, exist_ok=True)
    if not args.only:
        for fn in os.listdir(args.out):
            if fn.endswith((".relax", ".txt")) or fn == "README.md":
                os.remove(os.path.join(args.out, fn))
    rows = []
    summary = {"attention": 0, "unchanged": 0, "error": 0}
    for c in cases:
        try:
            canon = parse(c.text).script() + "\n"
        except Exception as e:  # noqa: BLE001
            raise SystemExit(f"case {c.name}: TVM cannot parse the template: {error_line(e)}") from None
        with open(os.path.join(args.out, f"{c.name}.relax"), "w") as f:
            f.write(canon)
        errors = []
        rewritten = None
        for step in ("rewrite", "annotate", "composite"):
            try:
                if step == "rewrite":
                    text = rewrite(canon, c.mqa) + "\n"
                else:
                    text = full(canon, c.mqa, step == "annotate") + "\n"
            except Exception as e:  # noqa: BLE001 - any TVM failure is a golden
                errors.append(step)
                with open(os.path.join(args.out, f"{c.name}.{step}.error.txt"), "w") as f:
                    f.write(error_line(e) + "\n")
                continue
            if step == "rewrite":
                rewritten = re.search(r"R\.nn\.attention(_bias)?\(", text) is not None
            with open(os.path.join(args.out, f"{c.name}.{step}.txt"), "w") as f:
                f.write(text)
        if errors:
            result = f"error ({', '.join(errors)})"
            summary["error"] += 1
        else:
            result = "attention" if rewritten else "unchanged"
            summary[result] += 1
        rows.append(f"| {c.name} | {c.desc}{' (use_flash_mqa=False)' if not c.mqa else ''} | {result} |")
        print(f"{c.name:45s} {result}", file=sys.stderr)
    if not args.only:
        with open(os.path.join(args.out, "README.md"), "w") as f:
            f.write(README_HEAD + "\n".join(rows) + "\n\n"
                    + f"{len(cases)} cases: {summary['attention']} rewritten to R.nn.attention, "
                    + f"{summary['unchanged']} unchanged, {summary['error']} raise in TVM.\n")
    print(f"{len(cases)} cases: {summary}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
