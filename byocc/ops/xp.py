"""The array module the operator references compute with (docs/runtime.md#array-module).

Every reference in :mod:`byocc.ops.reference`, :mod:`~byocc.ops.reference_tensor`,
:mod:`~byocc.ops.reference_nn` and :mod:`~byocc.ops.reference_image` asks
:func:`array_module` for its namespace instead of importing numpy, so the same code runs on
numpy (the interpreter, constant folding, CI) and on the GPU through CuPy (``byocc run
--device cuda``), whose API is numpy's. The namespace is chosen by the caller, not guessed
from the operands: ``with use_array_module(ns): ...`` (the GPU runner enters it once per run).

:class:`DeviceNamespace` adapts a numpy-compatible device module (CuPy) to what the
references use beyond the shared API: numpy's dtype utilities, a no-op ``errstate`` (device
math is IEEE, nothing to silence), ``erf`` from ``cupyx.scipy.special``, a
``sliding_window_view``; and it *counts* every host array it is handed (``asarray`` of a numpy
array is a host-to-device copy), so a run can report the bytes it moved and a reference
that pulls host data into a device run is seen, not hidden.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

_ACTIVE: list[Any] = []  # a stack; empty: numpy
_NUMPY: list[Any] = []


def numpy_module() -> Any:
    if not _NUMPY:
        import numpy

        _NUMPY.append(numpy)
    return _NUMPY[0]


def array_module() -> Any:
    """The namespace references compute with now: numpy unless a caller entered
    :func:`use_array_module`."""
    return _ACTIVE[-1] if _ACTIVE else (_NUMPY[0] if _NUMPY else numpy_module())


@contextlib.contextmanager
def use_array_module(namespace: Any) -> Iterator[Any]:
    """Run the references with ``namespace`` (numpy, or a :class:`DeviceNamespace`) inside."""
    _ACTIVE.append(namespace)
    try:
        yield namespace
    finally:
        _ACTIVE.pop()


def is_host_array(x: Any) -> bool:
    """A numpy array or scalar (what a device namespace must copy to the device)."""
    np = numpy_module()
    return isinstance(x, (np.ndarray, np.generic))


class _NoErrstate:
    def __init__(self, **_: Any) -> None:
        pass

    def __enter__(self) -> _NoErrstate:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


class _StrideTricks:
    def __init__(self, ns: DeviceNamespace):
        self._ns = ns

    def sliding_window_view(self, x: Any, window_shape: Any, axis: Any = None) -> Any:
        """numpy's ``sliding_window_view``, as one ``as_strided`` view of the device array
        (CuPy's own copies the window shape to the device, which a CUDA-graph capture refuses)."""
        window = tuple(window_shape) if not isinstance(window_shape, int) else (window_shape,)
        axes = tuple(range(x.ndim)) if axis is None else (axis,) if isinstance(axis, int) else tuple(axis)
        axes = tuple(a + x.ndim if a < 0 else a for a in axes)
        shape = list(x.shape)
        for a, w in zip(axes, window):
            if shape[a] < w:
                raise ValueError("window shape cannot be larger than input array shape")
            shape[a] -= w - 1
        strides = tuple(x.strides) + tuple(x.strides[a] for a in axes)
        return self._ns.module.lib.stride_tricks.as_strided(x, tuple(shape) + window, strides)


class _Lib:
    def __init__(self, ns: DeviceNamespace):
        self.stride_tricks = _StrideTricks(ns)


#: numpy attributes that are host-side utilities (dtypes, index iteration), the same for
#: every array module.
_FROM_NUMPY = frozenset({"dtype", "iinfo", "finfo", "issubdtype", "integer", "floating", "generic",
                         "ndindex", "bool_", "number", "signedinteger", "unsignedinteger"})


class DeviceNamespace:
    """A numpy-compatible device module (CuPy) as the references' array namespace.

    ``h2d_bytes``/``h2d_copies`` count the host arrays ``asarray``/``array`` copied to the
    device; ``module`` is the wrapped module; ``ndarray`` its array type. ``half_work``: the
    dtype float16/bfloat16/float8 operands compute in (float32, as the GPU kernels do; None:
    float64, the host's numerics); float32 and float64 operands compute in float64 either way.
    """

    def __init__(self, module: Any, special: Any = None, name: str | None = None,
                 half_work: str | None = "float32"):
        self.module = module
        self.half_work = half_work
        self._kernels: dict[str, Any] = {}
        #: why a ``half_unary`` kernel could not be built (the run summary's notes)
        self.kernel_failures: list[str] = []
        self.name = name or getattr(module, "__name__", "device")
        self.ndarray = module.ndarray
        self.errstate = _NoErrstate
        self.lib = _Lib(self)
        self._special = special
        self.h2d_bytes = 0
        self.h2d_copies = 0

    def __repr__(self) -> str:
        return f"<array module {self.name}>"

    def __getattr__(self, name: str) -> Any:
        if name in _FROM_NUMPY:
            value = getattr(numpy_module(), name)
        else:
            value = getattr(self.module, name)
        setattr(self, name, value)  # found once
        return value

    def _count(self, x: Any) -> None:
        if is_host_array(x) and getattr(x, "nbytes", 0):
            self.h2d_bytes += int(x.nbytes)
            self.h2d_copies += 1

    def asarray(self, x: Any, dtype: Any = None) -> Any:
        if type(x) is self.ndarray:
            return x if dtype is None or x.dtype == dtype else x.astype(dtype)
        if isinstance(x, (list, tuple)) and any(isinstance(v, self.ndarray) for v in x):
            return self.module.stack([self.asarray(v, dtype) for v in x])
        self._count(x)
        return self.module.asarray(x, dtype=dtype)

    def array(self, x: Any, dtype: Any = None, copy: bool = True) -> Any:
        self._count(x)
        return self.module.array(x, dtype=dtype, copy=copy)

    def erf(self, x: Any) -> Any:
        if self._special is None:
            raise AttributeError(f"{self.name} has no erf (cupyx.scipy.special is missing)")
        return self._special.erf(x)

    def frompyfunc(self, *args: Any, **kwargs: Any) -> Any:
        raise AttributeError("frompyfunc: a Python element loop cannot run on the device")

    def half_unary(self, name: str, x: Any) -> Any:
        """``name`` (a key of :data:`HALF_UNARY`) of the float16 device array ``x`` in one
        kernel that reads x, computes in float32 and writes float16 (instead of a cast, a few
        float32 kernels and a cast back: Llama's SiLU over 2048x11008 took 0.65 ms that way);
        None when the module has no ``ElementwiseKernel`` (numpy, a test double), ``half_work``
        is not float32 or ``x`` is another dtype, and the caller computes as usual."""
        make = getattr(self.module, "ElementwiseKernel", None)
        if (make is None or self.half_work != "float32" or name not in HALF_UNARY or type(x) is not self.ndarray
                or str(x.dtype) != "float16"):
            return None
        return self._kernel(name, lambda: make(
            "float16 x", "float16 y",
            f"const float v = static_cast<float>(x); y = static_cast<float16>({HALF_UNARY[name]});",
            f"byocc_half_{name}"), lambda kernel: kernel(x))

    def window_max(self, x: Any, axes: list, ks, st, dl, before, out_shape: tuple) -> Any:
        """Max pooling of the rank-4 device array ``x`` over its two spatial ``axes`` in one
        kernel (:data:`WINDOW_MAX_BODY`: one thread an output element, its window read from
        the unpadded input), in x's own dtype and layout; ``before``: the padding before each
        spatial axis, ``out_shape`` the output's. None where the module has no
        ``ElementwiseKernel`` or x is not a float16/float32/float64 device array of rank 4 (the
        caller takes the running maximum, a launch a window tap: ResNet-50's 3x3/2 pool at
        batch 32 read and wrote 38 MB nine times that way), or when the kernel fails to build
        (recorded in ``kernel_failures``)."""
        make = getattr(self.module, "ElementwiseKernel", None)
        if (make is None or type(x) is not self.ndarray or x.ndim != 4 or len(axes) != 2
                or str(x.dtype) not in ("float16", "float32", "float64")):
            return None
        x = self.module.ascontiguousarray(x)
        args = (x, x.dtype.type(-numpy_module().inf), *x.shape, *out_shape[1:], axes[0], axes[1], ks[0], ks[1],
                st[0], st[1], dl[0], dl[1], before[0], before[1])

        def run(kernel):
            out = self.module.empty(out_shape, dtype=x.dtype)
            kernel(*args, out)
            return out

        return self._kernel("window_max", lambda: make(WINDOW_MAX_PARAMS, "T y", WINDOW_MAX_BODY, "byocc_window_max"),
                            run)

    def _kernel(self, name: str, build: Any, run: Any) -> Any:
        """``run(kernel)`` with the one-kernel form ``name``, built once by ``build()``. Its
        first run compiles it (NVRTC); where that fails, ``kernel_failures`` says why, the
        form is not tried again and None is returned (the caller computes as usual). A form
        that once ran raises its later errors."""
        kernel = self._kernels.get(name)
        if kernel is False:
            return None
        if kernel is not None:
            return run(kernel)
        kernel = build()
        try:
            out = run(kernel)
        except Exception as exc:  # noqa: BLE001 - any compile or launch error
            self._kernels[name] = False
            self.kernel_failures.append(f"{name}: {type(exc).__name__}: {str(exc)[:200]}")
            return None
        self._kernels[name] = kernel
        return out


#: Parameters of the one-kernel max pooling (:meth:`DeviceNamespace.window_max`): the input,
#: the value of an empty window (-inf), the input dims, the output's last three, the spatial
#: axes, and per spatial axis the window, stride, dilation and padding before.
WINDOW_MAX_PARAMS = ("raw T x, T lowest, int64 d0, int64 d1, int64 d2, int64 d3, int64 o1, int64 o2, int64 o3, "
                     "int64 ah, int64 aw, int64 kh, int64 kw, int64 sh, int64 sw, int64 dh, int64 dw, "
                     "int64 ph, int64 pw")

#: Its body (CuPy ElementwiseKernel: ``i`` the output element, row-major; plain C++, so the
#: tests compile it on the host too). NaN propagates as numpy's ``maximum`` does.
WINDOW_MAX_BODY = """\
long long c[4];
long long rest = i;
c[3] = rest % o3; rest /= o3;
c[2] = rest % o2; rest /= o2;
c[1] = rest % o1; c[0] = rest / o1;
const long long dims[4] = {d0, d1, d2, d3};
const long long oh = c[ah], ow = c[aw];
T best = lowest;
for (long long r = 0; r < kh; ++r) {
  const long long h = oh * sh + r * dh - ph;
  if (h < 0 || h >= dims[ah]) continue;
  c[ah] = h;
  for (long long s = 0; s < kw; ++s) {
    const long long w = ow * sw + s * dw - pw;
    if (w < 0 || w >= dims[aw]) continue;
    c[aw] = w;
    const T v = x[((c[0] * d1 + c[1]) * d2 + c[2]) * d3 + c[3]];
    if (v != v || v > best) best = v;
  }
}
y = best;
"""


#: The float32 expression of ``v`` each one-kernel float16 operator computes (``half_unary``):
#: the references' functions (byocc/ops/reference*.py) in forms without cancellation in float32
#: (``1 + erf(z) = erfc(-z)``, ``1 + tanh(u) = 2 / (1 + exp(-2u))``), so each result is within
#: one float16 rounding of the float64 reference in both tails.
HALF_UNARY = {
    "silu": "v / (1.0f + expf(-v))",
    "sigmoid": "1.0f / (1.0f + expf(-v))",
    "gelu": "0.5f * v * erfcf(-v * 0.70710678118654752f)",
    "gelu_tanh": "v / (1.0f + expf(-1.5957691216057308f * (v + 0.044715f * v * v * v)))",
}


__all__ = ["HALF_UNARY", "WINDOW_MAX_BODY", "WINDOW_MAX_PARAMS", "DeviceNamespace", "array_module", "is_host_array", "numpy_module", "use_array_module"]
