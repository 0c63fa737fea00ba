"""Numpy reference of ``relax.image.resize2d`` (nearest-neighbour and linear; TVM's
coordinate transformation modes and rounding methods; cubic is not implemented).

Each output coordinate is mapped to an input coordinate per axis, separably:

| mode | input coordinate of output index ``o`` (``r = in / out``) |
|---|---|
| ``half_pixel`` | ``(o + 0.5) * r - 0.5`` |
| ``pytorch_half_pixel`` | as ``half_pixel`` when ``out > 1``, else ``0`` |
| ``align_corners`` | ``o * (in - 1) / (out - 1)`` (``0`` when ``out == 1``) |
| ``asymmetric`` | ``o * r`` |
| ``tf_half_pixel_for_nn`` | ``(o + 0.5) * r`` |
| ``tf_crop_and_resize`` | from the ``roi``; outside the input gives ``extrapolation_value`` |
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .reference import _cast
from .reference import _f64
from .reference import np_dtype
from .reference_nn import _from_first
from .reference_nn import _to_first
from .xp import array_module


def _coords(mode: str, n_out: int, n_in: int, start: float, end: float):
    xp = array_module()

    o = xp.arange(n_out, dtype=xp.float64)
    r = n_in / n_out
    if mode == "half_pixel":
        return (o + 0.5) * r - 0.5
    if mode == "pytorch_half_pixel":
        return (o + 0.5) * r - 0.5 if n_out > 1 else xp.zeros(n_out)
    if mode == "align_corners":
        return o * (n_in - 1) / (n_out - 1) if n_out > 1 else xp.zeros(n_out)
    if mode == "asymmetric":
        return o * r
    if mode == "tf_half_pixel_for_nn":
        return (o + 0.5) * r
    if mode == "tf_crop_and_resize":
        if n_out > 1:
            return start * (n_in - 1) + o * (end - start) * (n_in - 1) / (n_out - 1)
        return xp.full(n_out, 0.5 * (start + end) * (n_in - 1))
    raise ValueError(f"resize2d: unknown coordinate_transformation_mode {mode!r}")


def _nearest_index(x, rounding: str, mode: str):
    xp = array_module()

    if rounding == "":
        rounding = "round" if mode == "align_corners" else "floor"
    if rounding == "round":
        return xp.where(x >= 0, xp.floor(x + 0.5), xp.ceil(x - 0.5))  # half away from zero
    if rounding == "round_prefer_floor":
        return xp.ceil(x - 0.5)
    if rounding == "round_prefer_ceil":
        return xp.floor(x + 0.5)
    if rounding == "floor":
        return xp.floor(x)
    if rounding == "ceil":
        return xp.ceil(x)
    raise ValueError(f"resize2d: unknown rounding_method {rounding!r}")


def _axis_weights(method: str, x, n_in: int, rounding: str, mode: str):
    """(indices, weights) of shape (n_out, taps) for one axis."""
    xp = array_module()

    if method == "nearest_neighbor":
        idx = xp.clip(_nearest_index(x, rounding, mode), 0, n_in - 1).astype(xp.int64)
        return idx[:, None], xp.ones((len(x), 1))
    if method == "linear":
        x0 = xp.floor(x)
        w1 = x - x0
        i0 = xp.clip(x0, 0, n_in - 1).astype(xp.int64)
        i1 = xp.clip(x0 + 1, 0, n_in - 1).astype(xp.int64)
        return xp.stack([i0, i1], 1), xp.stack([1 - w1, w1], 1)
    raise ValueError(f"the interpreter does not implement resize2d method {method!r}")


def _resize2d(data, size, roi=(0.0, 0.0, 0.0, 0.0), layout="NCHW", method="linear",
              coordinate_transformation_mode="half_pixel", rounding_method="round", cubic_alpha=-0.75,
              cubic_exclude=0, extrapolation_value=0.0, out_dtype=None):
    xp = array_module()

    data = xp.asarray(data)
    dt = np_dtype(out_dtype) if out_dtype else data.dtype
    roi = [float(getattr(v, "value", v)) for v in (roi or (0.0, 0.0, 0.0, 0.0))]
    xc, xl = _to_first(data, layout, "NC")
    v = _f64(xc).astype(xp.float64)
    out_h, out_w = (int(s) for s in size)
    in_h, in_w = v.shape[2], v.shape[3]
    mode = coordinate_transformation_mode
    ys = _coords(mode, out_h, in_h, roi[0], roi[2])
    xs = _coords(mode, out_w, in_w, roi[1], roi[3])
    iy, wy = _axis_weights(method, ys, in_h, rounding_method, mode)
    ix, wx = _axis_weights(method, xs, in_w, rounding_method, mode)
    out = xp.zeros(v.shape[:2] + (out_h, out_w))
    for a in range(iy.shape[1]):
        rows = v[:, :, iy[:, a], :]  # (N, C, out_h, in_w)
        for b in range(ix.shape[1]):
            out += rows[:, :, :, ix[:, b]] * (wy[:, a][:, None] * wx[:, b][None, :])
    if mode == "tf_crop_and_resize":
        outside = ((ys < 0) | (ys > in_h - 1))[:, None] | ((xs < 0) | (xs > in_w - 1))[None, :]
        out = xp.where(outside, extrapolation_value, out)
    if xp.issubdtype(dt, xp.integer):
        out = xp.rint(out)
    return _cast(_from_first(out, xl, layout), dt)


def table() -> dict[str, Callable[..., Any]]:
    return {"relax.image.resize2d": _resize2d}
