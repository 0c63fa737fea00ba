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
    """``x`` as float64 when it is floating point (ints and bools stay as they are)."""
    import numpy as np

    x = np.asarray(x)
    if is_float_dtype(x.dtype):
        return x.astype(np.float64)
    return x


def _cast(x, dt):
    import numpy as np

    return np.asarray(x).astype(dt, copy=False)


def _dtype_of(x):
    import numpy as np

    if isinstance(x, np.ndarray):
        return x.dtype
    if isinstance(x, bool):
        return np.dtype(bool)
    if isinstance(x, int):
        return np.dtype("int64")
    if isinstance(x, float):
        return np.dtype("float64")
    return np.asarray(x).dtype


def _binary_dtype(a, b):
    """TVM: both operands share a dtype (a bool operand is exempt) and the LHS's wins,
    unless the LHS is a bare Python scalar (a primitive value) and the RHS a tensor."""
    import numpy as np

    if not isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return b.dtype
    return _dtype_of(a)


def erf(x):
    """Element-wise erf in float64 (scipy's when installed, else ``math.erf``)."""
    import numpy as np

    x = np.asarray(x, dtype=np.float64)
    try:
        from scipy.special import erf as scipy_erf
    except ImportError:  # pragma: no cover - depends on the environment
        return np.frompyfunc(math.erf, 1, 1)(x).astype(np.float64) if x.size else x.copy()
    return scipy_erf(x)


# --------------------------------------------------------------------------- element-wise
def _arith(fn: Callable, exact: bool = False) -> Callable:
    """A broadcasting binary op. ``exact``: numpy's own loop is correctly rounded for two
    operands of one float dtype (add, multiply...: float32 holds float16 results with room
    for safe double rounding), so it runs directly, which is much faster."""

    def ref(a, b):
        import numpy as np

        if exact and type(a) is np.ndarray and type(b) is np.ndarray and a.dtype == b.dtype:
            return np.asarray(fn(a, b))
        dt = _binary_dtype(a, b)
        with np.errstate(all="ignore"):
            if is_float_dtype(dt):
                return _cast(fn(_f64(a), _f64(b)), dt)
            return _cast(fn(a, b), dt)

    return ref


def _compare(fn: Callable) -> Callable:
    def ref(a, b):
        import numpy as np

        return np.asarray(fn(_f64(a), _f64(b)), dtype=bool)

    return ref


def _int_divide(a, b):
    """Integer division truncating toward zero (C semantics)."""
    import numpy as np

    a, b = np.asarray(a), np.asarray(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.floor_divide(a, b)
        fix = (np.mod(a, b) != 0) & ((a < 0) != (b < 0))
    return q + fix.astype(q.dtype)


def _divide(a, b):
    import numpy as np

    dt = _binary_dtype(a, b)
    if is_float_dtype(dt):
        with np.errstate(divide="ignore", invalid="ignore"):
            return _cast(np.true_divide(_f64(a), _f64(b)), dt)
    return _cast(_int_divide(a, b), dt)


def _unary_float(fn: Callable) -> Callable:
    """Float math in float64, result in the input dtype (ints computed as float64 and
    cast back, as TVM's intrinsics do after promotion)."""

    def ref(x):
        import numpy as np

        x = np.asarray(x)
        with np.errstate(all="ignore"):
            return _cast(fn(x.astype(np.float64)), x.dtype)

    return ref


def _unary_same(fn: Callable) -> Callable:
    def ref(x):
        import numpy as np

        x = np.asarray(x)
        return _cast(fn(_f64(x)), x.dtype)

    return ref


def _unary_bool(fn: Callable) -> Callable:
    def ref(x):
        import numpy as np

        return np.asarray(fn(_f64(x)), dtype=bool)

    return ref


def _sigmoid(x):
    import numpy as np

    return 0.5 * (np.tanh(0.5 * x) + 1.0)


def _rsqrt(x):
    import numpy as np

    return 1.0 / np.sqrt(x)


def _clip(x, a_min, a_max):
    import numpy as np

    x = np.asarray(x)
    return _cast(np.clip(_f64(x), a_min, a_max), x.dtype)


def _astype(x, dtype="float32"):
    import numpy as np

    x = np.asarray(x)
    target = np_dtype(dtype)
    if is_float_dtype(x.dtype) and target.kind in "iu":
        # float -> int truncates toward zero (a C cast); out of range is unspecified
        with np.errstate(invalid="ignore"):
            return np.trunc(x.astype(np.float64)).astype(target)
    return x.astype(target)


# --------------------------------------------------------------------------- table
def _format(fmt: str, values: tuple) -> str:
    """TVM's run-time formatting of ``R.print``/``R.assert_op`` values: ``fmt`` with ``{}``
    placeholders, or the values separated by spaces when ``fmt`` is empty."""
    import numpy as np

    shown = [np.asarray(v) if hasattr(v, "shape") else v for v in values]
    return (fmt or " ".join(["{}"] * len(shown))).format(*shown)


def _print(fmt: str, *values: Any) -> tuple:
    print(_format(fmt, values))
    return ()


def _assert_op(condition: Any, fmt: str, *values: Any) -> tuple:
    import numpy as np

    if not bool(np.asarray(condition)):
        from byocc.ir import InterpretError

        raise InterpretError("R.assert_op failed: " + (_format(fmt, values) if fmt or values else "the condition is false"))
    return ()


def _table() -> dict[str, Callable[..., Any]]:
    import numpy as np

    t: dict[str, Callable[..., Any]] = {
        "add": _arith(np.add, exact=True), "subtract": _arith(np.subtract, exact=True), "multiply": _arith(np.multiply, exact=True),
        "divide": _divide, "floor_divide": _arith(np.floor_divide), "power": _arith(np.power),
        "maximum": _arith(np.maximum, exact=True), "minimum": _arith(np.minimum, exact=True), "mod": _arith(np.fmod),
        "floor_mod": _arith(np.mod), "log_add_exp": _arith(np.logaddexp), "atan2": _arith(np.arctan2),
        "logical_and": _arith(np.logical_and), "logical_or": _arith(np.logical_or),
        "logical_xor": _arith(np.logical_xor), "bitwise_and": _arith(np.bitwise_and),
        "bitwise_or": _arith(np.bitwise_or), "bitwise_xor": _arith(np.bitwise_xor),
        "left_shift": _arith(np.left_shift), "right_shift": _arith(np.right_shift),
        "equal": _compare(np.equal), "not_equal": _compare(np.not_equal), "less": _compare(np.less),
        "less_equal": _compare(np.less_equal), "greater": _compare(np.greater),
        "greater_equal": _compare(np.greater_equal),
        # unary
        "abs": _unary_same(np.abs), "negative": _unary_same(np.negative),
        "exp": _unary_float(np.exp), "log": _unary_float(np.log), "sqrt": _unary_float(np.sqrt),
        "rsqrt": _unary_float(_rsqrt), "sin": _unary_float(np.sin), "cos": _unary_float(np.cos),
        "tan": _unary_float(np.tan), "sinh": _unary_float(np.sinh), "cosh": _unary_float(np.cosh),
        "tanh": _unary_float(np.tanh), "asin": _unary_float(np.arcsin), "acos": _unary_float(np.arccos),
        "atan": _unary_float(np.arctan), "asinh": _unary_float(np.arcsinh),
        "acosh": _unary_float(np.arccosh), "atanh": _unary_float(np.arctanh),
        "sigmoid": _unary_float(_sigmoid), "erf": _unary_float(erf),
        "floor": _unary_same(np.floor), "ceil": _unary_same(np.ceil), "round": _unary_same(np.rint),
        "trunc": _unary_same(np.trunc), "sign": _unary_same(np.sign), "square": _unary_same(np.square),
        "isnan": _unary_bool(np.isnan), "isinf": _unary_bool(np.isinf),
        "isfinite": _unary_bool(np.isfinite), "logical_not": _unary_bool(np.logical_not),
        "bitwise_not": lambda x: np.invert(np.asarray(x)), "clip": _clip, "astype": _astype,
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
