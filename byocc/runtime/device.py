"""Whole models on the GPU: run what ``byocc partition -o`` wrote and ``byocc build``
compiled (docs/runtime.md).

:class:`DeviceRunner` reads ``OUT_DIR/manifest.json``, the codegen'd module
(``<stem>.codegen.relax`` and its sidecar) and the built library, and runs the entry function
on one device:

* each ``R.call_dps_packed`` of a built function is a call of the native runner
  (:mod:`byocc.runtime.native`) on device pointers, its outputs written into the run's
  arena at the offsets of the allocation plan (:mod:`byocc.runtime.memplan`);
* every operator left on the host runs on the device too: its reference
  (:mod:`byocc.ops.reference`) computes with the device's array module
  (:mod:`byocc.ops.xp`, CuPy), on the device arrays the native calls return (zero copy:
  CuPy arrays go to the runner through ``__cuda_array_interface__``, nothing is staged);
* a function the manifest lists without code (``"status": "no_code"``) runs its partitioned
  body (the ``partitioned`` module, ``<stem>.partitioned.relax``) the same way;
* constants of the module are uploaded once, with the inputs; the library's bound constants
  are bound before the first call (:meth:`~byocc.runtime.native.Library.bind_all_constants`).

:meth:`DeviceRunner.run` returns the device outputs and a :class:`RunSummary` (device time per
function from CUDA events, host<->device bytes, peak device memory, the plan);
:meth:`DeviceRunner.capture` records the whole run as one CUDA graph (static shapes) and
returns a function that replays it.

:class:`CupyDevice` is the real device; tests drive the same runner with
:class:`HostDevice` (numpy standing in for the device, so CI checks the runner's logic).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from byocc.ir import ByoccError
from byocc.ir import Call
from byocc.ir import Constant
from byocc.ir import ExprVisitor
from byocc.ir import ExternalToolError
from byocc.ir import Function
from byocc.ir import InputError
from byocc.ir import Op

from .interpreter import Interpreter
from .interpreter import _Push
from .values import ShapeValue


class DeviceUnavailable(ExternalToolError):
    """No usable CUDA device or no CuPy (exit code 3, as any missing external tool)."""


class GraphCaptureError(InputError):
    """The run cannot be captured as one CUDA graph (exit code 1): an operator's device code
    synchronises or copies from the host while capturing."""


# --------------------------------------------------------------------------- devices
class Device:
    """What the runner needs of a device. ``xp``: the array namespace the references compute
    with; the byte counters are cumulative."""

    name = "device"
    xp: Any = None

    def __init__(self) -> None:
        self.h2d_bytes = 0
        self.d2h_bytes = 0

    def upload(self, array: Any) -> Any:
        raise NotImplementedError

    def download(self, x: Any) -> Any:
        raise NotImplementedError

    def empty_bytes(self, nbytes: int) -> Any:
        raise NotImplementedError

    def view(self, arena: Any, offset: int, shape: tuple, dtype: Any) -> Any:
        raise NotImplementedError

    def stream(self) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()

    def event(self) -> Any:
        return None

    def record(self, event: Any) -> None:
        pass

    def elapsed_ms(self, start: Any, end: Any) -> float:
        return 0.0

    def synchronize(self) -> None:
        pass

    def reset_memory(self) -> None:
        pass

    def memory_bytes(self) -> tuple[int, int]:
        """(bytes in use now, bytes held: the high-water of the allocator's pool)."""
        return 0, 0

    def peak_allocated(self) -> int | None:
        """The most bytes allocated at once since the device was opened (what
        ``torch.cuda.max_memory_allocated`` reports for PyTorch), None when unknown."""
        return None

    def counted_h2d(self) -> int:
        """H2D bytes so far, the references' own uploads (through ``xp``) included."""
        return self.h2d_bytes + int(getattr(self.xp, "h2d_bytes", 0))

    @contextlib.contextmanager
    def capture(self) -> Iterator[list]:
        raise InputError(f"{self.name} cannot capture CUDA graphs")
        yield []  # pragma: no cover

    def describe(self) -> str:
        return self.name


class HostDevice(Device):
    """numpy standing in for a device: the runner's logic without a GPU (tests, CI)."""

    name = "host (numpy stand-in)"

    def __init__(self) -> None:
        super().__init__()
        from byocc.ops.xp import numpy_module

        self.xp = numpy_module()

    def upload(self, array):
        self.h2d_bytes += int(getattr(array, "nbytes", 0))
        return self.xp.array(array, copy=True)

    def download(self, x):
        self.d2h_bytes += int(getattr(x, "nbytes", 0))
        return self.xp.array(x, copy=True)

    def empty_bytes(self, nbytes):
        return self.xp.zeros(max(int(nbytes), 1), dtype=self.xp.uint8)

    def view(self, arena, offset, shape, dtype):
        n = 1
        for d in shape:
            n *= int(d)
        nbytes = n * self.xp.dtype(dtype).itemsize
        return arena[offset:offset + nbytes].view(dtype).reshape(shape)


class CupyDevice(Device):
    """One CUDA device through CuPy: its memory pool, a non-blocking stream the whole run
    (native calls included) is ordered on, CUDA events, CUDA-graph capture."""

    def __init__(self, device_id: int = 0):
        super().__init__()
        try:
            import cupy
        except ImportError as exc:
            raise DeviceUnavailable(
                f"--device cuda needs CuPy ({exc}); install it with `pip install 'byocc[gpu]'` "
                "(cupy-cuda13x) or the CuPy wheel of your CUDA version") from None
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # noqa: BLE001  (cupy's CUDARuntimeError; no driver at all)
            raise DeviceUnavailable(f"--device cuda: no CUDA device ({exc})") from None
        if count <= device_id:
            raise DeviceUnavailable(f"--device cuda: no CUDA device {device_id} ({count} found)")
        try:
            import cupyx.scipy.special as special
        except ImportError:  # pragma: no cover - ships with CuPy
            special = None
        from byocc.ops.xp import DeviceNamespace

        self.cupy = cupy
        self.device_id = device_id
        self._device = cupy.cuda.Device(device_id)
        self._device.use()
        self.xp = DeviceNamespace(cupy, special, name="cupy")
        self.pool = cupy.get_default_memory_pool()
        self._peak = _peak_hook(cupy)
        self._stream = cupy.cuda.Stream(non_blocking=True)
        props = cupy.cuda.runtime.getDeviceProperties(device_id)
        raw = props.get("name", b"CUDA device")
        self.name = raw.decode() if isinstance(raw, bytes) else str(raw)

    def upload(self, array):
        self.h2d_bytes += int(getattr(array, "nbytes", 0))
        with self._stream:
            return self.cupy.asarray(array)

    def download(self, x):
        self.d2h_bytes += int(getattr(x, "nbytes", 0))
        with self._stream:
            return self.cupy.asnumpy(x, stream=self._stream)

    def empty_bytes(self, nbytes):
        return self.cupy.empty(max(int(nbytes), 1), dtype=self.cupy.uint8)

    def view(self, arena, offset, shape, dtype):
        n = 1
        for d in shape:
            n *= int(d)
        nbytes = n * self.cupy.dtype(dtype).itemsize
        return arena[offset:offset + nbytes].view(dtype).reshape(shape)

    def stream(self):
        return self._stream

    def event(self):
        return self.cupy.cuda.Event()

    def record(self, event):
        event.record(self._stream)

    def elapsed_ms(self, start, end):
        return float(self.cupy.cuda.get_elapsed_time(start, end))

    def synchronize(self):
        self._stream.synchronize()

    def reset_memory(self):
        self.synchronize()
        self.pool.free_all_blocks()

    def memory_bytes(self):
        return int(self.pool.used_bytes()), int(self.pool.total_bytes())

    def peak_allocated(self):
        return None if self._peak is None else int(self._peak.peak)

    @contextlib.contextmanager
    def capture(self):
        """Capture what runs on the stream inside into a graph (``graph[0]`` afterwards).
        Every allocation made during the capture is kept for the graph's lifetime (its
        replays write there)."""
        cupy = self.cupy
        kept: list = []
        pool = self.pool

        def alloc(n):
            mem = pool.malloc(n)
            kept.append(mem)
            return mem

        mode = getattr(cupy.cuda.runtime, "streamCaptureModeRelaxed", 2)
        out: list = []
        with self._stream, cupy.cuda.using_allocator(alloc):
            self._stream.begin_capture(mode=mode)
            try:
                yield out
            finally:
                graph = self._stream.end_capture()
        out.append(graph)
        out.append(kept)

    def describe(self):
        return f"{self.name} (CUDA device {self.device_id}, CuPy {self.cupy.__version__})"


def open_device(kind: str) -> Device:
    """The device ``--device`` names: ``cuda``/``cuda:N`` (CuPy) or ``host`` (the stand-in)."""
    if kind == "host":
        return HostDevice()
    if kind == "cuda" or kind.startswith("cuda:"):
        index = kind.partition(":")[2]
        if index and not index.isdigit():
            raise InputError(f"--device {kind}: the device index must be a number (cuda:0)")
        return CupyDevice(int(index or 0))
    raise InputError(f"unknown device {kind!r} (cpu, cuda, cuda:N)")


def _peak_hook(cupy):
    """A CuPy memory hook counting the bytes the pool has handed out and not taken back, and
    their high-water mark (``.peak``), entered for the rest of the thread's life; None where
    this CuPy has no memory hooks. Its counts start when the device opens, before any array
    of the run exists."""
    base = getattr(getattr(cupy.cuda, "memory_hook", None), "MemoryHook", None)
    if base is None:
        return None

    class PeakHook(base):  # type: ignore[misc, valid-type]
        name = "byocc_peak"

        def __init__(self):
            super().__init__()
            self.live = 0
            self.peak = 0

        def malloc_postprocess(self, **kw):
            self.live += int(kw.get("mem_size", 0))
            self.peak = max(self.peak, self.live)

        def free_postprocess(self, **kw):
            self.live -= int(kw.get("mem_size", 0))

    hook = PeakHook()
    hook.__enter__()
    return hook


# --------------------------------------------------------------------------- the summary
@dataclass
class RunSummary:
    """What one device run did: ``functions`` rows ``{name, kind, calls, ms}``, the bytes
    moved between host and device (``h2d_run``/``d2h_run``: during the run itself),
    ``peak_bytes`` (the device pool's high-water mark over setup and run: what it holds,
    freed blocks kept for reuse included), ``peak_allocated_bytes`` (the most bytes allocated
    at once: what ``torch.cuda.max_memory_allocated`` counts; 0 where unknown), the plan."""

    device: str
    functions: list = field(default_factory=list)
    device_ms: float = 0.0
    host_ms: float = 0.0
    h2d_inputs: int = 0
    h2d_setup: int = 0
    h2d_run: int = 0
    d2h_run: int = 0
    d2h_outputs: int = 0
    peak_bytes: int = 0
    peak_used_bytes: int = 0
    peak_allocated_bytes: int = 0
    plan: dict = field(default_factory=dict)
    cuda_graph: bool = False
    notes: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


# --------------------------------------------------------------------------- the runner
class _Constants(ExprVisitor):
    def __init__(self) -> None:
        self.found: dict = {}

    def visit_constant_(self, e: Constant) -> None:
        if e.data is not None:
            self.found[e] = None


def _label(value) -> tuple[str, str]:
    if isinstance(value, Call) and isinstance(value.op, Op):
        name = value.op.name
        if name == "relax.call_dps_packed" and value.args:
            sym = getattr(value.args[0], "global_symbol", None)
            return (str(sym), "native") if sym else (name, "host op")
        return name, "host op"
    return type(value).__name__, "host"


class _DeviceInterpreter(Interpreter):
    """The interpreter with the run's arena for native outputs and per-binding timing."""

    def __init__(self, runner: DeviceRunner, mod, offloaded: Mapping[str, Function], check: bool = False):
        super().__init__(mod, packed={sym: runner._native_call(sym) for sym in runner.lib.functions}, check=check)
        self._offloaded.update(offloaded)
        self.runner = runner
        self.current = None
        self.timing: list | None = None  # [(label, kind, start_event, end_event)]

    def _step(self, frame, binding):
        self.current = binding
        timing = self.timing
        if timing is None:
            return super()._step(frame, binding)
        dev = self.runner.device
        start, end = self.runner._events(len(timing))
        dev.record(start)
        t0 = time.perf_counter()
        out = super()._step(frame, binding)
        if not isinstance(out, _Push):
            host = time.perf_counter() - t0
            dev.record(end)
            label, kind = _label(binding.value)
            if kind == "native" and label not in self.runner.lib.functions:
                kind = "interpreted"
            timing.append((label, kind, start, end, host))
        return out


class DeviceRunner:
    """A built ``OUT_DIR`` ready to run on ``device`` (see the module docstring)."""

    def __init__(self, out_dir: str | Path, device: Device, module: Any, entry: str | None = None, lib: Any = None,
                 partitioned: Any = None, check: bool = False):
        from byocc.backends.manifest import load_manifest

        from .memplan import plan_function

        self.out_dir = Path(out_dir)
        self.device = device
        self.manifest = load_manifest(self.out_dir)
        self.mod = module
        if lib is None:
            from .native import load

            lib = load(self.out_dir)
        self.lib = lib
        no_code = [str(f["symbol"]) for f in self.manifest.get("functions", ()) if f.get("status")]
        offloaded: dict = {}
        if no_code:
            part = partitioned() if callable(partitioned) else partitioned
            if part is None:
                raise InputError(f"{self.out_dir}: {', '.join(no_code)} ha{'ve' if len(no_code) > 1 else 's'} no "
                                 "code; running it needs the partitioned module")
            for name, func in part.items():
                sym = func.attrs.get("global_symbol", name) if isinstance(func, Function) else None
                if sym in no_code:
                    offloaded[sym] = func
        self.no_code = sorted(offloaded)
        self.entry = entry or "main"
        self.func = self.mod[self.entry]
        # the static scratch of each built function is planned in the arena with the outputs
        scratch = {str(f["symbol"]): int(f["scratch_bytes"]) for f in self.manifest.get("functions", ())
                   if not f.get("status") and isinstance(f.get("scratch_bytes"), int) and f["scratch_bytes"] > 0}
        self.plan = plan_function(self.func, scratch_bytes=scratch)
        self._arena = None
        self._event_pool: list = []
        self._interp = _DeviceInterpreter(self, self.mod, offloaded, check)
        self._setup_h2d = 0
        self._const_bytes = 0

    # ----------------------------------------------------------------- setup
    def setup(self) -> None:
        """Upload the module's constants, allocate the arena, bind the library's constants."""
        if self._arena is not None:
            return
        dev = self.device
        before = dev.counted_h2d()
        walk = _Constants()
        for _, func in self.mod.items():
            if isinstance(func, Function):
                walk.visit_expr(func)
        with dev.stream():
            self._interp._constants = {c: dev.upload(c.data) for c in walk.found}
            self._arena = dev.empty_bytes(self.plan.arena_bytes)
            binder = getattr(self.lib, "bind_all_constants", None)
            if binder is not None:
                self._const_bytes = binder(self._arena)
        self._setup_h2d = dev.counted_h2d() - before + self._const_bytes

    def upload(self, args: list) -> list:
        """The inputs on the device (tuples element-wise; shapes and scalars as they are)."""
        def up(v):
            if isinstance(v, tuple) and not isinstance(v, ShapeValue):
                return tuple(up(x) for x in v)
            return self.device.upload(v) if hasattr(v, "dtype") and hasattr(v, "shape") else v

        with self.device.stream():
            return [up(a) for a in args]

    def _events(self, i: int) -> tuple[Any, Any]:
        while len(self._event_pool) <= i:
            self._event_pool.append((self.device.event(), self.device.event()))
        return self._event_pool[i]

    def _native_call(self, symbol: str):
        runner = self

        def call(*args):
            xp = runner.device.xp
            fixed = []
            for a in args:
                if hasattr(a, "flags") and not a.flags.c_contiguous:
                    a = xp.ascontiguousarray(a)  # a view a host op returned: the kernels take compact tensors
                fixed.append(a)
            out = runner._planned_outputs()
            return runner.lib[symbol](*fixed, out=out, scratch=runner._planned_scratch())

        return call

    def _planned_scratch(self):
        """The arena bytes planned as the current native call's scratch, or None."""
        binding = self._interp.current
        if binding is None or self._arena is None:
            return None
        slot = self.plan.slot((binding.var, "scratch"))
        if slot is None:
            return None
        return self._arena[slot[0]:slot[0] + slot[1]]

    def _planned_outputs(self):
        binding = self._interp.current
        if binding is None or self._arena is None:
            return None
        from byocc.ir import TupleStructInfo

        var = binding.var
        sinfo = var.struct_info
        fields = list(sinfo.fields) if isinstance(sinfo, TupleStructInfo) else [sinfo]
        outs = []
        for k, f in enumerate(fields):
            slot = self.plan.slot((var, k))
            if slot is None:
                return None
            outs.append(self.device.view(self._arena, slot[0], tuple(f.shape), f.dtype))
        return outs if len(outs) > 1 else outs[0]

    # ----------------------------------------------------------------- running
    def run(self, dev_args: list, timed: bool = True) -> tuple[Any, RunSummary]:
        """Run the entry function on device inputs; the result stays on the device."""
        from byocc.ops.xp import use_array_module

        self.setup()
        dev = self.device
        summary = RunSummary(dev.describe(), plan=self.plan.as_dict(), h2d_setup=self._setup_h2d)
        h2d0, d2h0 = dev.counted_h2d(), dev.d2h_bytes
        self._interp.timing = [] if timed else None
        t0 = time.perf_counter()
        with dev.stream(), use_array_module(dev.xp):
            result = self._interp.run(dev_args, self.entry)
        dev.synchronize()
        summary.host_ms = (time.perf_counter() - t0) * 1e3
        timing = self._interp.timing or []
        self._interp.timing = None
        rows: dict = {}
        for label, kind, start, end, host in timing:
            ms = dev.elapsed_ms(start, end)
            row = rows.setdefault(label, {"name": label, "kind": kind, "calls": 0, "ms": 0.0, "host_ms": 0.0})
            row["calls"] += 1
            row["ms"] += ms
            row["host_ms"] += host * 1e3
        if timing:
            summary.device_ms = dev.elapsed_ms(timing[0][2], timing[-1][3])
        summary.functions = sorted(rows.values(), key=lambda r: -r["ms"])
        summary.h2d_run = dev.counted_h2d() - h2d0
        summary.d2h_run = dev.d2h_bytes - d2h0
        summary.peak_used_bytes, summary.peak_bytes = dev.memory_bytes()
        summary.peak_allocated_bytes = dev.peak_allocated() or 0
        if self.no_code:
            summary.notes.append(f"{len(self.no_code)} offloaded function(s) without code ran their "
                                 f"partitioned body on the device: {', '.join(self.no_code)}")
        for failure in getattr(dev.xp, "kernel_failures", ()):
            summary.notes.append(f"a float16 one-kernel operator fell back to the generic path: {failure}")
        return result, summary

    def capture(self, dev_args: list):
        """Capture one whole run as a CUDA graph (after a run that warmed every kernel up);
        returns ``(replay, outputs)``: ``replay()`` launches the graph again and the outputs
        (device arrays) hold the latest replay's values."""
        from byocc.ops.xp import use_array_module

        self.setup()
        dev = self.device
        self._interp.current = None
        try:
            with dev.capture() as captured, use_array_module(dev.xp):
                result = self._interp.run(dev_args, self.entry)
        except ByoccError:
            raise
        except Exception as exc:  # noqa: BLE001  (CuPy/CUDA refuse something the capture cannot hold)
            binding = self._interp.current
            where = ""
            if binding is not None:
                label, _ = _label(binding.value)
                where = f" at {binding.var.name_hint!r} ({label})"
            raise GraphCaptureError(f"cannot capture the run as one CUDA graph{where}: {exc}",
                                    notes=("run without --cuda-graph (eager), or report the operator",)) from exc
        graph, kept = captured[0], captured[1]
        stream = dev.stream()

        def replay() -> None:
            graph.launch(stream)

        replay.graph = graph  # type: ignore[attr-defined]
        replay.kept = kept  # type: ignore[attr-defined]
        return replay, result


def module_paths(out_dir: str | Path) -> tuple[Path, Path]:
    """``(<stem>.codegen.relax, <stem>.partitioned.relax)`` of a folder ``partition -o``
    wrote (the one codegen module in it, or the one whose stem the library names)."""
    from byocc.backends.manifest import load_manifest

    root = Path(out_dir)
    manifest = load_manifest(root)
    found = sorted(p.name[: -len(".codegen.relax")] for p in root.glob("*.codegen.relax"))
    if not found:
        raise InputError(f"{root}: no <stem>.codegen.relax (write the folder with `byocc partition -o`)")
    stem = found[0] if len(found) == 1 else next((s for s in found if s in str(manifest.get("library", ""))), None)
    if stem is None:
        raise InputError(f"{root}: several codegen modules ({', '.join(found)}); keep one per folder")
    return root / f"{stem}.codegen.relax", root / f"{stem}.partitioned.relax"


__all__ = ["CupyDevice", "Device", "DeviceRunner", "DeviceUnavailable", "GraphCaptureError", "HostDevice", "RunSummary",
           "module_paths", "open_device"]
