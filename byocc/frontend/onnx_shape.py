"""ONNX converters for shape computations and data movement: Shape, Size, Reshape,
Flatten, Transpose, (Un)Squeeze, Concat, Split, Slice, Gather, Expand, Tile, Constant,
ConstantOfShape, Dropout. Same converter convention as :mod:`.onnx_ops`; dimensions may be
symbolic (``PrimExpr``) wherever a shape flows from a graph input with ``dim_param``."""

from __future__ import annotations

from byocc.ir import UnsupportedError
from byocc.ir import arith

from .onnx_fold import is_symbolic
from .onnx_ops import axis_list
from .onnx_ops import converter
from .onnx_ops import dim_list
from .onnx_ops import ints
from .onnx_ops import opt


def shape_array(dim_list):
    """Dims as a known value: int64 array, or an object array if any is symbolic."""
    import numpy as np

    if all(isinstance(d, int) for d in dim_list):
        return np.array(dim_list, dtype=np.int64)
    out = np.empty(len(dim_list), dtype=object)
    for i, d in enumerate(dim_list):
        out[i] = d
    return out


@converter("Shape")
def _shape(imp, node, inputs, attrs):
    shape = list(imp.shape(inputs[0]))
    start, end = attrs.get("start", 0), attrs.get("end", None)
    return [shape_array(shape[start:end])]


@converter("Size")
def _size(imp, node, inputs, attrs):
    import numpy as np

    total = arith.product(imp.shape(inputs[0]))
    if isinstance(total, int):
        return [np.array(total, dtype=np.int64)]
    out = np.empty((), dtype=object)
    out[...] = total
    return [out]


def resolve_reshape(in_shape: tuple, target: list, allowzero: bool) -> list:
    """ONNX Reshape's target with 0 (copy) and -1 (infer) resolved."""
    out = list(target)
    for i, d in enumerate(out):
        if isinstance(d, int) and d == 0 and not allowzero:
            if i >= len(in_shape):
                raise UnsupportedError("Reshape copies a dimension the input does not have")
            out[i] = in_shape[i]
    if any(isinstance(d, int) and d == -1 for d in out):
        k = next(i for i, d in enumerate(out) if isinstance(d, int) and d == -1)
        known = arith.product(d for i, d in enumerate(out) if i != k)
        out[k] = _divide_dims(arith.product(in_shape), known)
    return out


def _divide_dims(total, known):
    """``total / known`` for dimension products (exact; symbolic factors cancelled)."""
    if isinstance(total, int) and isinstance(known, int):
        if known == 0 or total % known:
            raise UnsupportedError(f"Reshape cannot split {total} elements into parts of {known}")
        return total // known
    if _cancellable(total, known):
        return _cancel(total, known)
    return arith.simplify_dim(arith.floordiv(total, known))


def _factors(d) -> tuple[list, int]:
    """Symbolic factors and the integer coefficient of a product of dims."""
    from byocc.ir import PrimBinary

    syms, coeff, stack = [], 1, [d]
    while stack:
        x = stack.pop()
        if isinstance(x, int):
            coeff *= x
        elif isinstance(x, PrimBinary) and x.op == "*":
            stack.extend((x.a, x.b))
        else:
            syms.append(x)
    return syms, coeff


def _cancellable(total, known) -> bool:
    ts, tc = _factors(total)
    ks, kc = _factors(known)
    return kc != 0 and tc % kc == 0 and all(any(arith.provably_equal(k, t) for t in ts) for k in ks)


def _cancel(total, known):
    ts, tc = _factors(total)
    ks, kc = _factors(known)
    rest = list(ts)
    for k in ks:
        j = next(i for i, t in enumerate(rest) if arith.provably_equal(k, t))
        rest.pop(j)
    return arith.product(list(reversed(rest)) + [tc // kc])


@converter("Reshape")
def _reshape(imp, node, inputs, attrs):
    if imp.opset < 5:
        target = list(attrs["shape"])
    else:
        value = imp.require(inputs[1], "the shape input of Reshape")
        target = [v if not isinstance(v, (int,)) else int(v) for v in value.reshape(-1).tolist()]
    out = resolve_reshape(imp.shape(inputs[0]), target, bool(attrs.get("allowzero", 0)))
    return [imp.make("relax.reshape", imp.tensor(inputs[0]), out)]


@converter("Flatten")
def _flatten(imp, node, inputs, attrs):
    shape = imp.shape(inputs[0])
    axis = attrs.get("axis", 1)
    axis = axis + len(shape) if axis < 0 else axis
    new = [arith.product(shape[:axis]), arith.product(shape[axis:])]
    return [imp.make("relax.reshape", imp.tensor(inputs[0]), new)]


@converter("Transpose")
def _transpose(imp, node, inputs, attrs):
    perm = attrs.get("perm")
    return [imp.make("relax.permute_dims", imp.tensor(inputs[0]), axes=list(perm) if perm is not None else None)]


@converter("Unsqueeze")
def _unsqueeze(imp, node, inputs, attrs):
    axes = attrs.get("axes") if imp.opset < 13 else ints(imp.require(inputs[1], "the axes of Unsqueeze"))
    rank = imp.rank(inputs[0]) + len(axes)
    return [imp.make("relax.expand_dims", imp.tensor(inputs[0]), axis=sorted(axis_list(axes, rank)))]


@converter("Squeeze")
def _squeeze(imp, node, inputs, attrs):
    if imp.opset < 13:
        axes = attrs.get("axes")
    else:
        axes = ints(imp.require(inputs[1], "the axes of Squeeze")) if opt(inputs, 1) else None
    rank = imp.rank(inputs[0])
    axis = sorted(axis_list(axes, rank)) if axes is not None else None
    return [imp.make("relax.squeeze", imp.tensor(inputs[0]), axis=axis)]


@converter("Concat")
def _concat(imp, node, inputs, attrs):
    from byocc.ops.convert import make_tuple

    tensors = [imp.tensor(n) for n in inputs if n]
    return [imp.make("relax.concat", make_tuple(tensors), axis=attrs["axis"])]


@converter("Split")
def _split(imp, node, inputs, attrs):
    axis = attrs.get("axis", 0)
    shape = imp.shape(inputs[0])
    axis = axis + len(shape) if axis < 0 else axis
    if imp.opset < 13:
        sizes = attrs.get("split")
    else:
        sizes = ints(imp.require(inputs[1], "the split input")) if opt(inputs, 1) else None
    n_out = len(node.output)
    if sizes is None:
        n = attrs.get("num_outputs", n_out)
        dim = shape[axis]
        if isinstance(dim, int) and dim % n:
            size = -(-dim // n)
            sections: object = [min(size * i, dim) for i in range(1, n)]
        else:
            sections = n
    else:
        acc, sections = 0, []
        for s in sizes[:-1]:
            acc += s
            sections.append(acc)
    made = imp.make("relax.split", imp.tensor(inputs[0]), indices_or_sections=sections, axis=axis)
    return imp.tuple_fields(made)[:n_out]


def _slice_bound(v, dim, step: int, is_end: bool):
    """ONNX bound -> a Relax strided_slice bound with the same (numpy) meaning."""
    if not isinstance(v, int):
        return v  # symbolic (from a Shape): within range by construction
    if isinstance(dim, int):
        return max(min(v, dim), -dim - 1)
    if v >= 2 ** 31 and step > 0:
        return dim
    return v


@converter("Slice")
def _slice(imp, node, inputs, attrs):
    if imp.opset < 10:
        starts, ends, axes, steps = attrs["starts"], attrs["ends"], attrs.get("axes"), None
    else:
        starts = dim_list(imp.require(inputs[1], "the starts of Slice"))
        ends = dim_list(imp.require(inputs[2], "the ends of Slice"))
        axes = ints(imp.require(inputs[3], "the axes of Slice")) if opt(inputs, 3) else None
        steps = ints(imp.require(inputs[4], "the steps of Slice")) if opt(inputs, 4) else None
    shape = imp.shape(inputs[0])
    axes = list(range(len(starts))) if axes is None else axis_list(axes, len(shape))
    steps = [1] * len(starts) if steps is None else steps
    begin = [_slice_bound(s, shape[a], st, False) for s, a, st in zip(starts, axes, steps)]
    end = [_slice_bound(e, shape[a], st, True) for e, a, st in zip(ends, axes, steps)]
    # axes sliced whole (0:dim:1, typical with a dim read by Shape) are left out
    keep = [i for i, a in enumerate(axes)
            if not (steps[i] == 1 and begin[i] == 0 and arith.provably_equal(end[i], shape[a]))]
    if not keep:
        return [imp.tensor(inputs[0])]
    axes, begin, end, steps = ([v[i] for i in keep] for v in (list(axes), begin, end, steps))
    strides = None if all(s == 1 for s in steps) else list(steps)
    return [imp.make("relax.strided_slice", imp.tensor(inputs[0]), list(axes), begin, end, strides)]


@converter("Gather")
def _gather(imp, node, inputs, attrs):
    import numpy as np

    axis = attrs.get("axis", 0)
    shape = imp.shape(inputs[0])
    axis = axis + len(shape) if axis < 0 else axis
    idx_value = imp.known(inputs[1])
    if idx_value is not None and not is_symbolic(idx_value) and isinstance(shape[axis], int):
        idx = np.asarray(idx_value).astype(np.int64)
        indices = imp.constant(np.where(idx < 0, idx + shape[axis], idx))
    else:
        indices = imp.tensor(inputs[1])
    return [imp.make("relax.take", imp.tensor(inputs[0]), indices, axis=axis)]


@converter("GatherElements")
def _gather_elements(imp, node, inputs, attrs):
    return [imp.make("relax.gather_elements", imp.tensor(inputs[0]), imp.tensor(inputs[1]),
                     axis=attrs.get("axis", 0))]


@converter("GatherND")
def _gather_nd(imp, node, inputs, attrs):
    return [imp.make("relax.gather_nd", imp.tensor(inputs[0]), imp.tensor(inputs[1]),
                     batch_dims=attrs.get("batch_dims", 0))]


def broadcast_dims(a: tuple, b: tuple) -> list:
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if isinstance(x, int) and x == 1:
            out.append(y)
        elif isinstance(y, int) and y == 1 or arith.provably_equal(x, y):
            out.append(x)
        else:
            raise UnsupportedError(f"Expand: dimensions {x} and {y} do not broadcast")
    return out


@converter("Expand")
def _expand(imp, node, inputs, attrs):
    value = imp.require(inputs[1], "the shape input of Expand")
    target = broadcast_dims(imp.shape(inputs[0]), tuple(value.reshape(-1).tolist()))
    if list(target) == list(imp.shape(inputs[0])):
        return [imp.tensor(inputs[0])]
    return [imp.make("relax.broadcast_to", imp.tensor(inputs[0]), target)]


@converter("ConstantOfShape")
def _constant_of_shape(imp, node, inputs, attrs):
    import numpy as np
    from onnx import numpy_helper

    shape = imp.require(inputs[0], "the shape input of ConstantOfShape").reshape(-1).tolist()
    value = attrs.get("value")
    fill = numpy_helper.to_array(value).reshape(-1)[0] if value is not None else np.float32(0)
    fill = np.asarray(fill)
    if all(isinstance(d, int) for d in shape):
        return [np.full(shape, fill, dtype=fill.dtype)]
    from byocc.ops.reference import dtype_name

    return [imp.make("relax.full", list(shape), imp.constant(fill), dtype=dtype_name(fill.dtype))]


@converter("Constant")
def _constant(imp, node, inputs, attrs):
    import numpy as np
    from onnx import numpy_helper

    if "value" in attrs:
        return [np.asarray(numpy_helper.to_array(attrs["value"]))]
    for key, dtype in (("value_float", np.float32), ("value_floats", np.float32),
                       ("value_int", np.int64), ("value_ints", np.int64)):
        if key in attrs:
            return [np.asarray(attrs[key], dtype=dtype)]
    raise UnsupportedError(f"Constant with {', '.join(sorted(attrs)) or 'no value'} is not supported")


@converter("Tile")
def _tile(imp, node, inputs, attrs):
    repeats = ints(imp.require(inputs[1], "the repeats input of Tile"))
    return [imp.make("relax.tile", imp.tensor(inputs[0]), repeats=repeats)]


@converter("Dropout")
def _dropout(imp, node, inputs, attrs):
    import numpy as np

    out = [imp.tensor(inputs[0])]
    if len(node.output) > 1 and node.output[1]:
        shape = imp.shape(inputs[0])
        if not all(isinstance(d, int) for d in shape):
            raise UnsupportedError("the mask output of Dropout needs a static shape")
        out.append(np.ones(shape, dtype=bool))
    return out
