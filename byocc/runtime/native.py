"""The native runner: call a built byocc library from Python (docs/codegen.md#common-contract, #native-runner).

``lib = load(DIR)`` opens ``DIR/<manifest library>`` with ctypes and checks
``byocc_abi_version()``; ``lib.functions`` maps each symbol to its manifest entry;
``lib[symbol](*tensors, out=None, stream=None)`` calls it:

* tensors: any ``__dlpack__`` objects. PyTorch tensors and ``__cuda_array_interface__``
  producers (CuPy, Numba) are described from their attributes (fast path); anything else
  through its own DLPack capsule, zero copy.
* ``out``: allocated with the inputs' framework on their device when None (``torch.empty``,
  ``cupy.empty``, ``numpy.empty``), the shape from the manifest's ``outputs`` with symbolic
  dims read from the inputs through ``symbols``.
* ``stream``: an int handle, a ``torch.cuda.Stream``/``cupy`` stream, or None for the
  framework's current stream (0 otherwise). Nothing synchronises unless ``lib.synchronize()``.
* scratch: ``byocc_scratch_bytes_<symbol>`` is asked per call (unless the manifest says 0);
  one buffer per (device, stream), grown when needed and reused; outgrown buffers are kept
  until ``synchronize()`` (a kernel may still read them).
* bound constants: on the first call per device, each manifest ``constants`` entry is read
  from its ``npz``, uploaded with the inputs' framework and bound with ``byocc_set_constant``.
* a non-zero return raises :class:`ByoccRuntimeError` with the code and
  ``byocc_last_error()``'s text.

Per call the host work is: describe each tensor into a cached per-thread ``DLTensor``
buffer (``struct.pack_into``), one optional scratch query, one foreign call.
``lib.host_overhead_us(symbol, *tensors)`` measures all of it but the entry call.
"""

from __future__ import annotations

import ast
import ctypes
import threading
import time
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from byocc.ir import ByoccError
from byocc.ir import ExternalToolError
from byocc.ir import InputError

from .dlpack import Framework
from .dlpack import TensorSlots
from .dlpack import framework_of
from .dlpack import frameworks


def error_name(code: int) -> str:
    """The name of return code ``code`` (``E_SHAPE``), from the enum of the packaged
    ``byocc_abi.h`` (the one table of the codes); ``E_<code>`` for a code it lacks."""
    from byocc.backends.cuda.common import return_codes

    return return_codes().get(code, f"E_{code}")


class ByoccRuntimeError(ByoccError):
    """A byocc library function returned a non-zero code (``code``; ``name`` its
    ``BYOCC_E_*`` name); the message is ``byocc_last_error()``'s text."""

    exit_code = 3

    def __init__(self, code: int, message: str, symbol: str | None = None):
        self.code = int(code)
        self.name = error_name(self.code)
        self.symbol = symbol
        where = f"{symbol}: " if symbol else ""
        super().__init__(f"{where}{self.name} ({self.code}): {message}")
        self.detail = message


# --------------------------------------------------------------------------- shapes
def _dim_resolver(dim: Any, symbols: Mapping[str, Sequence], n_in: int) -> Callable[[Sequence], int]:
    """A function of the input tensors giving one output dim."""
    if isinstance(dim, int):
        return lambda tensors, d=dim: d

    def where(name: str) -> tuple[int, int]:
        for arg, axis in symbols.get(name, ()):
            if arg < n_in:
                return int(arg), int(axis)
        raise InputError(f"symbolic dim {name!r} is not bound by any input")

    text = str(dim)
    if text in symbols:
        arg, axis = where(text)
        return lambda tensors: int(tensors[arg].shape[axis])
    tree = ast.parse(text, mode="eval")
    names = {n.id: where(n.id) for n in ast.walk(tree) if isinstance(n, ast.Name)}
    code = compile(tree, "<dim>", "eval")
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Name, ast.Constant,
                                 ast.Load, ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod,
                                 ast.USub)):
            raise InputError(f"cannot evaluate the output dim {text!r}")
    return lambda tensors: int(eval(code, {"__builtins__": {}},  # noqa: S307 (checked above)
                                    {k: int(tensors[a].shape[x]) for k, (a, x) in names.items()}))


# --------------------------------------------------------------------------- library
class Function:
    """One exported symbol of a :class:`Library`; call it like a function."""

    def __init__(self, lib: Library, entry: Mapping[str, Any]):
        self.lib = lib
        self.entry = entry
        self.symbol = str(entry["symbol"])
        self.num_args = int(entry["num_args"])
        self.num_inputs = len(entry["args"])
        cdll = lib.cdll
        try:
            self._fn = getattr(cdll, self.symbol)
            self._scratch_fn = getattr(cdll, f"byocc_scratch_bytes_{self.symbol}")
        except AttributeError as exc:
            raise InputError(f"{lib.path}: the library does not export {self.symbol} ({exc})") from None
        self._fn.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p]
        self._fn.restype = ctypes.c_int32
        self._scratch_fn.argtypes = [ctypes.c_void_p, ctypes.c_int32]
        self._scratch_fn.restype = ctypes.c_uint64
        symbols = entry.get("symbols") or {}
        self._outputs = [(str(o["dtype"]), [_dim_resolver(d, symbols, self.num_inputs) for d in o["shape"]])
                         for o in entry["outputs"]]
        self._static_scratch = entry.get("scratch_bytes")
        self._constants = tuple(str(c["name"]) for c in entry.get("constants") or ())
        ranks = [len(a["shape"]) for a in list(entry["args"]) + list(entry["outputs"])]
        self._max_rank = max([8, *ranks])
        self._tls = threading.local()

    def __repr__(self) -> str:
        return f"<byocc function {self.symbol} ({self.num_inputs} inputs)>"

    def _slots(self) -> TensorSlots:
        slots = getattr(self._tls, "slots", None)
        if slots is None:
            slots = self._tls.slots = TensorSlots(self.num_args, self._max_rank)
        return slots

    def output_shapes(self, *tensors: Any) -> tuple[tuple[int, ...], ...]:
        """The shape of each output for these inputs (symbolic dims resolved)."""
        return tuple(tuple(r(tensors) for r in dims) for _, dims in self._outputs)

    def allocate_outputs(self, *tensors: Any) -> tuple[Any, ...]:
        """Empty outputs for these inputs, made by their framework on their device."""
        first = tensors[0]
        fw = framework_of(first)
        return tuple(fw.empty(first, shape, dtype)
                     for shape, (dtype, _) in zip(self.output_shapes(*tensors), self._outputs))

    def _prepare(self, tensors: Sequence[Any], out: Any, stream: Any, given_scratch: Any = None):
        if len(tensors) != self.num_inputs:
            raise ByoccRuntimeError(1, f"expected {self.num_inputs} input tensors, got {len(tensors)}",
                                    self.symbol)
        first = tensors[0] if tensors else out
        fw = frameworks.get(type(first)) or framework_of(first)
        device = fw.device(first)
        if out is None:
            outs = [fw.empty(first, tuple(r(tensors) for r in dims), dtype) for dtype, dims in self._outputs]
        else:
            outs = list(out) if isinstance(out, (tuple, list)) else [out]
            if len(outs) != len(self._outputs):
                raise ByoccRuntimeError(1, f"expected {len(self._outputs)} outputs, got {len(outs)}", self.symbol)
        handle = _stream_handle(stream) if stream is not None else fw.current_stream(device)
        if self._constants:
            self.lib._bind_constants(self._constants, fw, first, device)
        slots = self._slots()
        if slots.extra:
            slots.extra.clear()
        keep: list = []
        known = frameworks
        for i, t in enumerate(tensors):
            (known.get(type(t)) or framework_of(t)).describe(slots, i, t, keep, handle)
        for j, t in enumerate(outs):
            (known.get(type(t)) or framework_of(t)).describe(slots, self.num_inputs + j, t, keep, handle)
        used = self.lib._used
        if device not in used:
            used[device] = fw
        nbytes = 0
        if self._static_scratch != 0:
            nbytes = int(self._scratch_fn(slots.pointers_address, self.num_args))
        scratch = 0
        if nbytes and given_scratch is not None and int(given_scratch.nbytes) >= nbytes:
            scratch = _data_pointer(given_scratch)
            if scratch % 256:  # the wrappers take 256-byte aligned scratch
                scratch = 0
            else:
                nbytes = int(given_scratch.nbytes)
        if nbytes and not scratch:
            scratch = self.lib._scratch(fw, first, device, handle, nbytes)
        return slots, keep, outs, scratch, nbytes, handle

    def __call__(self, *tensors: Any, out: Any = None, stream: Any = None, scratch: Any = None) -> Any:
        """Run the function on ``tensors`` (outputs allocated unless ``out`` is given) on
        ``stream``. ``scratch``: device bytes (an array of the tensors' framework, 256-byte
        aligned) to use as scratch when large enough, instead of the library's own buffer."""
        slots, keep, outs, scratch, nbytes, handle = self._prepare(tensors, out, stream, scratch)
        rc = self._fn(slots.pointers_address, self.num_args, scratch, nbytes, handle)
        del keep  # capsules may be released only after the call returned
        if rc != 0:
            raise ByoccRuntimeError(rc, self.lib.last_error(), self.symbol)
        return outs[0] if len(outs) == 1 else tuple(outs)


def _stream_handle(stream: Any) -> int:
    if isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr", "handle"):
        value = getattr(stream, attr, None)
        if isinstance(value, int):
            return value
    raise InputError(f"cannot use {type(stream).__name__} as a CUDA stream")


class Library:
    """A loaded ``libbyocc_<stem>.so`` and its manifest."""

    def __init__(self, directory: Path, manifest: Mapping[str, Any], cdll: ctypes.CDLL, path: Path):
        self.directory = directory
        self.manifest = manifest
        self.cdll = cdll
        self.path = path
        self.functions: dict[str, Mapping[str, Any]] = {
            str(f["symbol"]): f for f in manifest["functions"] if f.get("symbol") and not f.get("status")}
        self._callables: dict[str, Function] = {}
        self._lock = threading.Lock()
        self._scratch_buffers: dict[tuple, tuple[Any, int, int]] = {}
        self._retired: list[Any] = []
        self._bound: dict[str, tuple[int, int]] = {}  # constant name -> device it is bound on
        self._uploads: dict[tuple[str, tuple[int, int]], Any] = {}
        self._const_slots: dict[tuple[str, tuple[int, int]], Any] = {}
        self._used: dict[tuple[int, int], Framework] = {}
        cdll.byocc_last_error.restype = ctypes.c_char_p
        cdll.byocc_last_error.argtypes = []
        cdll.byocc_set_constant.restype = ctypes.c_int32
        cdll.byocc_set_constant.argtypes = [ctypes.c_char_p, ctypes.c_void_p]

    def __repr__(self) -> str:
        return f"<byocc library {self.path} ({len(self.functions)} functions)>"

    def __getitem__(self, symbol: str) -> Function:
        fn = self._callables.get(symbol)
        if fn is None:
            if symbol not in self.functions:
                known = ", ".join(sorted(self.functions)) or "none"
                raise KeyError(f"{symbol!r} is not a function of {self.path.name} (functions: {known})")
            fn = self._callables[symbol] = Function(self, self.functions[symbol])
        return fn

    def __contains__(self, symbol: object) -> bool:
        return symbol in self.functions

    def __iter__(self) -> Iterator[str]:
        return iter(self.functions)

    def abi_version(self) -> int:
        return int(self.cdll.byocc_abi_version())

    def last_error(self) -> str:
        raw = self.cdll.byocc_last_error()
        return raw.decode("utf-8", "replace") if raw else ""

    def synchronize(self) -> None:
        """Wait for every device this library ran on; releases outgrown scratch buffers. A
        fault of an earlier asynchronous launch surfaces here."""
        for device, fw in list(self._used.items()):
            try:
                fw.synchronize(device)
            except ByoccError:
                raise
            except Exception as exc:  # the framework's own error type (torch: RuntimeError)
                raise ByoccRuntimeError(9, str(exc)) from exc
        with self._lock:
            self._retired.clear()

    def bind_all_constants(self, like: Any) -> int:
        """Upload and bind every function's bound constants on ``like``'s device now (a run
        then moves no weights); the bytes uploaded (0 when they were already bound)."""
        names = [str(c["name"]) for f in self.functions.values() for c in f.get("constants") or ()]
        if not names:
            return 0
        fw = framework_of(like)
        device = fw.device(like)
        todo = [n for n in dict.fromkeys(names) if self._bound.get(n) != device]
        self._bind_constants(todo, fw, like, device)
        return sum(int(getattr(self._uploads[(n, device)], "nbytes", 0)) for n in todo)

    def host_overhead_us(self, symbol: str, *tensors: Any, out: Any = None, stream: Any = None,
                         n: int = 1000) -> float:
        """Mean microseconds of a call's host work except the entry call itself (argument
        description, output allocation when ``out`` is None, scratch query and lookup)."""
        fn = self[symbol]
        fn._prepare(tensors, out, stream)
        start = time.perf_counter()
        for _ in range(n):
            fn._prepare(tensors, out, stream)
        return (time.perf_counter() - start) * 1e6 / max(n, 1)

    # ----------------------------------------------------------------- internals
    def _scratch(self, fw: Framework, like: Any, device: tuple[int, int], stream: int, nbytes: int) -> int:
        key = (device, stream)
        held = self._scratch_buffers.get(key)
        if held is not None and held[2] >= nbytes:
            return held[1]
        with self._lock:
            held = self._scratch_buffers.get(key)
            if held is not None and held[2] >= nbytes:
                return held[1]
            size = max(nbytes, 2 * held[2] if held else 0)
            size = (size + (1 << 20) - 1) & ~((1 << 20) - 1)  # whole MiB
            buf = fw.empty(like, (size,), "uint8")
            if held is not None:
                self._retired.append(held[0])
            ptr = _data_pointer(buf)
            self._scratch_buffers[key] = (buf, ptr, size)
            self._used[device] = fw
            return ptr

    def _bind_constants(self, names: Sequence[str], fw: Framework, like: Any, device: tuple[int, int]) -> None:
        if all(self._bound.get(n) == device for n in names):
            return
        with self._lock:
            self._used[device] = fw
            for name in names:
                if self._bound.get(name) == device:
                    continue
                value = self._uploads.get((name, device))
                if value is None:
                    value = self._uploads[(name, device)] = fw.upload(like, self._constant_array(name))
                slots = TensorSlots(1, max(8, len(value.shape)))
                keep: list = []
                framework_of(value).describe(slots, 0, value, keep)
                rc = self.cdll.byocc_set_constant(name.encode(), slots.pointers[0])
                if rc != 0:
                    raise ByoccRuntimeError(rc, self.last_error(), "byocc_set_constant")
                self._const_slots[(name, device)] = (slots, keep)
                self._bound[name] = device

    def _constant_array(self, name: str) -> Any:
        import numpy as np

        for f in self.manifest["functions"]:
            for c in f.get("constants") or ():
                if c["name"] != name:
                    continue
                npz = c.get("npz") or self.manifest.get("constants_file")
                if not npz:
                    raise InputError(f"constant {name}: the manifest names no npz file")
                path = self.directory / npz
                try:
                    with np.load(path, allow_pickle=False) as data:
                        array = data[c.get("key") or name]
                except (OSError, KeyError) as exc:
                    raise InputError(f"constant {name}: cannot read {path} [{c.get('key') or name}]: {exc}") from None
                return np.ascontiguousarray(array.astype(c["dtype"], copy=False)).reshape(
                    [int(d) for d in c["shape"]])
        raise InputError(f"constant {name} is not in the manifest")


def _data_pointer(t: Any) -> int:
    if hasattr(t, "data_ptr"):
        return int(t.data_ptr())
    cai = getattr(t, "__cuda_array_interface__", None)
    if cai is not None:
        return int(cai["data"][0])
    return int(t.ctypes.data)


def load(directory: str | Path) -> Library:
    """Open the library ``byocc build DIR`` produced, per ``DIR/manifest.json``."""
    from byocc.backends.codegen import ABI_VERSION
    from byocc.backends.manifest import load_manifest

    root = Path(directory)
    manifest = load_manifest(root)
    path = root / str(manifest["library"])
    if not path.is_file():
        raise InputError(f"{path}: no library (build it with `byocc build {directory}`)")
    try:
        cdll = ctypes.CDLL(str(path.resolve()), mode=ctypes.RTLD_LOCAL)
    except OSError as exc:
        raise ExternalToolError(f"cannot load {path}: {exc}") from None
    lib = Library(root, manifest, cdll, path)
    version = lib.abi_version()
    if version != ABI_VERSION:
        raise ByoccRuntimeError(11, f"{path} has ABI version {version}, this byocc calls version {ABI_VERSION}")
    return lib


__all__ = ["ByoccRuntimeError", "Function", "Library", "error_name", "load"]
