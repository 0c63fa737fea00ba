"""byocc's standard-form ``rms_norm`` prim_func: the TIR text TVM's LegalizeOps gives
``R.nn.rms_norm`` (topi's rms_norm), written by :func:`rms_norm_prim_func` and recognised by
:func:`standard_rms_norm` (which reads its shape, dtype and epsilon back and checks that writing
them gives the same text, token for token).

byocc does not model TIR: a prim_func is text (:class:`byocc.ir.tir.PrimFunc`). This form is
the one exception the text reader (``byocc/text/parser.py``) and the interpreter accept, so
byocc reads back and runs what ``byocc partition --recompose`` writes for the cutlass backend
(:mod:`byocc.transform.rms_norm_tir` lowers the op to it). It lives in the IR layer because
the reader, the interpreter and the pass all need it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .tir import PrimFunc

#: the dtypes lowered (those of byocc's norm kernels, byocc/backends/cuda/norm.py)
DTYPES = ("float16", "bfloat16", "float32")


def _index_names(rank: int) -> list[str]:
    """The loop variables: TVM's ``bsz, i, k`` for rank 3; ``ax0 .. k`` otherwise."""
    if rank == 3:
        return ["bsz", "i", "k"]
    return [f"ax{j}" for j in range(rank - 1)] + ["k"]


def _dims(shape: tuple[int, ...]) -> str:
    inner = ", ".join(f"T.int64({d})" for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


def _cast32(dtype: str, expr: str) -> str:
    return expr if dtype == "float32" else f'T.Cast("float32", {expr})'


def _num(x: float) -> str:
    """A float constant as TVM prints it (17 significant digits, a point or exponent)."""
    text = format(float(x), ".17g")
    return text if any(c in text for c in ".en") else text + ".0"


def rms_norm_prim_func(shape: tuple[int, ...], dtype: str, eps: float, name: str = "rms_norm") -> PrimFunc:
    """The standard-form prim_func of ``rms_norm(x, w, axes=[-1], epsilon=eps)`` for ``x`` of
    static ``shape`` (rank 2 or more) and ``dtype``, ``w`` of shape ``(shape[-1],)``: a sum
    of squares in fp32 (``Ared_temp``), then ``w * (x / sqrt(sum * (1/N) + eps))`` cast back,
    as TVM's legalization of ``R.nn.rms_norm`` prints it (private; ``name`` is its name)."""
    if len(shape) < 2 or not all(isinstance(d, int) and d > 0 for d in shape):
        raise ValueError(f"rms_norm_prim_func: a static shape of rank >= 2, not {shape}")
    idx = _index_names(len(shape))
    v = [f"v_{n}" for n in idx]
    rows, n = shape[:-1], shape[-1]
    a = f"A[{', '.join(v)}]"
    red = f"Ared_temp[{', '.join(v[:-1])}]"
    grid = f"T.grid({', '.join(f'T.int64({d})' for d in shape)})"
    loops = ", ".join(idx)
    lines = [
        "@T.prim_func(private=True)",
        f'def {name}(A: T.Buffer({_dims(shape)}, "{dtype}"),',
        f'             B: T.Buffer({_dims((n,))}, "{dtype}"),',
        f'             rms_norm: T.Buffer({_dims(shape)}, "{dtype}")):',
        '    T.func_attr({"tir.noalias": True})',
        f"    Ared_temp = T.alloc_buffer({_dims(rows)})",
        f"    for {loops} in {grid}:",
        '        with T.sblock("Ared_temp"):',
        f'            {", ".join(v)} = T.axis.remap("{"S" * len(rows)}R", [{loops}])',
        "            with T.init():",
        f"                {red} = T.float32(0.0)",
        f"            {red} = {red} + {_cast32(dtype, a)} * {_cast32(dtype, a)}",
        f"    for {loops} in {grid}:",
        '        with T.sblock("rms_norm"):',
        f'            {", ".join(v)} = T.axis.remap("{"S" * len(shape)}", [{loops}])',
    ]
    value = (f"{_cast32(dtype, 'B[' + v[-1] + ']')} * ({_cast32(dtype, a)} / T.sqrt({red} * "
             f"T.float32({_num(1.0 / n)}) + T.float32({_num(eps)})))")
    lines.append(f"            rms_norm[{', '.join(v)}] = "
                 + (value if dtype == "float32" else f'T.Cast("{dtype}", {value})'))
    return PrimFunc("\n".join(lines))


_BUFFER = re.compile(r'def\s+\w+\(\s*A:\s*T\.Buffer\(\((.*?)\),\s*"(\w+)"\)', re.S)
_INT = re.compile(r"T\.int64\((\d+)\)")
_F32 = re.compile(r"T\.float32\(([^()]*)\)")


@dataclass(frozen=True)
class RmsNormTir:
    """What a standard-form rms_norm prim_func computes."""

    shape: tuple[int, ...]
    dtype: str
    eps: float


def standard_rms_norm(func: PrimFunc) -> RmsNormTir | None:
    """The shape, dtype and epsilon of ``func`` when it is exactly the form
    :func:`rms_norm_prim_func` writes (its name aside), else None."""
    m = _BUFFER.search(func.source)
    if m is None or m.group(2) not in DTYPES:
        return None
    shape = tuple(int(d) for d in _INT.findall(m.group(1)))
    consts = _F32.findall(func.source)  # the epsilon is the last; the comparison checks the rest
    try:
        eps = float(consts[-1]) if consts else 0.0
    except ValueError:
        return None
    if len(shape) < 2 or not (0 < eps < float("inf")) or 0 in shape:
        return None
    try:
        want = rms_norm_prim_func(shape, m.group(2), eps)
    except ValueError:
        return None
    return RmsNormTir(shape, m.group(2), eps) if want.key == func.key else None


__all__ = ["DTYPES", "RmsNormTir", "rms_norm_prim_func", "standard_rms_norm"]
