"""Numpy references of the Relax operators (element-wise, reductions, manipulation).

Calling convention (shared with :mod:`byocc.runtime` and the ONNX constant folder):
``reference(*operands, **attrs)``. Tensor operands are numpy arrays, tuple operands lists,
shape operands tuples of ints, primitive values Python scalars; attributes come as
keywords named after the op's fields (PrimValues unwrapped). A reference returns an array
(a list of arrays for tuple-valued ops).

Numerics follow docs/codegen.md#gpu-test-matrix: float math in float64, then a cast to the
dtype the op's struct-info rule gives (float16 in, float16 out). Integer ops stay in their
integer dtype (integer ``divide`` truncates toward zero, as TVM's ``tir.Div``).

:func:`reference_table` maps op names to these functions (reductions and data movement
live in :mod:`byocc.ops.reference_tensor`, the neural-network ops in
:mod:`byocc.ops.reference_nn`); :mod:`byocc.ops.evaluate` reads it, once, when a call is
first evaluated. Numpy is imported lazily, so importing ``byocc.ops`` stays cheap.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .xp import array_module

_ML_DTYPES = {"bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
              "float8_e4m3", "float8_e3m4", "float8_e8m0fnu", "float4_e2m1fn", "float6_e2m3fn",
              "float6_e3m2fn"}


# --------------------------------------------------------------------------- dtypes
def np_dtype(dtype: str):
    """The numpy dtype of a Relax dtype string (bfloat16 and float8 through ml_dtypes)."""
    import numpy as np

    if dtype in _ML_DTYPES:
        try:
            import ml_dtypes
        except ImportError:  # pragma: no cover - ml_dtypes ships with the test environment
            from byocc.ir import UnsupportedError

            raise UnsupportedError(f"dtype {dtype} needs the ml_dtypes package") from None
        return np.dtype(getattr(ml_dtypes, dtype))
    try:
        return np.dtype(dtype)
    except TypeError:
        from byocc.ir import UnsupportedError

        raise UnsupportedError(f"dtype {dtype!r} has no numpy equivalent") from None


def dtype_name(dt) -> str:
    """The Relax spelling of a numpy dtype (``float16``, ``bool``, ``bfloat16``)."""
    import numpy as np

    name = np.dtype(dt).name
    return "bool" if name in ("bool_", "bool") else name


_IS_FLOAT: dict = {}


def is_float_dtype(dt) -> bool:
    hit = _IS_FLOAT.get(dt)
    if hit is None:
        import numpy as np

        d = np.dtype(dt)
        hit = _IS_FLOAT[dt] = d.kind == "f" or d.name in _ML_DTYPES
    return hit


def _f64(x):
    """``x`` in the dtype float math is done in when it is floating point (ints and bools
    stay as they are): float64, except on a device namespace that sets ``half_work``
    (``float32``), where float16/bfloat16/float8 inputs compute in that dtype, as the GPU
    kernels do (docs/runtime.md#tolerances)."""
    xp = array_module()

    x = xp.asarray(x)
    if is_float_dtype(x.dtype):
        return x.astype(work_dtype(x.dtype))
    return x


def work_dtype(dt) -> Any:
    """The dtype float math on values of float dtype ``dt`` is done in (:func:`_f64`)."""
    xp = array_module()
    half = getattr(xp, "half_work", None)
    if half is not None and xp.dtype(dt).itemsize <= 2:
        return xp.dtype(half)
    return xp.float64


def _cast(x, dt):
    xp = array_module()

    return xp.asarray(x).astype(dt, copy=False)


def _dtype_of(x):
    xp = array_module()

    if isinstance(x, xp.ndarray):
        return x.dtype
    if isinstance(x, bool):
        return xp.dtype(bool)
    if isinstance(x, int):
        return xp.dtype("int64")
    if isinstance(x, float):
        return xp.dtype("float64")
    return xp.asarray(x).dtype


def _binary_dtype(a, b):
    """TVM: both operands share a dtype (a bool operand is exempt) and the LHS's wins,
    unless the LHS is a bare Python scalar (a primitive value) and the RHS a tensor."""
    xp = array_module()

    if not isinstance(a, xp.ndarray) and isinstance(b, xp.ndarray):
        return b.dtype
    return _dtype_of(a)


def erf(x):
    """Element-wise erf in float64 (scipy's when installed, else ``math.erf``; a device
    array module's own, cupyx.scipy.special's for CuPy)."""
    xp = array_module()

    x = xp.asarray(x, dtype=xp.float64)
    if not _is_numpy(xp):
        return xp.erf(x)
    try:
        from scipy.special import erf as scipy_erf
    except ImportError:  # pragma: no cover - depends on the environment
        return xp.frompyfunc(math.erf, 1, 1)(x).astype(xp.float64) if x.size else x.copy()
    return scipy_erf(x)


def _is_numpy(xp) -> bool:
    return getattr(xp, "__name__", None) == "numpy"


# --------------------------------------------------------------------------- element-wise
def _fn(xp, fn: str | Callable) -> Callable:
    """``fn`` as a function: a name is looked up in the array module ``xp`` at call time."""
    return getattr(xp, fn) if isinstance(fn, str) else fn


def _arith(fn: str | Callable, exact: bool = False) -> Callable:
    """A broadcasting binary op. ``exact``: numpy's own loop is correctly rounded for two
    operands of one float dtype (add, multiply...: float32 holds float16 results with room
    for safe double rounding), so it runs directly, which is much faster."""

    def ref(a, b):
        xp = array_module()

        f = _fn(xp, fn)
        if exact and type(a) is xp.ndarray and type(b) is xp.ndarray and a.dtype == b.dtype:
            return xp.asarray(f(a, b))
        dt = _binary_dtype(a, b)
        with xp.errstate(all="ignore"):
            if is_float_dtype(dt):
                return _cast(f(_f64(a), _f64(b)), dt)
            return _cast(f(a, b), dt)

    return ref


def _compare(fn: str | Callable) -> Callable:
    def ref(a, b):
        xp = array_module()

        return xp.asarray(_fn(xp, fn)(_f64(a), _f64(b)), dtype=bool)

    return ref


def _int_divide(a, b):
    """Integer division truncating toward zero (C semantics)."""
    xp = array_module()

    a, b = xp.asarray(a), xp.asarray(b)
    with xp.errstate(divide="ignore", invalid="ignore"):
        q = xp.floor_divide(a, b)
        fix = (xp.mod(a, b) != 0) & ((a < 0) != (b < 0))
    return q + fix.astype(q.dtype)


def _divide(a, b):
    xp = array_module()

    dt = _binary_dtype(a, b)
    if is_float_dtype(dt):
        with xp.errstate(divide="ignore", invalid="ignore"):
            return _cast(xp.true_divide(_f64(a), _f64(b)), dt)
    return _cast(_int_divide(a, b), dt)


def _unary_float(fn: str | Callable) -> Callable:
    """Float math in float64, result in the input dtype (ints computed as float64 and
    cast back, as TVM's intrinsics do after promotion)."""

    def ref(x):
        xp = array_module()

        x = xp.asarray(x)
        with xp.errstate(all="ignore"):
            v = _f64(x) if is_float_dtype(x.dtype) else x.astype(xp.float64)
            return _cast(_fn(xp, fn)(v), x.dtype)

    return ref


def _unary_same(fn: str | Callable) -> Callable:
    def ref(x):
        xp = array_module()

        x = xp.asarray(x)
        return _cast(_fn(xp, fn)(_f64(x)), x.dtype)

    return ref


def _unary_bool(fn: str | Callable) -> Callable:
    def ref(x):
        xp = array_module()

        return xp.asarray(_fn(xp, fn)(_f64(x)), dtype=bool)

    return ref


def _sigmoid(x):
    """``1 / (1 + exp(-x))``: accurate to the last bits in both tails (the ``tanh`` form loses
    them to cancellation where x is very negative; exp's overflow there gives exactly 0)."""
    xp = array_module()

    with xp.errstate(over="ignore"):
        return 1.0 / (1.0 + xp.exp(-x))


def half_kernel_first(name: str, ref: Callable) -> Callable:
    """``ref``, preceded by the array namespace's one-kernel float16 form of ``name`` where it
    has one (``DeviceNamespace.half_unary``: CuPy, float16 operands); numpy and every other
    case compute as ``ref`` does."""

    def first(x):
        xp = array_module()
        fast = getattr(xp, "half_unary", None)
        out = None if fast is None else fast(name, xp.asarray(x))
        return ref(x) if out is None else out

    return first


def _rsqrt(x):
    xp = array_module()

    return 1.0 / xp.sqrt(x)


def _clip(x, a_min, a_max):
    xp = array_module()

    x = xp.asarray(x)
    return _cast(xp.clip(_f64(x), a_min, a_max), x.dtype)


def _astype(x, dtype="float32"):
    xp = array_module()

    x = xp.asarray(x)
    target = np_dtype(dtype)
    if is_float_dtype(x.dtype) and target.kind in "iu":
        # float -> int truncates toward zero (a C cast); out of range is unspecified
        with xp.errstate(invalid="ignore"):
            return xp.trunc(x.astype(xp.float64)).astype(target)
    return x.astype(target)


# --------------------------------------------------------------------------- table
def _format(fmt: str, values: tuple) -> str:
    """TVM's run-time formatting of ``R.print``/``R.assert_op`` values: ``fmt`` with ``{}``
    placeholders, or the values separated by spaces when ``fmt`` is empty."""
    xp = array_module()

    shown = [xp.asarray(v) if hasattr(v, "shape") else v for v in values]
    return (fmt or " ".join(["{}"] * len(shown))).format(*shown)


def _print(fmt: str, *values: Any) -> tuple:
    print(_format(fmt, values))
    return ()


def _assert_op(condition: Any, fmt: str, *values: Any) -> tuple:
    xp = array_module()

    if not bool(xp.asarray(condition)):
        from byocc.ir import InterpretError

        raise InterpretError("R.assert_op failed: " + (_format(fmt, values) if fmt or values else "the condition is false"))
    return ()


def _invert(x):
    xp = array_module()
    return xp.invert(xp.asarray(x))


def _table() -> dict[str, Callable[..., Any]]:
    t: dict[str, Callable[..., Any]] = {
        "add": _arith("add", exact=True), "subtract": _arith("subtract", exact=True), "multiply": _arith("multiply", exact=True),
        "divide": _divide, "floor_divide": _arith("floor_divide"), "power": _arith("power"),
        "maximum": _arith("maximum", exact=True), "minimum": _arith("minimum", exact=True), "mod": _arith("fmod"),
        "floor_mod": _arith("mod"), "log_add_exp": _arith("logaddexp"), "atan2": _arith("arctan2"),
        "logical_and": _arith("logical_and"), "logical_or": _arith("logical_or"),
        "logical_xor": _arith("logical_xor"), "bitwise_and": _arith("bitwise_and"),
        "bitwise_or": _arith("bitwise_or"), "bitwise_xor": _arith("bitwise_xor"),
        "left_shift": _arith("left_shift"), "right_shift": _arith("right_shift"),
        "equal": _compare("equal"), "not_equal": _compare("not_equal"), "less": _compare("less"),
        "less_equal": _compare("less_equal"), "greater": _compare("greater"),
        "greater_equal": _compare("greater_equal"),
        # unary
        "abs": _unary_same("abs"), "negative": _unary_same("negative"),
        "exp": _unary_float("exp"), "log": _unary_float("log"), "sqrt": _unary_float("sqrt"),
        "rsqrt": _unary_float(_rsqrt), "sin": _unary_float("sin"), "cos": _unary_float("cos"),
        "tan": _unary_float("tan"), "sinh": _unary_float("sinh"), "cosh": _unary_float("cosh"),
        "tanh": _unary_float("tanh"), "asin": _unary_float("arcsin"), "acos": _unary_float("arccos"),
        "atan": _unary_float("arctan"), "asinh": _unary_float("arcsinh"),
        "acosh": _unary_float("arccosh"), "atanh": _unary_float("arctanh"),
        "sigmoid": half_kernel_first("sigmoid", _unary_float(_sigmoid)), "erf": _unary_float(erf),
        "floor": _unary_same("floor"), "ceil": _unary_same("ceil"), "round": _unary_same("rint"),
        "trunc": _unary_same("trunc"), "sign": _unary_same("sign"), "square": _unary_same("square"),
        "isnan": _unary_bool("isnan"), "isinf": _unary_bool("isinf"),
        "isfinite": _unary_bool("isfinite"), "logical_not": _unary_bool("logical_not"),
        "bitwise_not": _invert, "clip": _clip, "astype": _astype,
        "wrap_param": _astype, "print": _print, "assert_op": _assert_op,
    }
    return {"relax." + k: v for k, v in t.items()}


def reference_table() -> dict[str, Callable[..., Any]]:
    """Every numpy reference byocc has, keyed by op name (``relax.nn.conv2d``...)."""
    from . import reference_image
    from . import reference_nn
    from . import reference_tensor

    table = _table()
    table.update(reference_tensor.table())
    table.update(reference_nn.table())
    table.update(reference_image.table())
    return table


__all__ = ["dtype_name", "erf", "is_float_dtype", "np_dtype", "reference_table"]
