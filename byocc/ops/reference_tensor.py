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
from .reference import np_dtype


# --------------------------------------------------------------------------- reductions
def _axes(axis, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    return tuple(a + ndim if a < 0 else a for a in axis)


def _reduce(fn: Callable, float_math: bool = True) -> Callable:
    def ref(x, axis=None, keepdims=False):
        import numpy as np

        x = np.asarray(x)
        src = _f64(x) if float_math else x
        return _cast(fn(src, axis=_axes(axis, x.ndim), keepdims=keepdims), x.dtype)

    return ref


def _median(x, axis=None, keepdims=False):
    """The lower median (TVM sorts and takes element ``(n - 1) // 2``)."""
    import numpy as np

    x = np.asarray(x)
    axes = _axes(axis, x.ndim)
    keep = [a for a in range(x.ndim) if a not in axes]
    moved = np.transpose(x, keep + list(axes)).reshape([x.shape[a] for a in keep] + [-1])
    n = moved.shape[-1]
    out = np.sort(moved, axis=-1, kind="stable")[..., (n - 1) // 2]
    if keepdims:
        out = out.reshape([1 if a in axes else x.shape[a] for a in range(x.ndim)])
    return _cast(out, x.dtype)


def _arg(fn: Callable) -> Callable:
    def ref(x, axis=None, keepdims=False):
        import numpy as np

        x = np.asarray(x)
        if axis is None:
            out = np.asarray(fn(x.reshape(-1)))
            return out.reshape((1,) * x.ndim) if keepdims else out.astype(np.int64)
        return np.asarray(fn(x, axis=axis, keepdims=keepdims), dtype=np.int64)

    return ref


# --------------------------------------------------------------------------- manipulation
def _reshape(x, shape):
    import numpy as np

    return np.reshape(np.asarray(x), tuple(int(d) for d in shape))


def _permute_dims(x, axes=None):
    import numpy as np

    return np.transpose(np.asarray(x), None if axes is None else tuple(axes))


def _expand_dims(x, axis):
    import numpy as np

    x = np.asarray(x)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    ndim = x.ndim + len(axes)
    return np.expand_dims(x, tuple(a + ndim if a < 0 else a for a in axes))


def _squeeze(x, axis=None):
    import numpy as np

    x = np.asarray(x)
    if axis is None:
        return np.squeeze(x)
    return np.squeeze(x, axis=tuple(a for a in _axes(axis, x.ndim) if x.shape[a] == 1))


def _concat(tensors, axis=0):
    import numpy as np

    if axis is None:
        return np.concatenate([np.reshape(t, (-1,)) for t in tensors])
    return np.concatenate(list(tensors), axis=axis)


def _stack(tensors, axis=0):
    import numpy as np

    return np.stack(list(tensors), axis=0 if axis is None else axis)


def split_indices(dim: int, indices_or_sections) -> list:
    """Split points of ``relax.split``: n sections of ``ceil(dim / n)`` (the last shorter)."""
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        size = -(-dim // n) if n else 0
        return [min(size * i, dim) for i in range(1, n)]
    return list(indices_or_sections)


def _split(x, indices_or_sections, axis=0):
    import numpy as np

    x = np.asarray(x)
    ax = axis + x.ndim if axis < 0 else axis
    return list(np.split(x, split_indices(x.shape[ax], indices_or_sections), axis=ax))


def _broadcast_to(x, shape):
    import numpy as np

    return np.broadcast_to(np.asarray(x), tuple(int(d) for d in shape)).copy()


def _strided_slice(x, axes, begin, end, strides=None, assume_inbound=False):
    import numpy as np

    x = np.asarray(x)
    index = [slice(None)] * x.ndim
    for i, ax in enumerate(axes):
        step = 1 if strides is None else int(strides[i])
        index[ax] = slice(int(begin[i]), int(end[i]), step)
    return x[tuple(index)].copy()


def _take(x, indices, axis=None, mode="fast"):
    import numpy as np

    x, indices = np.asarray(x), np.asarray(indices).astype(np.int64)
    if axis is None:
        x, axis = x.reshape(-1), 0
    dim = x.shape[axis]
    if mode == "wrap":
        indices = np.mod(indices, dim)
    elif mode == "clip":
        indices = np.clip(indices, 0, dim - 1)
    else:
        indices = np.where(indices < 0, indices + dim, indices)
        if indices.size and (indices.min() < 0 or indices.max() >= dim):
            raise IndexError(f"take: an index is out of range for an axis of size {dim}")
    return np.take(x, indices, axis=axis)


def _normalised_indices(indices, dim: int, what: str):
    import numpy as np

    indices = np.asarray(indices).astype(np.int64)
    indices = np.where(indices < 0, indices + dim, indices)
    if indices.size and (indices.min() < 0 or indices.max() >= dim):
        raise IndexError(f"{what}: an index is out of range for an axis of size {dim}")
    return indices


def _gather_elements(data, indices, axis=0):
    """ONNX GatherElements / TVM gather_elements: ``out[i][j][k] = data[idx[i][j][k]][j][k]``
    for axis 0 (numpy's take_along_axis; no numpy.choose limit on the index range)."""
    import numpy as np

    data = np.asarray(data)
    axis = axis + data.ndim if axis < 0 else axis
    idx = _normalised_indices(indices, data.shape[axis], "gather_elements")
    return np.take_along_axis(data, idx, axis=axis)


def _gather_nd(data, indices, batch_dims=0):
    """ONNX GatherND / TVM gather_nd: each row of the last indices axis picks a slice of
    ``data`` after the first ``batch_dims`` (shared) axes."""
    import numpy as np

    data = np.asarray(data)
    idx = np.asarray(indices).astype(np.int64)
    b = int(batch_dims)
    k = idx.shape[-1]
    batch = data.shape[:b]
    nb = int(np.prod(batch)) if b else 1
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
        out.append(np.stack(rows) if rows else np.empty((0,) + data.shape[b + k:], data.dtype))
    result = np.stack(out)
    return result.reshape(idx.shape[:-1] + data.shape[b + k:])


def _where(cond, x, y):
    import numpy as np

    return _cast(np.where(np.asarray(cond, dtype=bool), x, y), _binary_dtype(x, y))


def _full(shape, fill_value, dtype=None):
    import numpy as np

    fill = np.asarray(fill_value)
    return np.full(tuple(shape), fill, dtype=np_dtype(dtype) if dtype else fill.dtype)


def _full_like(x, fill_value, dtype=None):
    import numpy as np

    x = np.asarray(x)
    return np.full(x.shape, np.asarray(fill_value), dtype=np_dtype(dtype) if dtype else x.dtype)


def _zeros(shape, dtype):
    import numpy as np

    return np.zeros(tuple(shape), dtype=np_dtype(dtype))


def _ones(shape, dtype):
    import numpy as np

    return np.ones(tuple(shape), dtype=np_dtype(dtype))


def _like(value: int) -> Callable:
    def ref(x, dtype=None):
        import numpy as np

        x = np.asarray(x)
        return np.full(x.shape, value, dtype=np_dtype(dtype) if dtype else x.dtype)

    return ref


def _tri(fn: Callable) -> Callable:
    def ref(x, k=0):
        import numpy as np

        return fn(np.asarray(x), k=int(k))

    return ref


def _tile(x, repeats):
    import numpy as np

    return np.tile(np.asarray(x), tuple(repeats))


def _repeat(x, repeats, axis=None):
    import numpy as np

    return np.repeat(np.asarray(x), repeats, axis=axis)


def _per_axis(v, axis: int, ndim: int):
    import numpy as np

    v = np.asarray(v)
    if v.ndim == 1 and v.size > 1:
        shape = [1] * ndim
        shape[axis] = v.size
        return v.reshape(shape)
    return v.reshape(()) if v.size == 1 else v


def _quantize(data, scale, zero_point, out_dtype="int8", axis=-1):
    import numpy as np

    dt = np_dtype(out_dtype)
    data = np.asarray(data)
    q = np.rint(_f64(data) / _f64(_per_axis(scale, axis, data.ndim)))
    q = q + _per_axis(zero_point, axis, data.ndim).astype(np.float64)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        q = np.clip(q, info.min, info.max)
    return q.astype(dt)


def _dequantize(data, scale, zero_point, out_dtype="float32", axis=-1):
    import numpy as np

    data = np.asarray(data)
    zp = _per_axis(zero_point, axis, data.ndim).astype(np.float64)
    out = (data.astype(np.float64) - zp) * _f64(_per_axis(scale, axis, data.ndim))
    return out.astype(np_dtype(out_dtype))


def table() -> dict[str, Callable[..., Any]]:
    import numpy as np

    t: dict[str, Callable[..., Any]] = {
        # statistical / search
        "sum": _reduce(np.sum), "prod": _reduce(np.prod), "max": _reduce(np.max, False),
        "min": _reduce(np.min, False), "mean": _reduce(np.mean), "median": _median,
        "variance": _reduce(np.var), "std": _reduce(np.std),
        "argmax": _arg(np.argmax), "argmin": _arg(np.argmin),
        # manipulation / creation / index
        "reshape": _reshape, "permute_dims": _permute_dims, "expand_dims": _expand_dims,
        "squeeze": _squeeze, "flatten": lambda x: np.reshape(np.asarray(x), (-1,)),
        "concat": _concat, "stack": _stack, "split": _split, "broadcast_to": _broadcast_to,
        "strided_slice": _strided_slice, "take": _take, "where": _where,
        "gather_elements": _gather_elements, "gather_nd": _gather_nd,
        "full": _full, "full_like": _full_like, "zeros": _zeros, "ones": _ones,
        "zeros_like": _like(0), "ones_like": _like(1),
        "tril": _tri(np.tril), "triu": _tri(np.triu), "tile": _tile, "repeat": _repeat,
        "quantize": _quantize, "dequantize": _dequantize,
    }
    return {"relax." + k: v for k, v in t.items()}
