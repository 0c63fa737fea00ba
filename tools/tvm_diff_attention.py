"""Randomized differential test of ``partition_for_cutlass``'s attention rewrites (step 1 of
spec/backends.md section 1.1) against Apache TVM 0.27. Not part of the test suite: needs a
Python with apache-tvm 0.27 (``--tvm-python``).

    python tools/tvm_diff_attention.py --n 300 --seed 1 --tvm-python /tmp/tvmenv/bin/python

A seeded generator writes Relax modules (1-3 functions; each a dataflow block mixing 1-3
hand-written attention chains of random form with projections, unrelated cutlass-fusable ops,
dead bindings and sometimes a plain block after it). For every module, TVM's and byocc's
``partition_for_cutlass`` are run with ``annotate_codegen`` True and False and the printed
modules compared. TVM's ``annotate_workspace`` raises ``KeyError`` on every attention module;
the TVM side replaces it by the same step with the dtype looked up as a string (as
/work/notes/pfc_oracle.py does).

Where TVM raises (or differs), the module also goes through a *patched* TVM whose attention
rewriters follow byocc's documented deviations (rewrites.py docstring): a rewriter that raises
(``TypeError``, ...) leaves the chain unchanged; ``IntImm == Var`` in the bias-form checks is
false (stock raises ``ValueError``); a BSH output is reshaped from the attention (permuted
to ``(B, N, S, Hv)`` first when the inputs are BSNH); a replacement whose struct info differs
from the replaced value's is not made; the multi-query rewrite needs ``R.repeat`` on axis 2 for
both K and V, or the same repeat on axis 1 for both; a fusion check that crashes on an
operand of unknown shape rejects the match.
byocc's outputs are also parsed back by byocc (``well_formed`` must return []) and by TVM
(``relax.analysis.well_formed``). Mismatches are written under ``--out`` (diff_N/).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from dataclasses import field

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

Dim = int | str  # an int, a symbol name, or an expression over symbols ("b * 4")


# ----------------------------------------------------------------------------------------------
# Text helpers
# ----------------------------------------------------------------------------------------------


def mul(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if a == 1:
        return b
    if b == 1:
        return a
    return f"{a} * {b}"


def ttype(shape: tuple, dtype: str) -> str:
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    return f'R.Tensor(({dims}), dtype="{dtype}")'


def rshape(shape: tuple) -> str:
    return "R.shape([" + ", ".join(str(d) for d in shape) + "])"


def symbols_of(shape: tuple) -> set:
    out = set()
    for d in shape:
        if isinstance(d, str):
            out |= {t for t in d.replace("*", " ").split() if t.isidentifier()}
    return out


class Func:
    """One Relax function being written: parameters, dataflow lines, outputs, tail."""

    def __init__(self, name: str, dtype: str):
        self.name, self.dtype = name, dtype
        self.params: dict[str, tuple] = {}  # name -> (shape, dtype)
        self.lines: list[str] = []
        self.shapes: dict[str, tuple] = {}  # var -> (shape, dtype) for what the generator knows
        self.n = 0
        self.outputs: list[str] = []
        self.tail: list[str] = []
        self.cur = self.lines  # where let() writes: the dataflow block, or the plain tail

    def param(self, base: str, shape: tuple, dtype: str) -> str:
        name, i = base, 1
        while name in self.params or name in self.shapes:
            name, i = f"{base}_{i}", i + 1
        self.params[name] = (shape, dtype)
        self.shapes[name] = (shape, dtype)
        return name

    def let(self, value: str, shape: tuple | None = None, dtype: str | None = None, name: str | None = None) -> str:
        if name is None or name in self.shapes:
            name = f"lv{self.n}" if self.n else "lv"
            self.n += 1
            while name in self.shapes or name in self.params:
                name = f"lv{self.n}"
                self.n += 1
        self.cur.append(f"{name} = {value}")
        self.shapes[name] = (shape, dtype)
        return name

    def text(self) -> str:
        sig = ", ".join(f"{n}: {ttype(s, d)}" for n, (s, d) in self.params.items())
        out = ["    @R.function", f"    def {self.name}({sig}):", "        with R.dataflow():"]
        out += [f"            {ln}" for ln in self.lines]
        out.append(f"            R.output({', '.join(self.outputs)})")
        out += [f"        {ln}" for ln in self.tail]
        rets = self.returns
        out.append(f"        return {rets[0] if len(rets) == 1 else '(' + ', '.join(rets) + ')'}")
        return "\n".join(out)


# ----------------------------------------------------------------------------------------------
# Generator
# ----------------------------------------------------------------------------------------------


@dataclass
class Chain:
    dtype: str
    B: Dim
    S: Dim
    Skv: Dim
    N: Dim
    H: Dim
    Hv: Dim
    forms: dict  # role -> BSNH | BNSH | BSH | perm3
    out: str  # BSNH | BNSH | BSH | wrongperm
    merge: bool  # BSNH out: further reshape to (B, S, N*Hv)
    bias: tuple | None
    bias_accepted: bool
    bias_swapped: bool
    cast: bool
    cast_scale: bool
    cast_softmax: bool
    softmax_dtype: str
    scale: str
    scale_dtype: str
    scale_swapped: bool
    softmax_axis: int | None
    repeat: tuple | None  # (roles, repeats, axis) for R.repeat on K/V (BSNH only)
    kt_identity: bool = False
    q_perm_wrong: bool = False
    tags: list = field(default_factory=list)

    @property
    def G(self) -> Dim:
        return mul(self.B, self.N)

    def src_shape(self, role: str) -> tuple:
        s = self.S if role == "q" else self.Skv
        h = self.Hv if role == "v" else self.H
        f = self.forms[role]
        if f == "BSNH":
            n = self.N
            if self.repeat and role in self.repeat[0]:
                _, r, ax = self.repeat
                if ax == 2:
                    n = self.N // r
                else:
                    s = self.Skv // r
            if self.q_perm_wrong and role == "q":
                return (self.N, s, self.B, h)  # permuted [2, 1, 0, 3] it is (B, S, N, H)-sized
            return (self.B, s, n, h)
        if f == "BNSH":
            return (self.B, self.N, s, h)
        if f == "BSH":
            return (self.G, s, h)
        return (s, self.G, h)  # perm3


SCALES = ["0.125", "0.17677669529663687", "0.25", "0.088388347648318447", "1.0", "0.5"]
DTYPES = ["float16", "float32"]


class Generator:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.tags: list = []
        self.safe = False  # avoid the forms that make TVM raise (more modules comparable)

    def p(self, prob: float) -> bool:
        return self.rng.random() < prob

    def pick(self, xs):
        return self.rng.choice(xs)

    # --- chain configuration ------------------------------------------------------------------
    def chain_cfg(self, dtype: str) -> Chain:
        r = self.rng
        B = self.pick([1, 2, 3, 4]) if not self.p(0.2) else "b"
        S = self.pick([1, 7, 16, 32]) if not self.p(0.2) else "s"
        Skv = S if self.p(0.4) else (self.pick([1, 8, 16, 24, 32]) if not self.p(0.2) else self.pick(["s", "t"]))
        N = self.pick([1, 2, 4, 8]) if not self.p(0.06) else "n"
        H = self.pick([8, 16, 32, 64]) if not self.p(0.05) else "h"
        Hv = H if self.p(0.75) else self.pick([8, 16, 32])
        base = r.choices(["BSNH", "BSH", "BNSH", "perm3"], [0.55, 0.3, 0.1, 0.0 if self.safe else 0.05])[0]
        forms = {k: base for k in "qkv"}
        static = all(isinstance(d, int) for d in (B, S, Skv, N, H, Hv))
        if static and self.p(0.06):  # mixed forms (all give G = B*N)
            for k in "qkv":
                forms[k] = r.choices(["BSNH", "BNSH", "BSH"], [0.6, 0.2, 0.2])[0]
        if any(f in ("BSH", "perm3") for f in forms.values()) and not isinstance(mul(B, N), int):
            N = 1
        if self.safe and base in ("BSH", "BNSH"):
            N = 1  # G = B: no shape-changing BSH->BSNH replacement in TVM
        out = "BSNH" if self.safe else r.choices(["BSNH", "BSH", "BNSH", "wrongperm"], [0.55, 0.33, 0.07, 0.05])[0]
        merge = out == "BSNH" and self.p(0.4)
        cast = self.p(0.45)
        c = Chain(dtype=dtype, B=B, S=S, Skv=Skv, N=N, H=H, Hv=Hv, forms=forms, out=out, merge=merge,
                  bias=None, bias_accepted=False, bias_swapped=self.p(0.3), cast=cast,
                  cast_scale=cast if not self.p(0.05) else not cast,
                  cast_softmax=cast, softmax_dtype="float32" if dtype == "float16" or self.p(0.3) else "float16",
                  scale=self.pick(SCALES), scale_dtype=dtype, scale_swapped=self.p(0.3),
                  softmax_axis=r.choices([-1, 2, None, 1, -2], [0.8, 0.05, 0.05, 0.05, 0.05])[0], repeat=None)
        if c.cast_scale:
            c.scale_dtype = self.pick(["float32", "float16", dtype])
        # multi-query: R.repeat on K (and V), BSNH K/V only, int N
        if forms["k"] == "BSNH" and isinstance(N, int) and N > 1 and self.p(0.3):
            roles = "kv" if forms["v"] == "BSNH" and self.p(0.8) else "k"
            if isinstance(Skv, int) and Skv % 2 == 0 and Skv > 1 and self.p(0.12):
                c.repeat = (roles, 2, 1)
            else:
                divs = [d for d in range(2, N + 1) if N % d == 0]
                c.repeat = (roles, self.pick(divs), 2)
            if self.p(0.6):  # the multi-query rewrite's form: cast, no bias, BSNH output
                c.cast = c.cast_scale = c.cast_softmax = True
                c.scale_dtype = self.pick(["float32", "float16", dtype])
                c.out, c.tags = "BSNH", c.tags + ["mqa_form"]
                return c
        if static and not self.safe and self.p(0.04) and forms["k"] != "perm3":  # K^T written as an identity permute
            c.Skv = c.H
            c.kt_identity = True
        if static and not self.safe and forms["q"] == "BSNH" and self.p(0.03):
            c.q_perm_wrong = True
        if self.p(0.45):
            self.choose_bias(c)
        return c

    def choose_bias(self, c: Chain) -> None:
        b, n = (c.B, c.N) if c.forms["q"] in ("BSNH", "BNSH") else (c.G, 1)
        g, s, t = c.G, c.S, c.Skv
        accepted = [(mul(b, n), s, t), (mul(b, n), 1, t), (b, s, t), (b, 1, t), (1, s, t), (s, t), (1, 1, t), (1, t), (t,)]
        other = [(g, s, 1), (s, 1), (1, 1, 1), (1,), (g, 1, 1), (1, s, 1), (1, 1), (b, n, s, t)]
        acc = self.p(0.7)
        shape = self.pick(accepted if acc else other)
        score = (g, s, t)
        if isinstance(c.B, str) and c.N != 1 and c.forms["q"] in ("BSNH", "BNSH") and self.p(0.25):
            c.bias, c.bias_accepted = (c.B, s, t), True  # broadcast not provable: unknown shape
            c.tags.append("bias_unprovable")
            return

        def fits(bd, sd):
            return bd == 1 or bd == sd or (isinstance(bd, str) and isinstance(sd, str) and self.p(0.3))

        if len(shape) > 3 or not all(fits(bd, sd) for bd, sd in zip(reversed(shape), reversed(score))):
            shape = (g, s, t)
        c.bias = shape
        c.bias_accepted = acc

    # --- sources ------------------------------------------------------------------------------
    def sources(self, f: Func, c: Chain, prev: dict | None) -> dict:
        """q/k/v source variables: params, projections, or shared with a previous chain."""
        if prev is not None and prev["cfg_shared"]:
            srcs = dict(prev["srcs"])
            if self.p(0.5):
                srcs["q"] = f.param("q", c.src_shape("q"), c.dtype)
            return srcs
        forms = set(c.forms.values())
        self_attn = (c.S == c.Skv and c.H == c.Hv and len(forms) == 1 and not c.repeat
                     and not c.q_perm_wrong and not c.kt_identity and self.p(0.15))
        if self_attn:
            x = f.param("x", c.src_shape("q"), c.dtype)
            c.tags.append("self")
            return {"q": x, "k": x, "v": x}
        proj = (forms <= {"BSNH"} or (forms == {"BSH"} and c.N == 1)) and not c.repeat and not c.q_perm_wrong \
            and isinstance(mul(c.N, c.H), int) and isinstance(mul(c.N, c.Hv), int) and self.p(0.35)
        if not proj:
            return {r: f.param(r, c.src_shape(r), c.dtype) for r in "qkv"}
        c.tags.append("proj")
        D = self.pick([32, 64])
        x = f.param("x", (c.B, c.S, D), c.dtype)
        mem = x if c.S == c.Skv and self.p(0.7) else f.param("mem", (c.B, c.Skv, D), c.dtype)
        out = {}
        for r in "qkv":
            h = c.Hv if r == "v" else c.H
            w = f.param(f"w{r}", (D, mul(c.N, h)), c.dtype)
            src = x if r == "q" else mem
            s = c.S if r == "q" else c.Skv
            y = f.let(f"R.matmul({src}, {w})", (c.B, s, mul(c.N, h)), c.dtype, name=f"{r}_proj")
            if self.p(0.4):
                bb = f.param(f"b{r}", (mul(c.N, h),), c.dtype)
                y = f.let(f"R.add({y}, {bb})", (c.B, s, mul(c.N, h)), c.dtype, name=f"{r}_projb")
            if self.p(0.1) and f.cur is f.lines:
                f.outputs.append(f.let(f"R.nn.relu({y})", None, c.dtype, name=f"{r}_side"))
                c.tags.append("proj_shared")
            if c.forms[r] == "BSNH":
                y = f.let(f"R.reshape({y}, {rshape((c.B, s, c.N, h))})", (c.B, s, c.N, h), c.dtype, name=f"{r}4")
            out[r] = y
        return out

    # --- chain emission -----------------------------------------------------------------------
    def emit_input(self, f: Func, c: Chain, role: str, x: str, core_cache: dict) -> str:
        form = c.forms[role]
        s = c.S if role == "q" else c.Skv
        h = c.Hv if role == "v" else c.H
        key = (x, form)
        if key in core_cache and role != "k":
            return core_cache[key]
        if key in core_cache and role == "k":
            x3 = core_cache[key]
        else:
            if c.repeat and role in c.repeat[0]:
                _, rep, ax = c.repeat
                x = f.let(f"R.repeat({x}, repeats={rep}, axis={ax})", None, c.dtype)
            if form == "BSNH":
                perm = "[2, 1, 0, 3]" if (c.q_perm_wrong and role == "q") else "[0, 2, 1, 3]"
                x = f.let(f"R.permute_dims({x}, axes={perm})", None, c.dtype)
                x3 = f.let(f"R.reshape({x}, {rshape((c.G, s, h))})", (c.G, s, h), c.dtype)
            elif form == "BNSH":
                x3 = f.let(f"R.reshape({x}, {rshape((c.G, s, h))})", (c.G, s, h), c.dtype)
            elif form == "perm3":
                x = f.let(f"R.permute_dims({x}, axes=[1, 0, 2])", None, c.dtype)
                x3 = f.let(f"R.reshape({x}, {rshape((c.G, s, h))})", (c.G, s, h), c.dtype)
            else:
                x3 = x
            if "shared_core" in c.tags:
                core_cache[key] = x3
        if role == "k":
            perm = "[0, 1, 2]" if c.kt_identity else "[0, 2, 1]"
            return f.let(f"R.permute_dims({x3}, axes={perm})", None, c.dtype)
        return x3

    def emit_chain(self, f: Func, c: Chain, srcs: dict) -> tuple[str, list]:
        start = len(f.cur)
        cache: dict = {}
        if srcs["q"] == srcs["k"] == srcs["v"] and self.p(0.5):
            c.tags.append("shared_core")
        qq = self.emit_input(f, c, "q", srcs["q"], cache)
        kk = self.emit_input(f, c, "k", srcs["k"], cache)
        mm = f.let(f"R.matmul({qq}, {kk})", None, c.dtype)
        const = f'R.const({c.scale}, "{c.scale_dtype if c.cast_scale else c.dtype}")'
        if c.cast_scale:
            const = f.let(f'R.astype({const}, dtype="{c.dtype}")', (), c.dtype)
        args = (const, mm) if c.scale_swapped else (mm, const)
        x = f.let(f"R.multiply({args[0]}, {args[1]})", None, c.dtype)
        if c.bias is not None:
            bias = self.bias_var(f, c)
            args = (bias, x) if c.bias_swapped else (x, bias)
            x = f.let(f"R.add({args[0]}, {args[1]})", None, c.dtype)
        if c.cast_softmax:
            x = f.let(f'R.astype({x}, dtype="{c.softmax_dtype}")', None, c.softmax_dtype)
        ax = "" if c.softmax_axis is None else f", axis={c.softmax_axis}"
        x = f.let(f"R.nn.softmax({x}{ax})", None, None)
        if c.cast_softmax:
            x = f.let(f'R.astype({x}, dtype="{c.dtype}")', None, c.dtype)
        vv = self.emit_input(f, c, "v", srcs["v"], cache)
        x = f.let(f"R.matmul({x}, {vv})", (c.G, c.S, c.Hv), c.dtype)
        if c.out in ("BSNH", "BNSH", "wrongperm"):
            x = f.let(f"R.reshape({x}, {rshape((c.B, c.N, c.S, c.Hv))})", (c.B, c.N, c.S, c.Hv), c.dtype)
            if c.out == "BSNH":
                x = f.let(f"R.permute_dims({x}, axes=[0, 2, 1, 3])", (c.B, c.S, c.N, c.Hv), c.dtype)
                if c.merge:
                    d = mul(c.N, c.Hv)
                    x = f.let(f"R.reshape({x}, {rshape((c.B, c.S, d))})", (c.B, c.S, d), c.dtype)
            elif c.out == "wrongperm":
                x = f.let(f"R.permute_dims({x}, axes=[0, 1, 3, 2])", (c.B, c.N, c.Hv, c.S), c.dtype)
        inner = [ln.split(" = ")[0] for ln in f.cur[start:]]
        return x, inner

    def bias_var(self, f: Func, c: Chain) -> str:
        shape = c.bias
        if any(isinstance(d, str) and "*" in d for d in shape):
            # an expression dim: a 4-D parameter reshaped in the block
            full = []
            for d in shape:
                full += [c.B, c.N] if d == c.G else [d]
            p = f.param("bias", tuple(full), c.dtype)
            return f.let(f"R.reshape({p}, {rshape(shape)})", shape, c.dtype, name="bias3")
        p = f.param("bias", shape, c.dtype)
        if self.p(0.15):
            return f.let(f'R.multiply({p}, R.const(-1, "{c.dtype}"))', shape, c.dtype, name="mask")
        return p

    # --- unrelated ops ------------------------------------------------------------------------
    def unrelated(self, f: Func) -> str:
        dt = f.dtype
        M, K, Nn = self.pick([4, 16, 32]), self.pick([16, 32, 64]), self.pick([16, 32, 64])
        kind = self.pick(["mm", "mm_bias_act", "mm_t", "ln", "mm_bias_res", "ln_mm"])
        lead = (self.pick([1, 2]),) if self.p(0.4) else ()
        y = f.param("y", lead + (M, K), dt)
        if kind == "ln" or kind == "ln_mm":
            g, b = f.param("gamma", (K,), dt), f.param("beta", (K,), dt)
            y = f.let(f"R.nn.layer_norm({y}, {g}, {b}, axes=[-1], epsilon=1.0000000000000001e-05, center=True, scale=True)",
                      lead + (M, K), dt)
            if kind == "ln":
                return y
        if kind == "mm_t":
            w = f.param("w", (Nn, K), dt)
            wt = f.let(f"R.permute_dims({w}, axes=[1, 0])", (K, Nn), dt)
            return f.let(f"R.matmul({y}, {wt})", lead + (M, Nn), dt)
        w = f.param("w", (K, Nn), dt)
        z = f.let(f"R.matmul({y}, {w})", lead + (M, Nn), dt)
        if kind in ("mm_bias_act", "mm_bias_res"):
            b = f.param("ub", (Nn,), dt)
            z = f.let(f"R.add({z}, {b})", lead + (M, Nn), dt)
            if kind == "mm_bias_act" or self.p(0.3):
                z = f.let(f"R.nn.{self.pick(['relu', 'gelu'])}({z})", lead + (M, Nn), dt)
            if kind == "mm_bias_res":
                res = f.param("res", lead + (M, Nn), dt)
                z = f.let(f"R.add({z}, {res})" if self.p(0.7) else f"R.add({res}, {z})", lead + (M, Nn), dt)
        return z

    def post_chain(self, f: Func, c: Chain, out: str) -> str:
        """Output projection after a merged BSNH output: matmul + bias [+ residual] [layer_norm]."""
        d = mul(c.N, c.Hv)
        D = self.pick([32, 64])
        w = f.param("wo", (d, D), c.dtype)
        y = f.let(f"R.matmul({out}, {w})", (c.B, c.S, D), c.dtype)
        b = f.param("bo", (D,), c.dtype)
        y = f.let(f"R.add({y}, {b})", (c.B, c.S, D), c.dtype)
        if self.p(0.5):
            r = f.param("resid", (c.B, c.S, D), c.dtype)
            y = f.let(f"R.add({y}, {r})", (c.B, c.S, D), c.dtype)
        if self.p(0.4):
            g, bb = f.param("ln_g", (D,), c.dtype), f.param("ln_b", (D,), c.dtype)
            y = f.let(f"R.nn.layer_norm({y}, {g}, {bb}, axes=[-1], epsilon=1.0000000000000001e-05, "
                      "center=True, scale=True)", (c.B, c.S, D), c.dtype)
        return y

    # --- function / module --------------------------------------------------------------------
    def function(self, name: str) -> Func:
        dtype = self.pick(DTYPES)
        f = Func(name, dtype)
        items = ["chain"] * self.rng.randint(1, 3) + ["other"] * self.rng.choice([0, 0, 1, 2])
        self.rng.shuffle(items)
        prev = None
        for it in items:
            if it == "other":
                f.outputs.append(self.unrelated(f))
                continue
            if prev is not None and self.p(0.25):
                c = prev["cfg"]
                c = Chain(**{**c.__dict__, "tags": ["reuse"]})
                c.out = "BSNH" if self.safe else self.pick(["BSNH", "BSH"])
                c.merge = c.out == "BSNH" and self.p(0.3)
                c.cast = c.cast_scale = c.cast_softmax = self.p(0.5)
                c.scale, c.scale_swapped = self.pick(SCALES), self.p(0.3)
                c.scale_dtype = self.pick(["float32", c.dtype]) if c.cast else c.dtype
                c.bias = None
                if self.p(0.4):
                    self.choose_bias(c)
                prev["cfg_shared"] = True
                srcs = self.sources(f, c, prev)
                pc = prev["cfg"]
                if (c.forms["q"] == "BSNH" and pc.out == "BSNH" and not pc.merge and pc.Hv == c.H
                        and not c.q_perm_wrong and not prev["post"] and self.p(0.5)):
                    srcs["q"] = prev["out"]  # the previous chain's output is this one's query
                    c.tags.append("sequential")
            else:
                c = self.chain_cfg(dtype)
                srcs = self.sources(f, c, None)
            out, inner = self.emit_chain(f, c, srcs)
            if self.p(0.05):  # the same chain written twice (common subexpressions)
                f.outputs.append(self.emit_chain(f, c, srcs)[0])
                c.tags.append("duplicate")
            self.tags += c.tags
            post = c.merge and isinstance(mul(c.N, c.Hv), int) and self.p(0.5)
            if post:
                out = self.post_chain(f, c, out)
            if self.p(0.12) and inner:  # an intermediate escapes
                esc = self.pick(inner[:-1] or inner)
                if self.p(0.5):
                    f.outputs.append(esc)
                else:
                    f.outputs.append(f.let(f"R.nn.relu({esc})", None, c.dtype))
                self.tags.append("escape")
            if self.p(0.92):
                f.outputs.append(out)
            else:
                self.tags.append("dead_chain")
            prev = {"cfg": c, "srcs": srcs, "cfg_shared": False, "out": out, "post": post}
        if self.p(0.2):  # dead bindings
            for _ in range(self.rng.randint(1, 2)):
                v = self.pick(list(f.shapes))
                f.let(f"R.nn.relu({v})", None, None, name=f"dead{self.rng.randint(0, 99)}")
            self.tags.append("dead")
        if not f.outputs:
            f.outputs.append(out)
        f.outputs = list(dict.fromkeys(f.outputs))
        f.returns = list(f.outputs)
        if self.p(0.25):  # a plain binding after the block
            o = f.returns[0]
            f.tail.append(f"post = R.add({o}, {o})")
            if self.p(0.4):
                f.tail.append("post_dead = R.multiply(post, post)")
            f.returns[0] = "post"
            self.tags.append("plain_tail")
        if self.p(0.08):  # a whole chain in the plain block after the dataflow block
            f.cur = f.tail
            c = self.chain_cfg(dtype)
            out, _ = self.emit_chain(f, c, self.sources(f, c, None))
            f.returns.append(out)
            self.tags += c.tags + ["tail_chain"]
        return f

    def module(self) -> tuple[str, list]:
        names = ["main", "attn1", "attn2"]
        count = self.rng.choices([1, 2, 3], [0.6, 0.3, 0.1])[0]
        self.safe = self.p(0.5)
        if self.safe:
            self.tags.append("safe")
        funcs = [self.function(n) for n in names[:count]]
        used = set()
        for f in funcs:
            for s, _ in f.params.values():
                used |= symbols_of(s)
        decl = "".join(f'{s} = TypeVar("{s}")\n' for s in sorted(used))
        head = "# from tvm.script import ir as I\n# from tvm.script import relax as R\n\n"
        return head + decl + "@I.ir_module\nclass Module:\n" + "\n\n".join(f.text() for f in funcs) + "\n", self.tags


def generate(n: int, seed: int) -> list[dict]:
    cases = []
    for i in range(n):
        g = Generator(seed * 1_000_003 + i)
        text, tags = g.module()
        mqa = not g.p(0.15)
        cases.append({"name": f"m{i:04d}", "text": text, "mqa": mqa, "tags": sorted(set(tags))})
    return cases


# ----------------------------------------------------------------------------------------------
# TVM side (runs under --tvm-python)
# ----------------------------------------------------------------------------------------------

TOOLS = os.path.dirname(os.path.abspath(__file__))

TVM_SIDE = r'''
import json, sys, threading
import tvm_ffi
import tvm
from tvm import relax, tirx
from tvm.relax import Function
from tvm.relax.dpl.pattern import CallPattern, ExprPattern
from tvm.relax.expr_functor import PyExprMutator, mutator
import tvm.relax.backend.patterns as P
import tvm.relax.backend.cuda.cutlass as C


sys.path.insert(0, @TOOLS@)
import tvm_workspace_fix  # TVM's annotate_workspace with its KeyError fixed

tvm_workspace_fix.install()

# --- the patched rewriters (byocc's documented deviations) ---
STATE = threading.local()
R_REAL = P.R


class RProxy:
    def __getattr__(self, name):
        return getattr(R_REAL, name)

    def reshape(self, x, shape):
        if getattr(STATE, "qkv", None) is not None and not isinstance(shape, (list, tuple)):
            shape = list(shape)  # the BSH output reshape (stock passes an FFI array and raises)
            if STATE.qkv == "BSNH":
                x = R_REAL.permute_dims(x, [0, 2, 1, 3])
        return R_REAL.reshape(x, shape)


P.R = RProxy()
ORIG_MAKE = P.make_attention_rewrite_pattern
STOCK_PATTERNS = list(C._REWRITE_PATTERNS)


def repeat_patterns(root):
    out, stack = [], [root]
    while stack:
        p = stack.pop()
        if isinstance(p, CallPattern):
            op = p.op
            if isinstance(op, ExprPattern) and getattr(op.expr, "name", "") == "relax.repeat":
                out.append(p)
            stack.append(op)
            stack += list(p.args)
    return out


def sinfo_of(expr):
    bb = relax.BlockBuilder()
    with bb.function("f", []):
        with bb.dataflow():
            v = bb.emit(expr)
            bb.emit_output(v)
        bb.emit_func_output(v)
    return v.ty


EQ = tirx.expr.EQ
assert "__bool__" not in EQ.__dict__


NOTES = set()  # the deviations that fired during a patched run


def eq_bool(self):
    NOTES.add("IntImm==Var compared (stock: ValueError)")
    return bool(self.a.same_as(self.b))


def patched_make(qkv, out, with_bias, with_cast, with_kv_repeat=False):
    pattern, rw = ORIG_MAKE(qkv, out, with_bias, with_cast, with_kv_repeat)
    reps = repeat_patterns(pattern)

    def rewriter(orig, m):
        found = []
        for rp in reps:
            try:
                call = m[rp]
            except (KeyError, IndexError):
                continue
            ax = call.attrs.axis
            found.append((None if ax is None else int(ax) % 4, int(call.attrs.repeats)))
        if found:
            axes = [a for a, _ in found]
            if not (axes == [2, 2] or (axes == [1, 1] and found[0][1] == found[1][1])):
                NOTES.add("repeat not on the head axis (nor equal on the sequence axis) refused")
                return orig
        STATE.qkv = qkv
        EQ.__bool__ = eq_bool  # IntImm == Var: not equal (stock raises ValueError)
        try:
            res = rw(orig, m)
        except Exception as e:  # stock raises; byocc leaves the chain unchanged
            NOTES.add(f"{type(e).__name__} -> unchanged: " + str(e).splitlines()[0][:50])
            return orig
        finally:
            STATE.qkv = None
            del EQ.__bool__
        if res is None or res.same_as(orig):
            return orig
        try:
            si = sinfo_of(res)
        except Exception:
            NOTES.add("ill-typed replacement refused")
            return orig
        if not tvm_ffi.structural_equal(si, orig.ty):
            NOTES.add("shape-changing replacement refused")
            return orig
        if out == "BSH":
            NOTES.add("BSH output rewritten")
        return res

    return pattern, rewriter


PATCHED_PATTERNS = [patched_make(q, o, b, c) for q in ("BSNH", "BSH") for o in ("BSNH", "BSH")
                    for b in (True, False) for c in (True, False)]


ORIG_GET = C.get_patterns_with_prefix


def safe_check(check):
    def run_check(ctx):
        try:
            return check(ctx)
        except AttributeError as e:  # stock: an operand of unknown shape crashes _check_matmul
            NOTES.add("fusion check AttributeError -> rejected: " + str(e).splitlines()[0][:40])
            return False
    return run_check


def patched_get(prefix):
    return [relax.transform.FusionPattern(p.name, p.pattern, p.annotation_patterns,
                                          safe_check(p.check) if p.check is not None else None,
                                          p.attrs_getter)
            for p in ORIG_GET(prefix)]


def set_mode(patched):
    C.make_attention_rewrite_pattern = patched_make if patched else ORIG_MAKE
    C._REWRITE_PATTERNS = PATCHED_PATTERNS if patched else STOCK_PATTERNS
    C.get_patterns_with_prefix = patched_get if patched else ORIG_GET


def err(e):
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return {"error": type(e).__name__ + ": " + (lines[0] if lines else "")}


def run(text, annotate, mqa, patched):
    set_mode(patched)
    NOTES.clear()
    try:
        mod = tvm.script.from_source(text)
        return C.partition_for_cutlass(mod, annotate_codegen=annotate, use_flash_mqa=mqa).script()
    except Exception as e:
        return err(e)


jobs = json.load(open(sys.argv[1]))
out = {}
for job in jobs:
    res = {}
    try:
        res["canon"] = tvm.script.from_source(job["text"]).script()
    except Exception as e:
        res["canon"] = err(e)
        out[job["name"]] = res
        continue
    for ann in (True, False):
        key = "ann" if ann else "comp"
        res[key] = run(job["text"], ann, job["mqa"], False)
        if isinstance(res[key], dict) or job.get("patched"):
            res["patched_" + key] = run(job["text"], ann, job["mqa"], True)
            res["patched_" + key + "_notes"] = sorted(NOTES)
    checks = {}
    for key, text in job.get("byocc", {}).items():
        try:
            mod = tvm.script.from_source(text)
            relax.analysis.well_formed(mod)
            checks[key] = "ok"
        except Exception as e:
            checks[key] = err(e)["error"]
    res["tvm_parses_byocc"] = checks
    out[job["name"]] = res
json.dump(out, open(sys.argv[2], "w"))
'''


# ----------------------------------------------------------------------------------------------
# byocc side
# ----------------------------------------------------------------------------------------------


def err_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0] if lines else ''}"


def run_byocc(case: dict) -> dict:
    from byocc.ir.well_formed import well_formed
    from byocc.relax.backend.cuda.cutlass import partition_for_cutlass
    from byocc.script import from_source

    res: dict = {}
    try:
        mod = from_source(case["text"])
        res["canon"] = mod.script()
    except Exception as e:  # noqa: BLE001 - any failure is a finding
        res["canon"] = {"error": err_line(e)}
        return res
    for key, ann in (("ann", True), ("comp", False)):
        try:
            text = partition_for_cutlass(mod, annotate_codegen=ann, use_flash_mqa=case["mqa"]).script()
        except Exception as e:  # noqa: BLE001
            res[key] = {"error": err_line(e)}
            continue
        res[key] = text
        try:
            problems = well_formed(from_source(text))
            res[key + "_wf"] = "ok" if not problems else f"well_formed: {problems[0]}"
        except Exception as e:  # noqa: BLE001
            res[key + "_wf"] = f"reparse: {err_line(e)}"
    return res


def run_tvm(jobs: list[dict], python: str, workdir: str, procs: int) -> dict:
    chunks = [jobs[i::procs] for i in range(procs)]
    running = []
    for i, chunk in enumerate(chunks):
        jf, rf = os.path.join(workdir, f"jobs{i}.json"), os.path.join(workdir, f"tvm{i}.json")
        with open(jf, "w") as f:
            json.dump(chunk, f)
        with open(os.path.join(workdir, f"tvm{i}.log"), "w") as log:  # the child keeps its own handle
            running.append((subprocess.Popen([python, "-c", TVM_SIDE.replace("@TOOLS@", repr(TOOLS)), jf, rf], stderr=log), rf))
    out = {}
    for p, rf in running:
        if p.wait() != 0:
            with open(rf[:-5] + ".log") as f:
                sys.stderr.write(f.read()[-3000:])
            raise SystemExit("TVM side failed")
        with open(rf) as f:
            out.update(json.load(f))
    return out


# ----------------------------------------------------------------------------------------------
# Comparison
# ----------------------------------------------------------------------------------------------


def same(a, b) -> bool:
    return isinstance(a, str) and isinstance(b, str) and a.rstrip("\n") == b.rstrip("\n")


def first_diff(a: str, b: str) -> str:
    al, bl = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(al, bl)):
        if x != y:
            return f"line {i + 1}:\n  tvm:   {x.strip()}\n  byocc: {y.strip()}"
    return f"lengths {len(al)} vs {len(bl)}"


def signatures(text: str) -> dict:
    return {ln.split("(")[0].split()[-1]: ln.strip() for ln in text.splitlines() if ln.startswith("    def ")}


def changed_signatures(canon: str, out: str) -> list:
    """Original functions whose signature (parameters, return type) the partition changed."""
    before, after = signatures(canon), signatures(out)
    return sorted(n for n in before if n in after and after[n] != before[n])


_SHAPE_LIST = re.compile(r"(R\.[Ss]hape\(\[)([A-Za-z_][A-Za-z_0-9]*(?:, [A-Za-z_][A-Za-z_0-9]*)+)(\]\))")
_INT_TIMES_VAR = re.compile(r"\b(\d+) \* ([A-Za-z_][A-Za-z_0-9]*)\b")
# Known FuseOpsByPattern differences unrelated to the rewrites, told apart from real ones
NORMALISERS = {
    "tir_vars order": lambda t: _SHAPE_LIST.sub(lambda m: m[1] + ", ".join(sorted(m[2].split(", "))) + m[3], t),
    "4 * n vs n * 4": lambda t: _INT_TIMES_VAR.sub(r"\2 * \1", t),
}


def compare(t: dict, b: dict, prefix: str) -> tuple[bool, list]:
    """(equal, normalisations needed) over both annotate modes; equal is False when the
    outputs differ even after every normaliser."""
    needed = set()
    for k in ("ann", "comp"):
        x, y = t.get(prefix + k), b[k]
        if same(x, y):
            continue
        if not isinstance(x, str):
            return False, []
        for name, f in NORMALISERS.items():
            if same(f(x), f(y)):
                needed.add(name)
                break
        else:
            def both(z: str) -> str:
                return NORMALISERS["4 * n vs n * 4"](NORMALISERS["tir_vars order"](z))

            if not same(both(x), both(y)):
                return False, []
            needed |= set(NORMALISERS)
    return True, sorted(needed)


def classify(case: dict, b: dict, t: dict) -> tuple[str, str]:
    """(class, detail)."""
    if isinstance(t.get("canon"), dict) or isinstance(b.get("canon"), dict):
        return "invalid module", f"tvm {t.get('canon')} / byocc {b.get('canon')}"
    berr = [k for k in ("ann", "comp") if isinstance(b[k], dict)]
    if berr:
        return "byocc raised", f"{b[berr[0]]['error']} (TVM: {t[berr[0]] if isinstance(t[berr[0]], dict) else 'ok'})"
    wf = [f"{k}: {b[k + '_wf']}" for k in ("ann", "comp") if b[k + "_wf"] != "ok"]
    wf += [f"TVM parse of byocc {k}: {v}" for k, v in t.get("tvm_parses_byocc", {}).items() if v != "ok"]
    if wf:
        return "byocc output ill-formed", wf[0]
    notes = t.get("patched_ann_notes", [])
    eq_p, norm_p = compare(t, b, "patched_")
    k = next((k for k in ("ann", "comp") if not same(t.get("patched_" + k), b[k])), "ann")
    p = t.get("patched_" + k)
    pdiff = p["error"] if isinstance(p, dict) else first_diff(p, b[k])
    if any(isinstance(t[k], dict) for k in ("ann", "comp")):
        msg = next(t[k]["error"] for k in ("ann", "comp") if isinstance(t[k], dict))
        label = f"TVM raised {msg[:60]}"
        if eq_p and not norm_p:
            return f"{label} / byocc == patched TVM", "; ".join(notes)
        if eq_p:
            return f"{label} / byocc == patched TVM up to {' and '.join(norm_p)}", pdiff
        return f"{label} / byocc != patched TVM", pdiff
    eq_s, norm_s = compare(t, b, "")
    if eq_s and not norm_s:
        return "identical", ""
    k = next(k for k in ("ann", "comp") if not same(t[k], b[k]))
    if eq_s:
        return f"different: only {' and '.join(norm_s)}", first_diff(t[k], b[k])
    changed = changed_signatures(t["canon"], t[k])
    why = f"TVM changed the signature of {', '.join(changed)}; " if changed else ""
    if eq_p:
        cause = [n for n in notes if "refused" in n] or notes
        up_to = f" up to {' and '.join(norm_p)}" if norm_p else ""
        return f"different: TVM {'; '.join(cause)} / byocc == patched TVM{up_to}", why + first_diff(t[k], b[k])
    return "different", why + first_diff(t[k], b[k])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tvm-python", required=True)
    ap.add_argument("--out", default="/tmp/adiff")
    ap.add_argument("--procs", type=int, default=2, help="TVM processes")
    ap.add_argument("--only", default=None, help="comma-separated case names")
    args = ap.parse_args()

    cases = generate(args.n, args.seed)
    if args.only:
        keep = set(args.only.split(","))
        cases = [c for c in cases if c["name"] in keep]
    os.makedirs(args.out, exist_ok=True)
    with contextlib.redirect_stderr(io.StringIO()):  # FuseOps' dead-code warnings
        byocc = {c["name"]: run_byocc(c) for c in cases}
    jobs = []
    for c in cases:
        b = byocc[c["name"]]
        outs = {k: b[k] for k in ("ann", "comp") if isinstance(b.get(k), str)}
        jobs.append({"name": c["name"], "text": c["text"], "mqa": c["mqa"], "byocc": outs, "patched": True})
    with tempfile.TemporaryDirectory() as work:
        tvm = run_tvm(jobs, args.tvm_python, work, args.procs)

    counts: Counter = Counter()
    fired: Counter = Counter()
    ndiff = 0
    for c in cases:
        b, t = byocc[c["name"]], tvm[c["name"]]
        cls, detail = classify(c, b, t)
        counts[cls] += 1
        for note in t.get("patched_ann_notes", []):
            fired[note] += 1
        if cls == "identical" or cls.startswith("TVM raised") and cls.endswith("byocc == patched TVM"):
            continue
        d = os.path.join(args.out, f"diff_{ndiff}")
        ndiff += 1
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "input.relax"), "w") as f:
            f.write(c["text"])
        with open(os.path.join(d, "info.txt"), "w") as f:
            f.write(f"case {c['name']} (seed {args.seed}) use_flash_mqa={c['mqa']} tags={c['tags']}\n{cls}\n{detail}\n")
        for side, res in (("tvm", t), ("byocc", b)):
            for k in ("canon", "ann", "comp", "patched_ann", "patched_comp"):
                v = res.get(k)
                if v is not None:
                    with open(os.path.join(d, f"{side}.{k}.txt"), "w") as f:
                        f.write(v if isinstance(v, str) else v["error"] + "\n")
        print(f"{c['name']}: {cls}: {detail.splitlines()[0] if detail else ''} -> {d}")

    width = max(len(k) for k in counts)
    print(f"\n{'class':<{width}}  count")
    print(f"{'-' * width}  -----")
    for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"{k:<{width}}  {v:5d}")
    print(f"{'total':<{width}}  {sum(counts.values()):5d}")
    if fired:
        print("\npatched-TVM deviations that fired (modules):")
        for k, v in sorted(fired.items(), key=lambda kv: -kv[1]):
            print(f"  {v:5d}  {k}")
    canon = [c["name"] for c in cases if isinstance(tvm[c["name"]].get("canon"), str)
             and not same(tvm[c["name"]]["canon"], byocc[c["name"]].get("canon"))]
    print(f"inputs whose parse+print differs between byocc and TVM: {len(canon)} {canon[:10]}")
    rewritten = sum(1 for c in cases if isinstance(byocc[c["name"]].get("ann"), str)
                    and "R.nn.attention" in byocc[c["name"]]["ann"])
    ident_attn = sum(1 for c in cases if classify(c, byocc[c["name"]], tvm[c["name"]])[0] == "identical"
                     and "R.nn.attention" in byocc[c["name"]]["ann"])
    print(f"modules where byocc formed an attention call: {rewritten} (identical to TVM: {ident_attn}); "
          f"mismatches under {args.out}")
    bad = sum(v for k, v in counts.items() if not (k == "identical" or k.endswith("byocc == patched TVM")))
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
