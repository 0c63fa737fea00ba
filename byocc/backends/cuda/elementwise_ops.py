"""The op table of the fused elementwise kernels (docs/codegen.md#elementwise-composites):
:data:`SUPPORTED_OPS` maps a Relax op to the emitter of its C++ expression, and the helpers the
emitters share (arithmetic types, literals, integer wrapping). :mod:`.elementwise` reads a
composite's body and calls these emitters binding by binding.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..codegen import CodegenError
from ..dtypes import dtype as dtype_row
from .generic import ctype


class Unsupported(Exception):
    """An op of the table applied to a dtype it has no kernel for."""


FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int8", "uint8", "int16", "int32", "int64")


def compute_type(dtype: str) -> str:
    """C++ arithmetic type of a value of ``dtype`` (``Num<T>::C`` in byocc_generic.cuh)."""
    if dtype in ("float16", "bfloat16", "float32"):
        return "float"
    if dtype == "float64":
        return "double"
    if dtype in INTS:
        return "int64_t"
    if dtype == "bool":
        return "bool"
    raise CodegenError(f"dtype {dtype} is not supported by elementwise kernels")


def _is_float(dtype: str) -> bool:
    return dtype in FLOATS


def _fn(name: str, dtype: str) -> str:
    """The C math function for a float value: ``expf`` for fp32 arithmetic, ``exp`` for fp64."""
    return name + ("f" if compute_type(dtype) == "float" else "")


def literal(value: Any, dtype: str) -> str:
    """A C++ literal of ``value`` in the arithmetic type of ``dtype``."""
    ct = compute_type(dtype)
    if ct == "bool":
        return "true" if bool(value) else "false"
    if ct == "int64_t":
        v = int(value)
        return f"int64_t({v}LL)" if v != -(2 ** 63) else "INT64_MIN"
    v = float(value)
    if math.isnan(v):
        text = "NAN"
    elif math.isinf(v):
        text = "INFINITY" if v > 0 else "(-INFINITY)"
    else:
        text = repr(v)
    return f"{ct}({text})"


# --------------------------------------------------------------------------- op table
# Each emitter: (args: list of C expressions, arg dtypes, result dtype, attrs) -> C expression
# in the result's arithmetic type.
Emitter = Callable[[list, list, str, Any], str]


def _wrap(expr: str, dtype: str) -> str:
    if dtype in INTS:
        return f"ew_wrap<{ctype(dtype)}>({expr})"
    return expr


def _arith(op: str) -> Emitter:
    def emit(a, dts, dt, attrs):
        if dt == "bool":
            raise Unsupported(f"bool arithmetic ({op})")
        return _wrap(f"({a[0]} {op} {a[1]})", dt)
    return emit


def _float_binary(name: str) -> Emitter:
    def emit(a, dts, dt, attrs):
        if not _is_float(dt):
            raise Unsupported(f"{name} on {dt}")
        return f"{_fn(name, dt)}({a[0]}, {a[1]})"
    return emit


def _int_or_float(float_expr: Callable[[list, str], str], int_fn: str, what: str) -> Emitter:
    """Division-like ops: ``float_expr(args, dtype)`` on floats, byocc's ``int_fn`` helper
    (defined for every signedness, wrapped to the type) on integers, and no bool form."""
    def emit(a, dts, dt, attrs):
        if _is_float(dt):
            return float_expr(a, dt)
        if dt == "bool":
            raise Unsupported(f"bool {what}")
        return _wrap(f"{int_fn}({a[0]}, {a[1]})", dt)
    return emit


_divide = _int_or_float(lambda a, dt: f"({a[0]} / {a[1]})", "ew_idiv", "division")
_floor_divide = _int_or_float(lambda a, dt: f"{_fn('floor', dt)}({a[0]} / {a[1]})", "ew_ifloordiv",
                              "division")
_mod = _int_or_float(lambda a, dt: f"{_fn('fmod', dt)}({a[0]}, {a[1]})", "ew_imod", "mod")
_floor_mod = _int_or_float(lambda a, dt: f"ew_floormod({a[0]}, {a[1]})", "ew_ifloormod", "mod")
_power = _int_or_float(lambda a, dt: f"{_fn('pow', dt)}({a[0]}, {a[1]})", "ew_ipow", "power")


def _minmax(name: str) -> Emitter:
    def emit(a, dts, dt, attrs):
        return f"ew_{name}({a[0]}, {a[1]})"
    return emit


def _log_add_exp(a, dts, dt, attrs):
    if not _is_float(dt):
        raise Unsupported(f"log_add_exp on {dt}")
    return f"ew_logaddexp({a[0]}, {a[1]})"


def _logical(op: str) -> Emitter:
    def emit(a, dts, dt, attrs):
        return f"static_cast<{compute_type(dt)}>(({a[0]} != 0) {op} ({a[1]} != 0))"
    return emit


def _bitwise(op: str) -> Emitter:
    def emit(a, dts, dt, attrs):
        if _is_float(dt):
            raise Unsupported(f"bitwise op on {dt}")
        if dt == "bool":
            return f"static_cast<bool>({a[0]} {op} {a[1]})"
        return _wrap(f"({a[0]} {op} {a[1]})", dt)
    return emit


def _shift(name: str) -> Emitter:
    def emit(a, dts, dt, attrs):
        if dt not in INTS:
            raise Unsupported(f"{name} on {dt}")
        return _wrap(f"ew_{name}({a[0]}, {a[1]}, {dtype_row(dt).bits})", dt)
    return emit


def _compare(op: str) -> Emitter:
    def emit(a, dts, dt, attrs):
        return f"({a[0]} {op} {a[1]})"
    return emit


def _unary_float(name: str, template: str | None = None) -> Emitter:
    def emit(a, dts, dt, attrs):
        if not _is_float(dt):
            raise Unsupported(f"{name} on {dt}")
        ct = compute_type(dt)
        if template is not None:
            return template.format(x=a[0], T=ct, f="f" if ct == "float" else "")
        return f"{_fn(name, dt)}({a[0]})"
    return emit


def _unary_int_identity(name: str) -> Emitter:
    def emit(a, dts, dt, attrs):
        if _is_float(dt):
            return f"{_fn(name, dt)}({a[0]})"
        return a[0]
    return emit


def _abs(a, dts, dt, attrs):
    if _is_float(dt):
        return f"{_fn('fabs', dt)}({a[0]})"
    if dt == "bool":
        return a[0]
    return _wrap(f"({a[0]} < 0 ? -{a[0]} : {a[0]})", dt)


def _negative(a, dts, dt, attrs):
    if dt == "bool":
        raise Unsupported("negative on bool")
    return _wrap(f"(-{a[0]})", dt)


def _sign(a, dts, dt, attrs):
    ct = compute_type(dt)
    if _is_float(dt):
        return f"({a[0]} > {ct}(0) ? {ct}(1) : ({a[0]} < {ct}(0) ? {ct}(-1) : {a[0]}))"
    if dt == "bool":
        return a[0]
    return f"static_cast<int64_t>(({a[0]} > 0) - ({a[0]} < 0))"


def _square(a, dts, dt, attrs):
    if dt == "bool":
        return a[0]
    return _wrap(f"({a[0]} * {a[0]})", dt)


def _check(name: str) -> Emitter:
    def emit(a, dts, dt, attrs):
        src = dts[0]
        if _is_float(src):
            return f"static_cast<{compute_type(dt)}>({name}({a[0]}))"
        return f"static_cast<{compute_type(dt)}>({'true' if name == 'isfinite' else 'false'})"
    return emit


def _logical_not(a, dts, dt, attrs):
    return f"static_cast<{compute_type(dt)}>(!({a[0]} != 0))"


def _bitwise_not(a, dts, dt, attrs):
    if dt == "bool":
        return f"(!{a[0]})"
    if dt not in INTS:
        raise Unsupported(f"bitwise_not on {dt}")
    return _wrap(f"(~{a[0]})", dt)


def _clip(a, dts, dt, attrs):
    return f"ew_clip({a[0]}, {a[1]}, {a[2]})"


def _astype(a, dts, dt, attrs):
    return f"ew_cast<{ctype(dt)}>({a[0]})"


def _where(a, dts, dt, attrs):
    return f"({a[0]} ? {a[1]} : {a[2]})"


def _relu(a, dts, dt, attrs):
    ct = compute_type(dt)
    return f"({a[0]} < {ct}(0) ? {ct}(0) : {a[0]})"


def _leakyrelu(a, dts, dt, attrs):
    if not _is_float(dt):
        raise Unsupported(f"leakyrelu on {dt}")
    alpha = literal(attrs.get("alpha", 0.01), dt)
    return f"({a[0]} >= 0 ? {a[0]} : {a[0]} * {alpha})"


def _softplus(a, dts, dt, attrs):
    if not _is_float(dt):
        raise Unsupported(f"softplus on {dt}")
    beta = literal(attrs.get("beta", 1.0), dt)
    thr = literal(attrs.get("threshold", 20.0), dt)
    f = "f" if compute_type(dt) == "float" else ""
    return f"({beta} * {a[0]} > {thr} ? {a[0]} : log1p{f}(exp{f}({beta} * {a[0]})) / {beta})"


_SIGMOID = "({T}(0.5) * (tanh{f}({T}(0.5) * {x}) + {T}(1)))"

SUPPORTED_OPS: dict[str, Emitter] = {
    "relax.add": _arith("+"), "relax.subtract": _arith("-"), "relax.multiply": _arith("*"),
    "relax.divide": _divide, "relax.floor_divide": _floor_divide, "relax.power": _power,
    "relax.maximum": _minmax("max"), "relax.minimum": _minmax("min"), "relax.mod": _mod,
    "relax.floor_mod": _floor_mod, "relax.log_add_exp": _log_add_exp,
    "relax.atan2": _float_binary("atan2"),
    "relax.logical_and": _logical("&&"), "relax.logical_or": _logical("||"),
    "relax.logical_xor": _logical("!="),
    "relax.bitwise_and": _bitwise("&"), "relax.bitwise_or": _bitwise("|"),
    "relax.bitwise_xor": _bitwise("^"),
    "relax.left_shift": _shift("shl"), "relax.right_shift": _shift("shr"),
    "relax.equal": _compare("=="), "relax.not_equal": _compare("!="), "relax.less": _compare("<"),
    "relax.less_equal": _compare("<="), "relax.greater": _compare(">"),
    "relax.greater_equal": _compare(">="),
    "relax.exp": _unary_float("exp"), "relax.log": _unary_float("log"),
    "relax.sqrt": _unary_float("sqrt"), "relax.rsqrt": _unary_float("rsqrt", "({T}(1) / sqrt{f}({x}))"),
    "relax.sin": _unary_float("sin"), "relax.cos": _unary_float("cos"), "relax.tan": _unary_float("tan"),
    "relax.sinh": _unary_float("sinh"), "relax.cosh": _unary_float("cosh"),
    "relax.tanh": _unary_float("tanh"), "relax.asin": _unary_float("asin"),
    "relax.acos": _unary_float("acos"), "relax.atan": _unary_float("atan"),
    "relax.asinh": _unary_float("asinh"), "relax.acosh": _unary_float("acosh"),
    "relax.atanh": _unary_float("atanh"), "relax.erf": _unary_float("erf"),
    "relax.sigmoid": _unary_float("sigmoid", _SIGMOID),
    "relax.abs": _abs, "relax.negative": _negative, "relax.sign": _sign, "relax.square": _square,
    "relax.floor": _unary_int_identity("floor"), "relax.ceil": _unary_int_identity("ceil"),
    "relax.round": _unary_int_identity("rint"), "relax.trunc": _unary_int_identity("trunc"),
    "relax.isnan": _check("isnan"), "relax.isinf": _check("isinf"), "relax.isfinite": _check("isfinite"),
    "relax.logical_not": _logical_not, "relax.bitwise_not": _bitwise_not,
    "relax.clip": _clip, "relax.astype": _astype, "relax.wrap_param": _astype, "relax.where": _where,
    "relax.nn.relu": _relu,
    "relax.nn.gelu": _unary_float("gelu", "({T}(0.5) * {x} * ({T}(1) + erf{f}({x} * {T}(0.70710678118654752440))))"),
    "relax.nn.gelu_tanh": _unary_float("gelu_tanh", "({T}(0.5) * {x} * ({T}(1) + tanh{f}({T}(0.79788456080286535588) * ({x} + {T}(0.044715) * {x} * {x} * {x}))))"),
    "relax.nn.silu": _unary_float("silu", "({x} * " + _SIGMOID + ")"),
    "relax.nn.selu": _unary_float("selu", "({T}(1.0507009873554805) * ({x} > {T}(0) ? {x} : {T}(1.6732632423543772) * expm1{f}({x} < {T}(0) ? {x} : {T}(0))))"),
    "relax.nn.leakyrelu": _leakyrelu, "relax.nn.softplus": _softplus,
}


__all__ = ["Emitter", "FLOATS", "INTS", "SUPPORTED_OPS", "Unsupported", "compute_type", "literal"]
