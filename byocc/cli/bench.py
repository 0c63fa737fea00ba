"""``byocc bench OUT_DIR``: end-to-end latency of a built folder on the GPU, against the
same model in onnxruntime or PyTorch when given (docs/runtime.md#bench).

Every measurement: ``--warmup`` untimed calls, then ``--iters`` timed calls, each one a
complete forward pass that ends with a synchronisation (what a caller waiting for the result
sees: host work included); the device time of each call comes from CUDA events around it.
Reported: median, 10th and 90th percentile, min, throughput (the first input's leading
dimension per second), peak device memory. numpy, CuPy, torch and onnxruntime are imported
inside the command.
"""

from __future__ import annotations

import json
import time

import click

from .options import DIM
from .options import DeviceType
from .output import render_table


@click.command("bench")
@click.argument("folder", metavar="OUT_DIR")
@click.option("--device", default="cuda", type=DeviceType(allow_cpu=False), show_default=True, metavar="cuda[:N]", help="The GPU to run on.")
@click.option("--warmup", type=click.IntRange(min=0), default=10, show_default=True, help="Untimed calls first.")
@click.option("--iters", type=click.IntRange(min=1), default=100, show_default=True, help="Timed calls.")
@click.option("--inputs", "inputs_file", metavar="FILE.npz", help="Arrays for the parameters (default: random).")
@click.option("--random-inputs", "seed", type=click.IntRange(min=0), metavar="SEED", help="Seed of the random inputs.")
@click.option("--entry", metavar="FUNC", help="The function to run (default: main).")
@click.option("--dim", "dims", multiple=True, type=DIM, metavar="NAME=VALUE", help="A symbolic dimension's value.")
@click.option("--cuda-graph/--no-cuda-graph", "graph", default=True, show_default=True,
              help="Also time byocc's run replayed as one CUDA graph.")
@click.option("--onnx", "onnx_file", metavar="MODEL.onnx",
              help="Also time this ONNX model in onnxruntime (CUDA provider when it has one), same inputs.")
@click.option("--reference", metavar="FILE.py:FUNC",
              help="Also time PyTorch: FUNC() returns a callable taking the inputs as CUDA tensors "
                   "(eager, and replayed as one CUDA graph).")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout (the table goes to stderr).")
def bench(folder: str, device: str, warmup: int, iters: int, inputs_file: str | None, seed: int | None,
          entry: str | None, dims, graph: bool, onnx_file: str | None, reference: str | None, as_json: bool) -> None:
    """Time OUT_DIR (built with `byocc build`) end to end on the GPU.

    \b
    Examples:
      byocc bench out/ --iters 200
      byocc bench cnn_out/ --onnx samples/small_cnn.onnx --json
      byocc bench mlp_out/ --reference bench/gpu/references.py:mlp_fp16
    """
    from .device_run import host_inputs
    from .device_run import open_runner
    from .run import quiet_numpy

    if inputs_file and seed is not None:
        raise click.UsageError("give either --inputs or --random-inputs, not both")
    if reference is not None and ":" not in reference:
        raise click.UsageError("--reference takes FILE.py:FUNC")
    runner, entry, func = open_runner(folder, device, entry)
    args = host_inputs(func, inputs_file, seed, dims)
    batch = _batch(args)
    results = []
    with quiet_numpy():
        dev_args = runner.upload(args)
        runner.device.reset_memory()
        results.append(_bench_byocc(runner, dev_args, warmup, iters, batch))
        if graph:
            results.append(_bench_byocc_graph(runner, dev_args, warmup, iters, batch))
    if onnx_file:
        results.append(_bench_onnx(onnx_file, func, args, warmup, iters, batch))
    if reference:
        results.extend(_bench_torch(reference, args, warmup, iters, batch))
    base = results[0]["median_ms"]
    rows = []
    for r in results:
        if r.get("skipped"):
            rows.append([r["impl"], r["mode"], "-", "-", "-", "-", "-", "-"])
            click.echo(f"note: {r['impl']} {r['mode']} skipped: {r['skipped']}", err=True)
            continue
        rows.append([r["impl"], r["mode"], f"{r['median_ms']:.4f}", f"{r['p10_ms']:.4f}-{r['p90_ms']:.4f}",
                     f"{r['device_ms']:.4f}", f"{r['throughput']:.1f}", _mib(r.get("peak_bytes")),
                     f"{r['median_ms'] / base:.2f}"])
    title = (f"bench {folder} ({entry}) on {runner.device.describe()}: {iters} calls after {warmup} warm-up, "
             f"batch {batch}")
    render_table(title, ["impl", "mode", "median ms", "p10-p90 ms", "device ms", "items/s", "peak MiB",
                         "/ byocc eager"], rows, stderr=as_json, left=frozenset({"impl", "mode"}))
    if as_json:
        click.echo(json.dumps({"folder": folder, "entry": entry, "device": runner.device.describe(),
                               "warmup": warmup, "iters": iters, "batch": batch, "results": results},
                              indent=2, sort_keys=True))


def _batch(args) -> int:
    for a in args:
        shape = getattr(a, "shape", None)
        if shape:
            return int(shape[0])
    return 1


def _mib(n) -> str:
    return "-" if n is None else f"{n / 2**20:.1f}"


def _stats(impl: str, mode: str, wall: list, device: list, batch: int, **extra) -> dict:
    wall = sorted(wall)
    device = sorted(device) or [float("nan")]

    def q(xs, p):
        return xs[min(len(xs) - 1, int(p * (len(xs) - 1) + 0.5))]

    med = q(wall, 0.5)
    return dict(impl=impl, mode=mode, median_ms=med, p10_ms=q(wall, 0.1), p90_ms=q(wall, 0.9), min_ms=wall[0],
                device_ms=q(device, 0.5), throughput=batch * 1e3 / med if med > 0 else 0.0, **extra)


def _progress(total: int, what: str):
    """A rich progress bar on a terminal (stderr), nothing elsewhere; ``advance()`` per call."""
    from .output import stderr_is_terminal

    if not stderr_is_terminal():
        return None
    from rich.progress import Progress

    progress = Progress(transient=True)
    progress.start()
    task = progress.add_task(what, total=total)
    progress.advance_one = lambda: progress.advance(task)  # type: ignore[attr-defined]
    return progress


def _loop(call, sync, events, warmup: int, iters: int, what: str) -> tuple[list, list]:
    """Run ``call`` warmup + iters times; wall ms and event ms of the timed ones."""
    for _ in range(warmup):
        call()
    sync()
    wall, dev = [], []
    bar = _progress(iters, what)
    try:
        for _ in range(iters):
            start, end = events() if events else (None, None)
            t0 = time.perf_counter()
            if start is not None:
                start()
            call()
            if end is not None:
                end()
            sync()
            wall.append((time.perf_counter() - t0) * 1e3)
            if start is not None:
                dev.append(start.elapsed(end))
            if bar is not None:
                bar.advance_one()
    finally:
        if bar is not None:
            bar.stop()
    return wall, dev


class _Ev:
    """A pair of CUDA events on the runner's device stream (``start()``, ``end()``)."""

    def __init__(self, dev):
        self.dev = dev
        self.a, self.b = dev.event(), dev.event()

    def pair(self):
        start, end = _Rec(self.dev, self.a), _Rec(self.dev, self.b)
        start.other = end
        return start, end


class _Rec:
    def __init__(self, dev, event):
        self.dev, self.event = dev, event

    def __call__(self):
        self.dev.record(self.event)

    def elapsed(self, end):
        return self.dev.elapsed_ms(self.event, end.event)


def _bench_byocc(runner, dev_args, warmup, iters, batch) -> dict:
    dev = runner.device
    ev = _Ev(dev)
    wall, device = _loop(lambda: runner.run(dev_args, timed=False), dev.synchronize, ev.pair, warmup, iters,
                         "byocc eager")
    h2d0 = dev.counted_h2d()
    runner.run(dev_args, timed=False)
    moved = dev.counted_h2d() - h2d0
    return _stats("byocc", "eager", wall, device, batch, peak_bytes=_peak(dev), pool_bytes=dev.memory_bytes()[1],
                  h2d_per_call=moved)


def _bench_byocc_graph(runner, dev_args, warmup, iters, batch) -> dict:
    dev = runner.device
    try:
        replay, _ = runner.capture(dev_args)
    except Exception as exc:  # noqa: BLE001  (a capture the driver refuses: reported, not fatal)
        return {"impl": "byocc", "mode": "cuda graph", "skipped": f"capture failed: {str(exc)[:160]}"}
    stream = dev.stream()

    def call():
        with stream:
            replay()

    ev = _Ev(dev)
    wall, device = _loop(call, dev.synchronize, ev.pair, warmup, iters, "byocc graph")
    return _stats("byocc", "cuda graph", wall, device, batch, peak_bytes=_peak(dev), pool_bytes=dev.memory_bytes()[1])


def _peak(dev) -> int:
    """Peak device memory as torch reports it (the most allocated at once), else the bytes
    the pool holds (an upper bound)."""
    return dev.peak_allocated() or dev.memory_bytes()[1]


def _bench_onnx(path: str, func, args, warmup, iters, batch) -> dict:
    try:
        import onnxruntime as ort
    except ImportError as exc:
        return {"impl": "onnxruntime", "mode": "-", "skipped": f"not installed ({exc})"}
    providers = ort.get_available_providers()
    use = ["CUDAExecutionProvider"] if "CUDAExecutionProvider" in providers else ["CPUExecutionProvider"]
    try:
        sess = ort.InferenceSession(path, providers=use)
    except Exception as exc:  # noqa: BLE001  (onnxruntime's own error types)
        return {"impl": "onnxruntime", "mode": use[0], "skipped": f"cannot load: {str(exc)[:80]}"}
    names = [i.name for i in sess.get_inputs()]
    feed = {n: a for n, a in zip(names, args)}
    binding = sess.io_binding()
    device = "cuda" if use[0] == "CUDAExecutionProvider" else "cpu"
    for n, a in feed.items():
        binding.bind_ortvalue_input(n, ort.OrtValue.ortvalue_from_numpy(a, device, 0))
    for o in sess.get_outputs():
        binding.bind_output(o.name, device)
    wall, _ = _loop(lambda: sess.run_with_iobinding(binding), lambda: None, None, warmup, iters, "onnxruntime")
    return _stats("onnxruntime", use[0].replace("ExecutionProvider", ""), wall, [], batch)


def _load_reference(spec: str):
    import importlib.util
    import os

    path, _, name = spec.rpartition(":")
    if path.endswith(".py") or os.path.sep in path:
        if not os.path.isfile(path):
            raise click.UsageError(f"--reference: no file {path!r}")
        mod_spec = importlib.util.spec_from_file_location("byocc_bench_reference", path)
        module = importlib.util.module_from_spec(mod_spec)  # type: ignore[arg-type]
        mod_spec.loader.exec_module(module)  # type: ignore[union-attr]
    else:
        module = importlib.import_module(path)
    fn = getattr(module, name, None)
    if fn is None:
        raise click.UsageError(f"--reference: {path} has no {name!r}")
    return fn


def _bench_torch(spec: str, args, warmup, iters, batch) -> list:
    try:
        import torch
    except ImportError as exc:
        return [{"impl": "torch", "mode": "-", "skipped": f"not installed ({exc})"}]
    factory = _load_reference(spec)
    model = factory()
    inputs = [torch.from_numpy(a.copy()).cuda() if hasattr(a, "dtype") else a for a in args]
    out = []
    sync = torch.cuda.synchronize

    def events():
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start, end = _TorchRec(a), _TorchRec(b)
        return start, end

    with torch.inference_mode():
        torch.cuda.reset_peak_memory_stats()
        wall, dev = _loop(lambda: model(*inputs), sync, events, warmup, iters, "torch eager")
        out.append(_stats("torch", "eager", wall, dev, batch, peak_bytes=torch.cuda.max_memory_allocated()))
        try:
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    model(*inputs)
            torch.cuda.current_stream().wait_stream(s)
            sync()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                model(*inputs)
            wall, dev = _loop(g.replay, sync, events, warmup, iters, "torch graph")
            out.append(_stats("torch", "cuda graph", wall, dev, batch, peak_bytes=torch.cuda.max_memory_allocated()))
        except Exception as exc:  # noqa: BLE001  (a model that cannot be captured)
            out.append({"impl": "torch", "mode": "cuda graph", "skipped": f"capture failed: {str(exc)[:160]}"})
    return out


class _TorchRec:
    def __init__(self, event):
        self.event = event

    def __call__(self):
        self.event.record()

    def elapsed(self, end):
        return self.event.elapsed_time(end.event)


__all__ = ["bench"]
