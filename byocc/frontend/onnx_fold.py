"""Folding ONNX nodes on symbolic shapes at import time.

:func:`fold_symbolic`: integer shape arithmetic where some values are symbolic dimensions
(numpy object arrays holding ints and :class:`~byocc.ir.PrimExpr` trees), as exporters emit
for dynamic batch sizes: ``Shape -> Gather -> Unsqueeze -> Concat -> Reshape``. Only what
such chains use is covered; anything else is left to the converters (which then report a
data-dependent shape). Nodes on known numbers need nothing here: their converters' calls
fold as they are made, by byocc's own references (``Importer.make``).
"""

from __future__ import annotations

from collections.abc import Callable

from byocc.ir import arith


def normalize(array):
    """An object array holding only ints becomes int64; others stay object arrays."""
    import numpy as np

    if array.dtype != object:
        return array
    if array.dtype == object and all(isinstance(v, bool) for v in array.flat):
        return array.astype(bool)
    if array.dtype == object and all(isinstance(v, int) for v in array.flat):
        return array.astype(np.int64)
    return array


def is_symbolic(array) -> bool:
    return array is not None and array.dtype == object


def _obj(array):
    import numpy as np

    out = np.empty(array.shape, dtype=object)
    for idx, v in np.ndenumerate(array):
        out[idx] = v if not isinstance(v, np.integer) else int(v)
    return out


def _ints(v) -> list:
    return [int(x) for x in v.reshape(-1)]


def _elementwise(fn: Callable) -> Callable:
    def run(node, attrs, vals):
        import numpy as np

        a, b = np.broadcast_arrays(_obj(vals[0]), _obj(vals[1]))
        out = np.empty(a.shape, dtype=object)
        for idx in np.ndindex(*a.shape):
            out[idx] = fn(a[idx], b[idx])
        return [out]

    return run


def _equal(a, b):
    if arith.provably_equal(a, b):
        return True
    if arith.provably_different(a, b):
        return False
    raise _Undecided()


class _Undecided(Exception):
    pass


def _gather(node, attrs, vals):
    import numpy as np

    data, idx = _obj(vals[0]), np.asarray(vals[1]).astype(np.int64)
    axis = attrs.get("axis", 0)
    dim = data.shape[axis]
    idx = np.where(idx < 0, idx + dim, idx)
    return [np.take(data, idx, axis=axis)]


def _concat(node, attrs, vals):
    import numpy as np

    return [np.concatenate([_obj(v) for v in vals], axis=attrs.get("axis", 0))]


def _unsqueeze(node, attrs, vals):
    import numpy as np

    axes = attrs.get("axes") if len(vals) < 2 else _ints(vals[1])
    out = _obj(vals[0])
    rank = out.ndim + len(axes)
    for a in sorted(a + rank if a < 0 else a for a in axes):
        out = np.expand_dims(out, a)
    return [out]


def _squeeze(node, attrs, vals):
    import numpy as np

    axes = attrs.get("axes") if len(vals) < 2 else _ints(vals[1])
    data = _obj(vals[0])
    if axes is None:
        return [np.squeeze(data)]
    return [np.squeeze(data, axis=tuple(a + data.ndim if a < 0 else a for a in axes))]


def _slice(node, attrs, vals):
    data = _obj(vals[0])
    if len(vals) == 1:
        starts, ends, axes, steps = attrs["starts"], attrs["ends"], attrs.get("axes"), None
    else:
        starts, ends = _ints(vals[1]), _ints(vals[2])
        axes = _ints(vals[3]) if len(vals) > 3 and vals[3] is not None else None
        steps = _ints(vals[4]) if len(vals) > 4 and vals[4] is not None else None
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    index = [slice(None)] * data.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[a] = slice(s, e, st)
    return [data[tuple(index)]]


def _cast(node, attrs, vals):
    from onnx import TensorProto

    if attrs.get("to") in (TensorProto.INT64, TensorProto.INT32):
        return [vals[0]]
    raise _Undecided()


def _where(node, attrs, vals):
    import numpy as np

    cond = vals[0]
    if is_symbolic(cond):
        raise _Undecided()
    c, x, y = np.broadcast_arrays(np.asarray(cond, dtype=bool), _obj(vals[1]), _obj(vals[2]))
    out = np.empty(c.shape, dtype=object)
    for idx in np.ndindex(*c.shape):
        out[idx] = x[idx] if c[idx] else y[idx]
    return [out]


def _reduce_prod(node, attrs, vals):
    import numpy as np

    data = _obj(vals[0])
    if data.ndim != 1:
        raise _Undecided()
    out = np.empty((1,) if attrs.get("keepdims", 1) else (), dtype=object)
    out[...] = arith.product(list(data))
    return [out]


def _floordiv(a, b):
    return arith.simplify_dim(arith.floordiv(a, b))


def _equal_op(node, attrs, vals):
    return _elementwise(_equal)(node, attrs, vals)


SYMBOLIC: dict[str, Callable] = {
    "Identity": lambda node, attrs, vals: [vals[0]],
    "Cast": _cast,
    "Gather": _gather,
    "Concat": _concat,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Slice": _slice,
    "Add": _elementwise(lambda a, b: arith.simplify_dim(arith.add(a, b))),
    "Sub": _elementwise(lambda a, b: arith.simplify_dim(arith.sub(a, b))),
    "Mul": _elementwise(lambda a, b: arith.simplify_dim(arith.mul(a, b))),
    "Div": _elementwise(_floordiv),
    "Equal": _equal_op,
    "Where": _where,
    "ReduceProd": _reduce_prod,
}


def fold_symbolic(node, attrs: dict, values: list) -> list | None:
    """Fold integer shape arithmetic over symbolic values; None if not covered."""
    fn = SYMBOLIC.get(node.op_type)
    if fn is None:
        return None
    try:
        outs = fn(node, attrs, values)
    except (_Undecided, IndexError, ValueError, KeyError, TypeError):
        return None
    return [normalize(_as_array(o)) for o in outs]


def _as_array(v):
    """numpy returns a bare element for 0-d object results; keep it an array."""
    import numpy as np

    if isinstance(v, np.ndarray):
        return v
    out = np.empty((), dtype=object)
    out[()] = v
    return out


__all__ = ["fold_symbolic", "is_symbolic", "normalize"]
