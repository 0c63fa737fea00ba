"""Arguments and results around the interpreter: binding named arrays to parameters,
random inputs, and comparing two runs with per-dtype tolerances (``byocc run``/``verify``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from byocc.ir import Function
from byocc.ir import InterpretError
from byocc.ir import PrimStructInfo
from byocc.ir import ShapeStructInfo
from byocc.ir import TensorStructInfo
from byocc.ir import TirVar
from byocc.ir import TupleStructInfo
from byocc.ir import struct_info_vars

from .values import ShapeValue
from .values import describe

#: (rtol, atol) per dtype when comparing a partitioned run with the original; float16
#: follows TVM's 1e-2 (docs/codegen.md#gpu-test-matrix). Integers and bools compare exactly.
TOLERANCES = {
    "float64": (1e-7, 1e-7),
    "float32": (1e-5, 1e-5),
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
}
_FP8_TOLERANCE = (1.25e-1, 1.25e-1)

#: (rtol, atol) per dtype when comparing the built library on the GPU with the numpy
#: reference (``verify --device cuda``, docs/runtime.md#tolerances): float16 and bfloat16 as
#: above (the kernels accumulate in float32, the reference in float64, both round each op's
#: result); float32 1e-4 (float32 accumulation in another order, float32 transcendental
#: functions); float64 1e-9 (CuPy's reductions sum in another order).
DEVICE_TOLERANCES = {
    "float64": (1e-9, 1e-9),
    "float32": (1e-4, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
}


def tolerance(dtype: str, table: dict | None = None) -> tuple[float, float]:
    """(rtol, atol) for comparing values of ``dtype`` (from ``table``, default
    :data:`TOLERANCES`); (0, 0) for integers and bools."""
    table = TOLERANCES if table is None else table
    if dtype in table:
        return table[dtype]
    if dtype.startswith(("float8", "float4")):
        return _FP8_TOLERANCE
    return (0.0, 0.0)


def bind_arguments(func: Function, arrays: Mapping[str, Any], what: str = "inputs") -> list:
    """Order ``arrays`` as ``func``'s parameters: by name when every parameter has an
    array of its name, else by position when the counts agree and no name matches."""
    params = func.params
    names = [p.name_hint for p in params]
    keys = list(arrays)
    if all(n in arrays for n in names):
        extra = [k for k in keys if k not in names]
        if extra:
            raise InterpretError(f"{what}: no parameter named {', '.join(map(repr, extra))} "
                                 f"(parameters: {', '.join(names)})")
        return [arrays[n] for n in names]
    matching = [k for k in keys if k in names]
    if len(keys) == len(names) and not matching:
        return [arrays[k] for k in keys]
    missing = [n for n in names if n not in arrays]
    raise InterpretError(
        f"{what}: cannot bind {len(keys)} arrays to {len(names)} parameters; missing "
        f"{', '.join(map(repr, missing))}",
        notes=(f"parameters: {', '.join(names)}; arrays: {', '.join(keys) or 'none'}",
               ("name the arrays after the parameters, or give exactly one array per parameter "
               "(matched by position when no name matches)")))


def random_arguments(func: Function, seed: int, dims: Mapping[str, int] | None = None) -> dict:
    """Random values for every parameter, keyed by parameter name.

    Floats are standard normal, integers uniform in [0, 4), bools fair coins. A symbolic
    dimension takes the value ``dims[name]`` if given, else a random value in [10, 50)
    (the range TVM's tests draw from); one variable gets one value across parameters.
    """
    import numpy as np

    from byocc.ops.reference import np_dtype

    rng = np.random.default_rng(seed)
    chosen: dict = {}
    fixed = dict(dims or {})
    for p in func.params:
        for v in struct_info_vars(p.struct_info):
            if v not in chosen:
                chosen[v] = int(fixed.get(v.name, rng.integers(10, 50)))
    needed = sum(_value_bytes(p.struct_info, chosen, p.name_hint) for p in func.params)
    check_memory(needed, "the random inputs")
    return {p.name_hint: _random_value(p.struct_info, chosen, rng, np, np_dtype, p.name_hint)
            for p in func.params}


def available_memory() -> int | None:
    """Bytes of memory this process can still get (MemAvailable), or None if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import os

        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def format_bytes(n: float) -> str:
    """``n`` bytes as people read it: ``5.8 TiB``, ``12 KiB``, ``100 B``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} EiB"


def check_memory(needed: int, what: str) -> None:
    """Refuse up front (InterpretError) work that needs more memory than is available."""
    available = available_memory()
    if available is not None and needed > available:
        raise InterpretError(f"{what} would need {format_bytes(needed)} of memory; this machine "
                             f"has {format_bytes(available)} available",
                             notes=("give smaller --dim values, or --inputs",))


def _value_bytes(si, chosen: dict, name: str) -> int:
    from byocc.ir.arith import eval_dim
    from byocc.ops.reference import np_dtype

    if isinstance(si, TensorStructInfo) and si.shape is not None and si.dtype is not None:
        size = 1
        for d in si.shape:
            size *= max(int(eval_dim(d, chosen)), 0)
        return size * np_dtype(si.dtype).itemsize
    if isinstance(si, TupleStructInfo):
        return sum(_value_bytes(f, chosen, name) for f in si.fields)
    return 0


#: Random values are drawn in chunks of this many elements, straight into an array of the
#: parameter's own dtype (no float64 copy of a float16 input).
_CHUNK = 1 << 20


def _random_value(si, chosen: dict, rng, np, np_dtype, name: str):
    from byocc.ir.arith import eval_dim

    if isinstance(si, TensorStructInfo):
        if si.shape is None or si.dtype is None:
            raise InterpretError(f"cannot make a random value for {name!r}: its shape or dtype "
                                 "is unknown; give --inputs")
        shape = tuple(eval_dim(d, chosen) for d in si.shape)
        dt = np_dtype(si.dtype)
        out = np.empty(shape, dtype=dt)
        flat = out.reshape(-1)
        # The draws are the ones one call for the whole array would make, chunk by chunk.
        for start in range(0, flat.size, _CHUNK):
            n = min(_CHUNK, flat.size - start)
            if dt == np.bool_:
                flat[start:start + n] = rng.integers(0, 2, size=n).astype(bool)
            elif dt.kind in "iu":
                flat[start:start + n] = rng.integers(0, 4, size=n).astype(dt)
            else:
                flat[start:start + n] = rng.standard_normal(n).astype(dt)
        return out
    if isinstance(si, TupleStructInfo):
        return tuple(_random_value(f, chosen, rng, np, np_dtype, name) for f in si.fields)
    if isinstance(si, ShapeStructInfo) and si.values is not None:
        return ShapeValue(eval_dim(d, chosen) for d in si.values)
    if isinstance(si, PrimStructInfo):
        if isinstance(si.value, TirVar):
            return chosen.get(si.value, int(rng.integers(10, 50)))
        if si.value is not None:
            return si.value
        return float(rng.standard_normal()) if si.dtype.startswith("float") else int(rng.integers(0, 4))
    raise InterpretError(f"cannot make a random value for {name!r} of this type; give --inputs")


def compute_dtype(module: Any) -> str | None:
    """The least precise floating dtype any tensor of ``module``'s Relax functions has (a
    parameter, a binding or a call's result), or None when it has none: a model converted to
    float16 (``partition --dtype``) computes in float16 even where its outputs are float32, so
    its outputs are judged with float16's tolerance (docs/runtime.md#tolerances)."""
    from byocc.ir import Function
    from byocc.ir import TensorStructInfo
    from byocc.ir.analysis import post_order_visit

    seen: set[str] = set()

    def visit(expr: Any) -> None:
        si = getattr(expr, "struct_info", None)
        if isinstance(si, TensorStructInfo) and si.dtype and si.dtype.startswith(("float", "bfloat")):
            seen.add(si.dtype)

    for _, func in module.functions_items():
        if isinstance(func, Function):
            post_order_visit(func, visit)
    if not seen:
        return None
    return max(sorted(seen), key=lambda dt: tolerance(dt, DEVICE_TOLERANCES)[0])


def compare(expected: Any, actual: Any, tolerances: dict | None = None, scale_atol: bool = False,
            floor: str | None = None) -> list[dict]:
    """Compare two results leaf by leaf. Returns one record per output: ``index``,
    ``shape``, ``dtype``, ``max_abs``, ``max_rel``, ``rtol``, ``atol``, ``ok`` and, for
    arrays, ``compared`` (the elements not NaN on both sides) and, when some differ,
    ``first_bad`` (the first such element in row-major order: its index, both values).

    ``scale_atol``: the absolute tolerance is ``atol`` times the output's largest finite
    magnitude (at least 1), so an element that cancels to near zero is judged at the scale
    of the output, not of itself (``verify --device``: other rounding, same math).

    ``floor``: a floating dtype whose tolerance is the least a floating output gets (the
    dtype the model computes in, :func:`compute_dtype`); the record's ``tol_dtype`` names the
    dtype whose tolerance applied."""
    import numpy as np

    from .values import flatten_outputs

    exp, act = flatten_outputs(expected), flatten_outputs(actual)
    if len(exp) != len(act):
        raise InterpretError(f"the results have {len(exp)} and {len(act)} outputs")
    records = []
    for i, (e, a) in enumerate(zip(exp, act)):
        if not isinstance(e, np.ndarray) or not isinstance(a, np.ndarray):
            ok = type(e) is type(a) and e == a
            records.append({"index": i, "shape": None, "dtype": type(e).__name__, "max_abs": 0.0 if ok else float("inf"),
                                "max_rel": 0.0 if ok else float("inf"), "rtol": 0.0, "atol": 0.0, "ok": bool(ok),
                                "note": "" if ok else f"{describe(e)} != {describe(a)}"})
            continue
        from byocc.ops.reference import dtype_name

        dt = dtype_name(e.dtype)
        rtol, atol = tolerance(dt, tolerances)
        tol_dtype = dt
        if floor is not None and dt.startswith(("float", "bfloat")):
            frtol, fatol = tolerance(floor, tolerances)
            if frtol > rtol:
                rtol, atol, tol_dtype = frtol, fatol, floor
        rec = {"index": i, "shape": tuple(e.shape), "dtype": dt, "rtol": rtol, "atol": atol, "note": "",
               "tol_dtype": tol_dtype}
        if e.shape != a.shape or e.dtype != a.dtype:
            rec.update(max_abs=float("inf"), max_rel=float("inf"), ok=False,
                       note=f"expected {describe(e)}, got {describe(a)}")
            records.append(rec)
            continue
        ef, af = e.astype(np.float64), a.astype(np.float64)
        if scale_atol and ef.size:
            finite = np.abs(ef[np.isfinite(ef)])
            atol = atol * max(1.0, float(finite.max()) if finite.size else 1.0)
            rec["atol"] = atol
        same_nan = np.isnan(ef) & np.isnan(af)
        same_inf = np.isinf(ef) & (ef == af)
        with np.errstate(invalid="ignore"):
            diff = np.where(same_nan | same_inf, 0.0, np.abs(ef - af))
        diff = np.where(np.isnan(diff), np.inf, diff)
        denom = np.abs(ef)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(diff == 0, 0.0, diff / denom)
        bad = diff > atol + rtol * denom
        rec["compared"] = int(diff.size - same_nan.sum())  # NaN on both sides compares nothing
        rec.update(max_abs=float(diff.max()) if diff.size else 0.0,
                   max_rel=float(np.nan_to_num(rel, nan=np.inf).max()) if rel.size else 0.0,
                   ok=not bool(bad.any()), mismatches=int(bad.sum()))
        if not rec["ok"]:
            flat = int(np.argmax(bad.reshape(-1)))
            where = tuple(int(i) for i in np.unravel_index(flat, bad.shape)) if bad.ndim else ()
            rec["first_bad"] = {"index": where, "expected": float(ef.reshape(-1)[flat]),
                                "actual": float(af.reshape(-1)[flat])}
        records.append(rec)
    return records


__all__ = [
    "DEVICE_TOLERANCES", "TOLERANCES", "available_memory", "bind_arguments", "check_memory", "compare", "compute_dtype", "format_bytes",
    "random_arguments", "tolerance",
]
