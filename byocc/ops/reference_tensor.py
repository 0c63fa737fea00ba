"""Numpy references of the reductions, data-movement, creation and quantisation ops.

Same convention and numerics as :mod:`byocc.ops.reference` (operands positionally,
attributes as keywords, float math in float64, cast to the op's output dtype).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .reference import _binary_dtype
from .reference import _cast
from .reference import _f64
from .reference import _fn
from .reference import np_dtype
from .xp import array_module
from .xp import numpy_module


# --------------------------------------------------------------------------- reductions
def _axes(axis, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    return tuple(a + ndim if a < 0 else a for a in axis)


def _reduce(fn: str | Callable, float_math: bool = True) -> Callable:
    def ref(x, axis=None, keepdims=False):
        xp = array_module()

        x = xp.asarray(x)
        src = _f64(x) if float_math else x
        return _cast(_fn(xp, fn)(src, axis=_axes(axis, x.ndim), keepdims=keepdims), x.dtype)

    return ref


def _median(x, axis=None, keepdims=False):
    """The lower median (TVM sorts and takes element ``(n - 1) // 2``)."""
    xp = array_module()

    x = xp.asarray(x)
    axes = _axes(axis, x.ndim)
    keep = [a for a in range(x.ndim) if a not in axes]
    moved = xp.transpose(x, keep + list(axes)).reshape([x.shape[a] for a in keep] + [-1])
    n = moved.shape[-1]
    out = xp.sort(moved, axis=-1, kind="stable")[..., (n - 1) // 2]
    if keepdims:
        out = out.reshape([1 if a in axes else x.shape[a] for a in range(x.ndim)])
    return _cast(out, x.dtype)


def _arg(fn: str | Callable) -> Callable:
    def ref(x, axis=None, keepdims=False):
        xp = array_module()

        x = xp.asarray(x)
        if axis is None:
            out = xp.asarray(_fn(xp, fn)(x.reshape(-1)))
            return out.reshape((1,) * x.ndim) if keepdims else out.astype(xp.int64)
        return xp.asarray(_fn(xp, fn)(x, axis=axis, keepdims=keepdims), dtype=xp.int64)

    return ref


# --------------------------------------------------------------------------- manipulation
def _reshape(x, shape):
    xp = array_module()

    return xp.reshape(xp.asarray(x), tuple(int(d) for d in shape))


def _permute_dims(x, axes=None):
    xp = array_module()

    return xp.transpose(xp.asarray(x), None if axes is None else tuple(axes))


def _expand_dims(x, axis):
    xp = array_module()

    x = xp.asarray(x)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    ndim = x.ndim + len(axes)
    return xp.expand_dims(x, tuple(a + ndim if a < 0 else a for a in axes))


def _squeeze(x, axis=None):
    xp = array_module()

    x = xp.asarray(x)
    if axis is None:
        return xp.squeeze(x)
    return xp.squeeze(x, axis=tuple(a for a in _axes(axis, x.ndim) if x.shape[a] == 1))


def _concat(tensors, axis=0):
    xp = array_module()

    if axis is None:
        return xp.concatenate([xp.reshape(t, (-1,)) for t in tensors])
    return xp.concatenate(list(tensors), axis=axis)


def _stack(tensors, axis=0):
    xp = array_module()

    return xp.stack(list(tensors), axis=0 if axis is None else axis)


def split_indices(dim: int, indices_or_sections) -> list:
    """Split points of ``relax.split``: n sections of ``ceil(dim / n)`` (the last shorter)."""
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        size = -(-dim // n) if n else 0
        return [min(size * i, dim) for i in range(1, n)]
    return list(indices_or_sections)


def _split(x, indices_or_sections, axis=0):
    xp = array_module()

    x = xp.asarray(x)
    ax = axis + x.ndim if axis < 0 else axis
    return list(xp.split(x, split_indices(x.shape[ax], indices_or_sections), axis=ax))


def _broadcast_to(x, shape):
    xp = array_module()

    return xp.broadcast_to(xp.asarray(x), tuple(int(d) for d in shape)).copy()


def _strided_slice(x, axes, begin, end, strides=None, assume_inbound=False):
    xp = array_module()

    x = xp.asarray(x)
    index = [slice(None)] * x.ndim
    for i, ax in enumerate(axes):
        step = 1 if strides is None else int(strides[i])
        index[ax] = slice(int(begin[i]), int(end[i]), step)
    return x[tuple(index)].copy()


def _take(x, indices, axis=None, mode="fast"):
    xp = array_module()

    x, indices = xp.asarray(x), xp.asarray(indices).astype(xp.int64)
    if axis is None:
        x, axis = x.reshape(-1), 0
    dim = x.shape[axis]
    if mode == "wrap":
        indices = xp.mod(indices, dim)
    elif mode == "clip":
        indices = xp.clip(indices, 0, dim - 1)
    else:
        indices = _checked_range(xp.where(indices < 0, indices + dim, indices), dim, "take")
    return xp.take(x, indices, axis=axis)


def _checked_range(indices, dim: int, what: str):
    """``indices`` (already non-negative where valid) checked to lie in ``[0, dim)``: an
    IndexError on the host; on a device the check would read the indices back (a sync that
    also breaks CUDA-graph capture), so there they are clipped into range instead, keeping
    every read in bounds (docs/runtime.md: TVM's ``fast`` mode leaves them undefined)."""
    xp = array_module()
    if xp is not numpy_module():
        return xp.clip(indices, 0, dim - 1)
    if indices.size and (indices.min() < 0 or indices.max() >= dim):
        raise IndexError(f"{what}: an index is out of range for an axis of size {dim}")
    return indices


def _normalised_indices(indices, dim: int, what: str):
    xp = array_module()

    indices = xp.asarray(indices).astype(xp.int64)
    return _checked_range(xp.where(indices < 0, indices + dim, indices), dim, what)


def _gather_elements(data, indices, axis=0):
    """ONNX GatherElements / TVM gather_elements: ``out[i][j][k] = data[idx[i][j][k]][j][k]``
    for axis 0 (numpy's take_along_axis; no numpy.choose limit on the index range)."""
    xp = array_module()

    data = xp.asarray(data)
    axis = axis + data.ndim if axis < 0 else axis
    idx = _normalised_indices(indices, data.shape[axis], "gather_elements")
    return xp.take_along_axis(data, idx, axis=axis)


def _gather_nd(data, indices, batch_dims=0):
    """ONNX GatherND / TVM gather_nd: each row of the last indices axis picks a slice of
    ``data`` after the first ``batch_dims`` (shared) axes."""
    xp = array_module()

    data = xp.asarray(data)
    idx = xp.asarray(indices).astype(xp.int64)
    b = int(batch_dims)
    k = idx.shape[-1]
    batch = data.shape[:b]
    nb = int(xp.prod(batch)) if b else 1
    flat_data = data.reshape((nb,) + data.shape[b:])
    flat_idx = idx.reshape((nb, -1, k))
    out = []
    for n in range(nb):
        rows = []
        for row in flat_idx[n]:
            key = tuple(int(v) + (flat_data.shape[1 + j] if v < 0 else 0) for j, v in enumerate(row))
            for j, v in enumerate(key):
                if not 0 <= v < flat_data.shape[1 + j]:
                    raise IndexError(f"gather_nd: an index is out of range for an axis of size "
                                     f"{flat_data.shape[1 + j]}")
            rows.append(flat_data[n][key])
        out.append(xp.stack(rows) if rows else xp.empty((0,) + data.shape[b + k:], data.dtype))
    result = xp.stack(out)
    return result.reshape(idx.shape[:-1] + data.shape[b + k:])


def _where(cond, x, y):
    xp = array_module()

    return _cast(xp.where(xp.asarray(cond, dtype=bool), x, y), _binary_dtype(x, y))


def _full(shape, fill_value, dtype=None):
    xp = array_module()

    fill = xp.asarray(fill_value)
    return xp.full(tuple(shape), fill, dtype=np_dtype(dtype) if dtype else fill.dtype)


def _full_like(x, fill_value, dtype=None):
    xp = array_module()

    x = xp.asarray(x)
    return xp.full(x.shape, xp.asarray(fill_value), dtype=np_dtype(dtype) if dtype else x.dtype)


def _zeros(shape, dtype):
    xp = array_module()

    return xp.zeros(tuple(shape), dtype=np_dtype(dtype))


def _ones(shape, dtype):
    xp = array_module()

    return xp.ones(tuple(shape), dtype=np_dtype(dtype))


def _like(value: int) -> Callable:
    def ref(x, dtype=None):
        xp = array_module()

        x = xp.asarray(x)
        return xp.full(x.shape, value, dtype=np_dtype(dtype) if dtype else x.dtype)

    return ref


def _tri(fn: str | Callable) -> Callable:
    def ref(x, k=0):
        xp = array_module()

        return _fn(xp, fn)(xp.asarray(x), k=int(k))

    return ref


def _tile(x, repeats):
    xp = array_module()

    return xp.tile(xp.asarray(x), tuple(repeats))


def _repeat(x, repeats, axis=None):
    xp = array_module()

    return xp.repeat(xp.asarray(x), repeats, axis=axis)


def _per_axis(v, axis: int, ndim: int):
    xp = array_module()

    v = xp.asarray(v)
    if v.ndim == 1 and v.size > 1:
        shape = [1] * ndim
        shape[axis] = v.size
        return v.reshape(shape)
    return v.reshape(()) if v.size == 1 else v


def _quantize(data, scale, zero_point, out_dtype="int8", axis=-1):
    xp = array_module()

    dt = np_dtype(out_dtype)
    data = xp.asarray(data)
    q = xp.rint(_f64(data) / _f64(_per_axis(scale, axis, data.ndim)))
    q = q + _per_axis(zero_point, axis, data.ndim).astype(xp.float64)
    if dt.kind in "iu":
        info = xp.iinfo(dt)
        q = xp.clip(q, info.min, info.max)
    return q.astype(dt)


def _dequantize(data, scale, zero_point, out_dtype="float32", axis=-1):
    xp = array_module()

    data = xp.asarray(data)
    zp = _per_axis(zero_point, axis, data.ndim).astype(xp.float64)
    out = (data.astype(xp.float64) - zp) * _f64(_per_axis(scale, axis, data.ndim))
    return out.astype(np_dtype(out_dtype))


def _flatten(x):
    xp = array_module()
    return xp.reshape(xp.asarray(x), (-1,))


def table() -> dict[str, Callable[..., Any]]:
    t: dict[str, Callable[..., Any]] = {
        # statistical / search
        "sum": _reduce("sum"), "prod": _reduce("prod"), "max": _reduce("max", False),
        "min": _reduce("min", False), "mean": _reduce("mean"), "median": _median,
        "variance": _reduce("var"), "std": _reduce("std"),
        "argmax": _arg("argmax"), "argmin": _arg("argmin"),
        # manipulation / creation / index
        "reshape": _reshape, "permute_dims": _permute_dims, "expand_dims": _expand_dims,
        "squeeze": _squeeze, "flatten": _flatten,
        "concat": _concat, "stack": _stack, "split": _split, "broadcast_to": _broadcast_to,
        "strided_slice": _strided_slice, "take": _take, "where": _where,
        "gather_elements": _gather_elements, "gather_nd": _gather_nd,
        "full": _full, "full_like": _full_like, "zeros": _zeros, "ones": _ones,
        "zeros_like": _like(0), "ones_like": _like(1),
        "tril": _tri("tril"), "triu": _tri("triu"), "tile": _tile, "repeat": _repeat,
        "quantize": _quantize, "dequantize": _dequantize,
    }
    return {"relax." + k: v for k, v in t.items()}
