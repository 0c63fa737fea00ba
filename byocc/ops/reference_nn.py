"""Numpy references of the neural-network and linear-algebra Relax operators.

Same convention and numerics as :mod:`byocc.ops.reference`: operands positionally,
attributes as keywords, float math in float64, result cast to the op's output dtype.
Convolutions and pools accept any plain layout (``NCHW``, ``NHWC``, ``OIHW``, ``OHWI``...):
they are transposed to channel-first, computed, and transposed to ``out_layout``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .reference import _cast
from .reference import _f64
from .reference import erf
from .reference import half_kernel_first
from .reference import is_float_dtype
from .reference import np_dtype
from .xp import array_module
from .xp import numpy_module


# --------------------------------------------------------------------------- activations
def _relu(x):
    xp = array_module()
    x = xp.asarray(x)
    return xp.maximum(x, xp.zeros((), x.dtype))


def _gelu(x):
    xp = array_module()
    x = xp.asarray(x)
    v = _f64(x)
    return _cast(0.5 * v * (1.0 + erf(v / xp.sqrt(2.0))), x.dtype)


def _gelu_tanh(x):
    xp = array_module()
    x = xp.asarray(x)
    v = _f64(x)
    inner = xp.sqrt(2.0 / xp.pi) * (v + 0.044715 * v ** 3)
    return _cast(0.5 * v * (1.0 + xp.tanh(inner)), x.dtype)


def _silu(x):
    xp = array_module()
    x = xp.asarray(x)
    v = _f64(x)
    with xp.errstate(over="ignore"):  # exp(-v) overflows to inf where v is very negative: silu is -0.0 there
        return _cast(v / (1.0 + xp.exp(-v)), x.dtype)


def _selu(x):
    xp = array_module()
    x = xp.asarray(x)
    v = _f64(x)
    alpha, lam = 1.6732632423543772, 1.0507009873554805
    return _cast(lam * xp.where(v > 0, v, alpha * xp.expm1(xp.minimum(v, 0))), x.dtype)


def _softmax(x, axis=-1):
    xp = array_module()
    x = xp.asarray(x)
    v = _f64(x)
    e = xp.exp(v - xp.max(v, axis=axis, keepdims=True))
    return _cast(e / xp.sum(e, axis=axis, keepdims=True), x.dtype)


def _log_softmax(x, axis=-1):
    xp = array_module()
    x = xp.asarray(x)
    v = _f64(x)
    shifted = v - xp.max(v, axis=axis, keepdims=True)
    return _cast(shifted - xp.log(xp.sum(xp.exp(shifted), axis=axis, keepdims=True)), x.dtype)


def _leakyrelu(x, alpha=0.01):
    xp = array_module()
    x = xp.asarray(x)
    v = _f64(x)
    return _cast(xp.where(v >= 0, v, v * alpha), x.dtype)


def _softplus(x, beta=1.0, threshold=20.0):
    xp = array_module()
    x = xp.asarray(x)
    v = _f64(x)
    with xp.errstate(over="ignore"):
        soft = xp.log1p(xp.exp(beta * v)) / beta
    return _cast(xp.where(beta * v > threshold, v, soft), x.dtype)


def _prelu(x, alpha, axis=1):
    xp = array_module()
    x = xp.asarray(x)
    shape = [1] * x.ndim
    shape[axis] = -1
    a = _f64(xp.asarray(alpha)).reshape(shape)
    v = _f64(x)
    return _cast(xp.where(v >= 0, v, v * a), x.dtype)


# --------------------------------------------------------------------------- normalisation
def _norm_axes(axes, ndim):
    return tuple(sorted(a + ndim if a < 0 else a for a in axes))


def _on_axes(param, axes, ndim: int):
    """``param`` (shape: the data's sizes on ``axes``, in the order ``axes`` lists them, as
    TVM's layer_norm/rms_norm take gamma, beta and weight) as float64, transposed and
    reshaped to broadcast against the data: its dims at the (sorted) ``axes``, 1 elsewhere."""
    xp = array_module()
    normalized = [a + ndim if a < 0 else a for a in axes]
    v = _f64(param)
    order = sorted(range(len(normalized)), key=normalized.__getitem__)
    v = xp.transpose(v, order) if v.ndim == len(order) else v
    shape = [1] * ndim
    for a, size in zip(sorted(normalized), v.shape):
        shape[a] = size
    return v.reshape(shape)


def _layer_norm(x, gamma, beta, axes=(-1,), epsilon=1e-5, center=True, scale=True):
    xp = array_module()
    x = xp.asarray(x)
    ax = _norm_axes(axes, x.ndim)
    v = _f64(x)
    mean = xp.mean(v, axis=ax, keepdims=True)
    var = xp.mean(xp.square(v - mean), axis=ax, keepdims=True)
    out = (v - mean) / xp.sqrt(var + epsilon)
    if scale:
        out = out * _on_axes(gamma, axes, x.ndim)
    if center:
        out = out + _on_axes(beta, axes, x.ndim)
    return _cast(out, x.dtype)


def _rms_norm(x, weight, axes=(-1,), epsilon=1e-5):
    xp = array_module()
    x = xp.asarray(x)
    ax = _norm_axes(axes, x.ndim)
    v = _f64(x)
    rms = xp.sqrt(xp.mean(xp.square(v), axis=ax, keepdims=True) + epsilon)
    return _cast(v / rms * _on_axes(weight, axes, x.ndim), x.dtype)


def _channel_shape(ndim: int, axis: int) -> list:
    shape = [1] * ndim
    shape[axis] = -1
    return shape


def _batch_norm(x, gamma, beta, moving_mean, moving_var, axis=1, epsilon=1e-5, center=True,
                scale=True, momentum=0.1, training=True):
    xp = array_module()
    x = xp.asarray(x)
    axis = axis + x.ndim if axis < 0 else axis
    shape = _channel_shape(x.ndim, axis)
    v = _f64(x)
    mm, mv = _f64(moving_mean), _f64(moving_var)
    if training:
        red = tuple(i for i in range(x.ndim) if i != axis)
        mean, var = xp.mean(v, axis=red), xp.var(v, axis=red)
        new_mean = mm * (1 - momentum) + mean * momentum
        new_var = mv * (1 - momentum) + var * momentum
    else:
        mean, var = mm, mv
        new_mean, new_var = mm, mv
    out = (v - mean.reshape(shape)) / xp.sqrt(var.reshape(shape) + epsilon)
    if scale:
        out = out * _f64(gamma).reshape(shape)
    if center:
        out = out + _f64(beta).reshape(shape)
    return [_cast(out, x.dtype), _cast(new_mean, xp.asarray(moving_mean).dtype),
            _cast(new_var, xp.asarray(moving_var).dtype)]


def _group_norm(x, gamma, beta, num_groups, channel_axis, axes, epsilon=1e-5, center=True, scale=True):
    """TVM's group_norm: the channel axis split into (groups, channels per group); the
    statistics reduce the channels of a group and ``axes`` (every other axis is kept)."""
    xp = array_module()
    x = xp.asarray(x)
    c_ax = channel_axis + x.ndim if channel_axis < 0 else channel_axis
    v = _f64(x)
    c = v.shape[c_ax]
    g = v.reshape(v.shape[:c_ax] + (num_groups, c // num_groups) + v.shape[c_ax + 1:])
    red = [c_ax + 1] + [a + 1 if a > c_ax else a for a in _norm_axes(axes, x.ndim)]
    red = tuple(sorted(red))
    mean = xp.mean(g, axis=red, keepdims=True)
    var = xp.var(g, axis=red, keepdims=True)
    out = ((g - mean) / xp.sqrt(var + epsilon)).reshape(v.shape)
    shape = _channel_shape(v.ndim, c_ax)
    if scale:
        out = out * _f64(gamma).reshape(shape)
    if center:
        out = out + _f64(beta).reshape(shape)
    return _cast(out, x.dtype)


def _instance_norm(x, gamma, beta, channel_axis=1, axes=(2, 3), epsilon=1e-5, center=True, scale=True):
    xp = array_module()
    x = xp.asarray(x)
    ax = _norm_axes(axes, x.ndim)
    v = _f64(x)
    mean = xp.mean(v, axis=ax, keepdims=True)
    var = xp.var(v, axis=ax, keepdims=True)
    out = (v - mean) / xp.sqrt(var + epsilon)
    shape = _channel_shape(x.ndim, channel_axis)
    if scale:
        out = out * _f64(gamma).reshape(shape)
    if center:
        out = out + _f64(beta).reshape(shape)
    return _cast(out, x.dtype)


def _dropout(x, rate=0.5):
    xp = array_module()
    x = xp.asarray(x)
    return [x.copy(), xp.ones_like(x)]


# --------------------------------------------------------------------------- linear algebra
def _matmul(a, b, out_dtype=None):
    xp = array_module()
    a, b = xp.asarray(a), xp.asarray(b)
    dt = np_dtype(out_dtype) if out_dtype else a.dtype
    if is_float_dtype(a.dtype) or is_float_dtype(dt):
        out = xp.matmul(a.astype(xp.float64), b.astype(xp.float64))
    else:
        out = xp.matmul(a.astype(xp.int64), b.astype(xp.int64))
    return _cast(out, dt)


# --------------------------------------------------------------------------- layouts
def _perm(layout: str, canonical: str) -> tuple:
    """Axes taking a tensor in ``layout`` to ``canonical`` (same letters, other order)."""
    if sorted(layout) != sorted(canonical):
        raise ValueError(f"layout {layout} cannot be converted to {canonical}")
    return tuple(layout.index(c) for c in canonical)


def _canonical(layout: str, first: str) -> str:
    """``first`` letters (``NC`` / ``OI``) followed by the spatial letters in layout order."""
    return first + "".join(c for c in layout if c not in first)


def _to_first(x, layout: str, first: str):
    xp = array_module()
    return xp.transpose(x, _perm(layout, _canonical(layout, first))), _canonical(layout, first)


def _from_first(x, canonical: str, layout: str):
    xp = array_module()
    return xp.transpose(x, _perm(canonical, layout))


def _windows(x, kernel, strides, dilation):
    """View of ``x`` (N, C, *spatial) as (N, C, *out, *kernel) windows."""
    xp = array_module()
    nsp = len(kernel)
    extent = [(k - 1) * d + 1 for k, d in zip(kernel, dilation)]
    view = xp.lib.stride_tricks.sliding_window_view(x, extent, axis=tuple(range(2, 2 + nsp)))
    index = [slice(None), slice(None)]
    index += [slice(None, None, s) for s in strides]
    index += [slice(None, None, d) for d in dilation]
    return view[tuple(index)]


def _conv(x, w, strides, padding, dilation, groups, data_layout, kernel_layout, out_layout,
          out_dtype):
    xp = array_module()
    x, w = xp.asarray(x), xp.asarray(w)
    dt = np_dtype(out_dtype) if out_dtype else x.dtype
    xc, xl = _to_first(x, data_layout, "NC")
    wc, _ = _to_first(w, kernel_layout, "OI")
    nsp = xc.ndim - 2
    strides, dilation = _expand(strides, nsp), _expand(dilation, nsp)
    pads = _pads(padding, nsp)
    work = xp.float64 if is_float_dtype(x.dtype) or is_float_dtype(dt) else xp.int64
    padded = xp.pad(xc.astype(work), [(0, 0), (0, 0)] + pads)
    win = _windows(padded, wc.shape[2:], strides, dilation)  # N, C, *out, *k
    n, c = padded.shape[:2]
    o = wc.shape[0]
    g = groups
    out_sp = win.shape[2:2 + nsp]
    win = win.reshape((n, g, c // g) + out_sp + wc.shape[2:])
    wg = wc.astype(work).reshape((g, o // g, c // g) + wc.shape[2:])
    letters = "hijk"[:nsp]
    klet = "pqrs"[:nsp]
    spec = f"ngc{letters}{klet},goc{klet}->ngo{letters}"
    out = xp.einsum(spec, win, wg, optimize=True).reshape((n, o) + out_sp)
    return _cast(_from_first(out, xl, out_layout or data_layout), dt)


def _conv_transpose(x, w, strides, padding, output_padding, dilation, groups, data_layout,
                    kernel_layout, out_layout, out_dtype):
    """Transposed convolution: spread the input by the strides, pad by the kernel extent
    minus the padding, and convolve with the flipped, in/out-swapped kernel."""
    xp = array_module()
    x, w = xp.asarray(x), xp.asarray(w)
    dt = np_dtype(out_dtype) if out_dtype else x.dtype
    xc, xl = _to_first(x, data_layout, "NC")
    wc, _ = _to_first(w, kernel_layout, "IO")  # (C_in, C_out / groups, *k)
    nsp = xc.ndim - 2
    strides, dilation = _expand(strides, nsp), _expand(dilation, nsp)
    opad = _expand(output_padding, nsp)
    pads = _pads(padding, nsp)
    n, c = xc.shape[:2]
    up = xp.zeros((n, c) + tuple((s - 1) * st + 1 for s, st in zip(xc.shape[2:], strides)))
    up[(slice(None), slice(None)) + tuple(slice(None, None, st) for st in strides)] = _f64(xc)
    before, after, crop = [], [], []
    for i in range(nsp):
        ext = (wc.shape[2 + i] - 1) * dilation[i]
        b, a = ext - pads[i][0], ext - pads[i][1] + opad[i]
        crop.append(slice(max(-b, 0), up.shape[2 + i] - max(-a, 0)))
        before.append(max(b, 0))
        after.append(max(a, 0))
    up = up[(slice(None), slice(None)) + tuple(crop)]
    g, og = groups, wc.shape[1]
    wk = wc.reshape((g, c // g, og) + wc.shape[2:]).swapaxes(1, 2)
    wk = xp.flip(wk.reshape((g * og, c // g) + wc.shape[2:]), axis=tuple(range(2, 2 + nsp)))
    sp = "DHW"[3 - nsp:]
    out = _conv(up, wk, (1,) * nsp, before + after, dilation, g, "NC" + sp, "OI" + sp, "NC" + sp, None)
    return _cast(_from_first(out, xl, out_layout or data_layout), dt)


def _expand(v, n: int) -> tuple:
    v = tuple(v) if not isinstance(v, int) else (v,)
    return v * n if len(v) == 1 else v


def _pads(padding, nsp: int) -> list:
    """TVM padding (``[before..., after...]`` or symmetric) -> numpy pad pairs."""
    p = _expand(padding, nsp)
    if len(p) == nsp:
        return [(v, v) for v in p]
    return [(p[i], p[i + nsp]) for i in range(nsp)]


# --------------------------------------------------------------------------- pooling
def _running_max(x, axes: list, ks, st, dl, full):
    """Max pooling of float ``x`` over its spatial ``axes`` (canonical order) in its own dtype
    and layout: exact, so a running maximum over the kernel offsets, one strided view of the
    unpadded input each (no float64 copy, no padded copy, no window tensor; on a GPU a few
    elementwise launches, and NHWC stays NHWC for the next kernel). ``full``: the padding
    pairs, ceil mode's extra included; windows wholly in the padding give -inf."""
    xp = array_module()
    np_ = numpy_module()
    n_outs = [(x.shape[ax] + full[i][0] + full[i][1] - ((ks[i] - 1) * dl[i] + 1)) // st[i] + 1
              for i, ax in enumerate(axes)]
    shape = list(x.shape)
    for ax, n in zip(axes, n_outs):
        shape[ax] = n
    fast = getattr(xp, "window_max", None)  # the device's one-kernel form (DeviceNamespace)
    out = None if fast is None else fast(x, axes, ks, st, dl, [p[0] for p in full], tuple(shape))
    if out is not None:
        return out
    out = xp.full(tuple(shape), np_.asarray(-np_.inf, dtype=x.dtype).item(), dtype=x.dtype)
    for offsets in np_.ndindex(*ks):
        src, dst = [slice(None)] * x.ndim, [slice(None)] * x.ndim
        empty = False
        for i, (ax, o) in enumerate(zip(axes, offsets)):
            shift = o * dl[i] - full[i][0]  # output p reads input p * stride + shift
            lo = max(0, -(shift // st[i]))  # the first p whose input is >= 0
            hi = min(n_outs[i] - 1, (x.shape[ax] - 1 - shift) // st[i])
            empty = empty or hi < lo
            dst[ax] = slice(lo, hi + 1)
            src[ax] = slice(lo * st[i] + shift, hi * st[i] + shift + 1, st[i])
        if not empty:
            view = out[tuple(dst)]
            xp.maximum(view, x[tuple(src)], out=view)
    return out


def _pool(kind: str) -> Callable:
    def ref(x, pool_size, strides=(1,), dilation=(1,), padding=(0,), ceil_mode=False,
            count_include_pad=False, layout="NCHW", out_layout=None):
        xp = array_module()
        x = xp.asarray(x)
        xc, xl = _to_first(x, layout, "NC")
        nsp = xc.ndim - 2
        ks, st, dl = _expand(pool_size, nsp), _expand(strides, nsp), _expand(dilation, nsp)
        pads = _pads(padding, nsp)
        extra = []
        for i in range(nsp):
            size = xc.shape[2 + i] + pads[i][0] + pads[i][1]
            ext = (ks[i] - 1) * dl[i] + 1
            n_out = (size - ext) // st[i] + 1
            if ceil_mode:
                n_ceil = -(-(size - ext) // st[i]) + 1
                # the last window must start inside the input or the left padding
                if (n_ceil - 1) * st[i] >= xc.shape[2 + i] + pads[i][0]:
                    n_ceil -= 1
                n_out = max(n_out, n_ceil)
            extra.append(max((n_out - 1) * st[i] + ext - size, 0))
        full = [(p[0], p[1] + e) for p, e in zip(pads, extra)]
        if kind == "max" and is_float_dtype(x.dtype):
            out = _running_max(x, [layout.index(c) for c in xl[2:]], ks, st, dl, full)
            return out if not out_layout or out_layout == layout else xp.transpose(out, _perm(layout, out_layout))
        v = _f64(xc) if is_float_dtype(x.dtype) else xc.astype(xp.float64)
        if kind == "max":
            padded = xp.pad(v, [(0, 0), (0, 0)] + full, constant_values=-float("inf"))
            out = _windows(padded, ks, st, dl).max(axis=tuple(range(-nsp, 0)))
        else:
            padded = xp.pad(v, [(0, 0), (0, 0)] + full)
            sums = _windows(padded, ks, st, dl).sum(axis=tuple(range(-nsp, 0)))
            # divisor: window cells inside the input (or inside input + padding)
            ones = xp.zeros((1, 1) + padded.shape[2:])
            inner = [slice(None), slice(None)]
            for i in range(nsp):
                lo = 0 if count_include_pad else full[i][0]
                hi = padded.shape[2 + i] - (full[i][1] - pads[i][1] if count_include_pad else full[i][1])
                inner.append(slice(lo, hi))
            ones[tuple(inner)] = 1.0
            counts = _windows(ones, ks, st, dl).sum(axis=tuple(range(-nsp, 0)))
            out = sums / xp.maximum(counts, 1.0)
        return _cast(_from_first(out, xl, out_layout or layout), x.dtype)

    return ref


def _adaptive_avg_pool(x, output_size=None, layout="NCHW", out_layout=None):
    xp = array_module()
    x = xp.asarray(x)
    xc, xl = _to_first(x, layout, "NC")
    nsp = xc.ndim - 2
    in_sp = xc.shape[2:]
    out_sp = in_sp if output_size is None else _expand(output_size, nsp)
    v = _f64(xc)
    out = xp.zeros(xc.shape[:2] + tuple(out_sp))
    for idx in xp.ndindex(*out_sp):
        sl = [slice(None), slice(None)]
        for i, o in enumerate(idx):
            start = (o * in_sp[i]) // out_sp[i]
            end = -(-((o + 1) * in_sp[i]) // out_sp[i])
            sl.append(slice(start, end))
        out[(slice(None), slice(None)) + idx] = v[tuple(sl)].mean(axis=tuple(range(2, 2 + nsp)))
    return _cast(_from_first(out, xl, out_layout or layout), x.dtype)


def _pad(x, *rest, pad_width=(), pad_value=0.0, pad_mode="constant"):
    xp = array_module()
    x = xp.asarray(x)
    if rest:  # older TVM: pad_value as an operand
        pad_value = rest[0]
    pairs = [(int(pad_width[2 * i]), int(pad_width[2 * i + 1])) for i in range(len(pad_width) // 2)]
    pairs += [(0, 0)] * (x.ndim - len(pairs))
    mode = {"constant": "constant", "edge": "edge", "reflect": "reflect", "replicate": "edge"}.get(pad_mode)
    if mode is None:
        raise ValueError(f"unsupported pad_mode {pad_mode!r}")
    if mode == "constant":
        # the fill as a host scalar of x's dtype: a device module's pad reads it on the host
        fill = numpy_module().asarray(pad_value.item() if hasattr(pad_value, "item") else pad_value)
        return xp.pad(x, pairs, constant_values=fill.astype(x.dtype).item())
    return xp.pad(x, pairs, mode=mode)


# --------------------------------------------------------------------------- attention
def _attention(q, k, v, bias=None, scale=None, causal_mask=None, window_size=None):
    """(B, S, N, H) x (B, Skv, N, H) x (B, Skv, N, Hv) -> (B, S, N, Hv); the bias
    broadcasts against (B, N, S, Skv). BottomRight aligns the causal diagonal with the
    last key (offset Skv - S); a window keeps the ``window_size`` keys ending there."""
    xp = array_module()
    q = xp.asarray(q)
    dt = q.dtype
    qh = xp.transpose(_f64(q), (0, 2, 1, 3))
    kh = xp.transpose(_f64(k), (0, 2, 1, 3))
    vh = xp.transpose(_f64(v), (0, 2, 1, 3))
    n_q, n_kv = qh.shape[1], kh.shape[1]
    if n_kv != n_q and n_q % n_kv == 0:  # grouped-query: share each key/value head
        kh = xp.repeat(kh, n_q // n_kv, axis=1)
        vh = xp.repeat(vh, n_q // n_kv, axis=1)
    if scale is None:
        scale = 1.0 / xp.sqrt(qh.shape[-1])
    p = xp.matmul(qh, xp.swapaxes(kh, -1, -2)) * float(scale)
    if bias is not None:
        p = p + _f64(bias)
    s, skv = p.shape[-2], p.shape[-1]
    if causal_mask is not None or window_size is not None:
        offset = 0 if causal_mask in (None, "TopLeft") else skv - s
        i = xp.arange(s)[:, None]
        j = xp.arange(skv)[None, :]
        keep = j <= i + offset
        if window_size is not None:
            keep &= j > i + offset - int(window_size)
        p = xp.where(keep, p, -xp.inf)
    with xp.errstate(invalid="ignore"):
        e = xp.exp(p - xp.max(p, axis=-1, keepdims=True))
        w = e / xp.sum(e, axis=-1, keepdims=True)
    out = xp.matmul(w, vh)
    return _cast(xp.transpose(out, (0, 2, 1, 3)), dt)


def _attention_var_len(queries, keys, values, seqstart_q, seqstart_k, max_seqlen_q=None, max_seqlen_k=None,
                       scale=None, causal_mask=None, window_size=None):
    """Packed variable-length batches: (total, N, H) tensors, sequence ``b`` at rows
    ``seqstart[b]:seqstart[b + 1]``; each sequence is attended on its own."""
    xp = array_module()
    queries = xp.asarray(queries)
    sq, sk = xp.asarray(seqstart_q).reshape(-1), xp.asarray(seqstart_k).reshape(-1)
    out = xp.zeros(queries.shape[:2] + (xp.asarray(values).shape[-1],), queries.dtype)
    for b in range(len(sq) - 1):
        q = queries[sq[b]:sq[b + 1]][None]
        k = xp.asarray(keys)[sk[b]:sk[b + 1]][None]
        v = xp.asarray(values)[sk[b]:sk[b + 1]][None]
        if q.shape[1] == 0:
            continue
        out[sq[b]:sq[b + 1]] = _attention(q, k, v, None, scale, causal_mask, window_size)[0]
    return out


def table() -> dict[str, Callable[..., Any]]:
    t: dict[str, Callable[..., Any]] = {
        "nn.relu": _relu, "nn.gelu": half_kernel_first("gelu", _gelu),
        "nn.gelu_tanh": half_kernel_first("gelu_tanh", _gelu_tanh), "nn.silu": half_kernel_first("silu", _silu), "nn.selu": _selu,
        "nn.softmax": _softmax, "nn.log_softmax": _log_softmax, "nn.leakyrelu": _leakyrelu,
        "nn.softplus": _softplus, "nn.prelu": _prelu, "nn.layer_norm": _layer_norm,
        "nn.rms_norm": _rms_norm, "nn.batch_norm": _batch_norm, "nn.group_norm": _group_norm,
        "nn.instance_norm": _instance_norm, "nn.dropout": _dropout, "matmul": _matmul,
        "nn.conv1d": _conv, "nn.conv2d": _conv, "nn.conv3d": _conv,
        "nn.conv1d_transpose": _conv_transpose, "nn.conv2d_transpose": _conv_transpose,
        "nn.conv3d_transpose": _conv_transpose,
        "nn.max_pool1d": _pool("max"), "nn.max_pool2d": _pool("max"), "nn.max_pool3d": _pool("max"),
        "nn.avg_pool1d": _pool("avg"), "nn.avg_pool2d": _pool("avg"), "nn.avg_pool3d": _pool("avg"),
        "nn.adaptive_avg_pool1d": _adaptive_avg_pool, "nn.adaptive_avg_pool2d": _adaptive_avg_pool,
        "nn.adaptive_avg_pool3d": _adaptive_avg_pool, "nn.pad": _pad,
        "nn.attention": _attention, "nn.attention_bias": _attention,
        "nn.attention_var_len": _attention_var_len,
    }
    return {"relax." + k: v for k, v in t.items()}
