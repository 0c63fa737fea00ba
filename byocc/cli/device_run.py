"""``byocc run OUT_DIR --device cuda``: a built folder on the GPU, and what ``verify
--device cuda`` and ``bench`` share with it (opening the folder, inputs, the summary).

Everything heavy (numpy, CuPy, the runtime) is imported inside the functions.
"""

from __future__ import annotations

import json
import os

import click

from .output import check_output_file
from .output import render_table
from .output import write_file
from .output import write_npz


def check_folder(model: str, device: str) -> None:
    """MODEL must be a folder `partition -o` wrote for a device run (a usage error otherwise)."""
    if model == "-" or not os.path.isdir(model):
        raise click.UsageError(
            f"--device {device} runs a built folder: give the folder `byocc partition -o DIR` wrote "
            f"and `byocc build DIR` compiled, not {model!r}")
    if not os.path.isfile(os.path.join(model, "manifest.json")):
        raise click.UsageError(f"{model}: no manifest.json (write the folder with `byocc partition -o`)")


def _read(path) -> object:
    from byocc.ir import InputError
    from byocc.text import read_file

    if not path.is_file():
        raise InputError(f"{path}: missing (write the folder with `byocc partition -o`)")
    return read_file(str(path))


def codegen_module(folder: str):
    """``<stem>.codegen.relax`` of a folder ``partition -o`` wrote (with its sidecar)."""
    from byocc.runtime.device import module_paths

    return _read(module_paths(folder)[0])


def partitioned_module(folder: str):
    """``<stem>.partitioned.relax`` of a folder ``partition -o`` wrote: the reference a device
    run is verified against (its Codegen functions run as ordinary calls)."""
    from byocc.runtime.device import module_paths

    return _read(module_paths(folder)[1])


def open_runner(model: str, device: str, entry: str | None, check: bool = False):
    """``(runner, entry, func)``: the device, the folder's codegen'd module, its library."""
    from byocc.runtime.device import DeviceRunner
    from byocc.runtime.device import open_device

    from .run import entry_function

    check_folder(model, device)
    mod = codegen_module(model)
    entry, func = entry_function(mod, entry)
    dev = open_device(device)  # exit 3 without CUDA/CuPy, before the library is loaded
    runner = DeviceRunner(model, dev, mod, entry=entry, partitioned=lambda: partitioned_module(model), check=check)
    return runner, entry, func


def host_inputs(func, inputs_file: str | None, seed: int | None, dims) -> list:
    """The arguments on the host: from ``--inputs`` or random from ``--random-inputs``."""
    from byocc.runtime import bind_arguments
    from byocc.runtime import random_arguments

    from .run import check_dims
    from .run import read_inputs

    if inputs_file:
        return bind_arguments(func, read_inputs(inputs_file), what=inputs_file)
    check_dims(func, dims)
    return bind_arguments(func, random_arguments(func, seed or 0, dict(dims)))


def download(runner, result) -> list:
    from byocc.runtime import flatten_outputs

    return [runner.device.download(v) if hasattr(v, "__cuda_array_interface__") or hasattr(v, "dtype") else v
            for v in flatten_outputs(result)]


def run_on_device(model: str, device: str, inputs_file: str | None, seed: int | None, out_file: str | None,
                  entry: str | None, dims, cuda_graph: bool, summary_file: str | None, check: bool = False) -> None:
    if device == "cpu":
        raise click.UsageError("--cuda-graph and --summary apply to --device cuda")
    check_output_file(out_file)
    if summary_file and summary_file != "-":
        check_output_file(summary_file)
    runner, entry, func = open_runner(model, device, entry, check)
    args = host_inputs(func, inputs_file, seed, dims)
    from .run import quiet_numpy
    from .run import summary_rows

    with quiet_numpy():
        dev_args = runner.upload(args)
        h2d_inputs = runner.device.h2d_bytes
        runner.run(dev_args, timed=False)  # warm-up: kernels compiled and loaded, weights bound
        result, summary = runner.run(dev_args, timed=True)
        if cuda_graph:
            result, summary = graph_run(runner, dev_args, summary)
        summary.h2d_inputs = h2d_inputs
        d2h0 = runner.device.d2h_bytes
        leaves = download(runner, result)
        summary.d2h_outputs = runner.device.d2h_bytes - d2h0
        rows = summary_rows(leaves)
    to_stdout = out_file == "-" or summary_file == "-"
    render_table(f"{entry} on {runner.device.describe()}: {len(leaves)} output{'s' if len(leaves) != 1 else ''}",
                 ["output", "shape", "dtype", "min", "max", "mean"], rows, stderr=to_stdout)
    render_summary(summary, stderr=True)
    if summary_file:
        text = json.dumps(summary.as_dict(), indent=2, sort_keys=True) + "\n"
        if summary_file == "-":
            click.echo(text, nl=False)
        else:
            write_file(summary_file, text)
    if out_file:
        import numpy as np

        write_npz(out_file, {f"output_{i}": np.asarray(v) for i, v in enumerate(leaves)})
        where = "stdout" if out_file == "-" else out_file
        click.echo(f"wrote {len(leaves)} output{'s' if len(leaves) != 1 else ''} to {where}", err=True)


def graph_run(runner, dev_args, eager_summary):
    """Capture the run as one CUDA graph, replay it once (timed), keep the eager per-function
    times in the summary (a graph has no per-binding events)."""
    dev = runner.device
    h2d0, d2h0 = dev.counted_h2d(), dev.d2h_bytes
    replay, result = runner.capture(dev_args)
    replay()  # the first launch uploads the graph
    dev.synchronize()
    start, end = dev.event(), dev.event()
    dev.record(start)
    replay()
    dev.record(end)
    dev.synchronize()
    summary = eager_summary
    summary.cuda_graph = True
    summary.notes.append(f"eager run: {summary.device_ms:.3f} ms of device time; the times per function "
                         "are the eager run's")
    summary.device_ms = dev.elapsed_ms(start, end)
    summary.h2d_run += dev.counted_h2d() - h2d0
    summary.d2h_run += dev.d2h_bytes - d2h0
    summary.peak_used_bytes, summary.peak_bytes = dev.memory_bytes()
    summary.peak_allocated_bytes = dev.peak_allocated() or 0
    return result, summary


def render_summary(summary, stderr: bool = True) -> None:
    from byocc.runtime.inputs import format_bytes

    total = sum(r["ms"] for r in summary.functions) or 1.0
    rows = [[r["name"], r["kind"], str(r["calls"]), f"{r['ms']:.3f}", f"{100 * r['ms'] / total:.1f}",
             f"{r.get('host_ms', 0.0):.3f}"] for r in summary.functions]
    render_table("time per function: device (CUDA events around each call; they include the launch gaps "
                 "while the device waits for the host) and host (Python, launches)",
                 ["function", "kind", "calls", "ms", "%", "host ms"], rows,
                 stderr=stderr, left=frozenset({"function", "kind"}))
    plan = summary.plan
    lines = [
        f"run: {summary.device_ms:.3f} ms on the device{' (one CUDA graph replay)' if summary.cuda_graph else ''}, "
        f"{summary.host_ms:.3f} ms wall (eager, timed run after one warm-up)",
        f"host->device: inputs {format_bytes(summary.h2d_inputs)}, setup (constants, weights) "
        f"{format_bytes(summary.h2d_setup)}, during the run {format_bytes(summary.h2d_run)}; "
        f"device->host: during the run {format_bytes(summary.d2h_run)}, outputs {format_bytes(summary.d2h_outputs)}",
        (f"peak device memory: {format_bytes(summary.peak_allocated_bytes)} allocated at most at once; "
         if summary.peak_allocated_bytes else "peak device memory: ")
        + f"{format_bytes(summary.peak_bytes)} held by the pool ({format_bytes(summary.peak_used_bytes)} in use "
          "at the end)",
        f"allocation plan: {plan.get('buffers', 0)} native outputs and {plan.get('scratch_buffers', 0)} "
        f"scratch regions in one arena of "
        f"{format_bytes(plan.get('arena_bytes', 0))} (without reuse {format_bytes(plan.get('unplanned_bytes', 0))}; "
        f"most alive at once {format_bytes(plan.get('live_peak_bytes', 0))})",
    ]
    lines += [f"note: {n}" for n in summary.notes]
    click.echo("\n".join(lines), err=stderr)


__all__ = ["check_folder", "codegen_module", "download", "graph_run", "host_inputs", "open_runner", "partitioned_module", "render_summary", "run_on_device",
           "verify_on_device"]


# --------------------------------------------------------------------------- verify --device
def _check_same_inputs(func, ref_func, path: str) -> None:
    """The reference model's entry takes what the built folder's does (count, dtypes, static
    shapes), else an InputError naming the first difference."""
    from byocc.ir import InputError
    from byocc.ir import TensorStructInfo

    if len(func.params) != len(ref_func.params):
        raise InputError(f"{path}: its entry takes {len(ref_func.params)} inputs, the built folder's "
                         f"{len(func.params)}")
    for p, q in zip(func.params, ref_func.params):
        a, b = p.struct_info, q.struct_info
        if isinstance(a, TensorStructInfo) and isinstance(b, TensorStructInfo):
            shapes_differ = a.shape is not None and b.shape is not None and (
                len(a.shape) != len(b.shape)
                or any(isinstance(x, int) and isinstance(y, int) and x != y for x, y in zip(a.shape, b.shape)))
            if a.dtype != b.dtype or shapes_differ:
                raise InputError(f"{path}: input {q.name_hint!r} is {b.dtype} {tuple(b.shape or ())}, the built "
                                 f"folder's {p.name_hint!r} {a.dtype} {tuple(a.shape or ())}")


def verify_on_device(model: str, device: str, trials: int, seed: int, entry: str | None, dims,
                     against: str | None = None) -> None:
    """The folder's partitioned module on numpy (the reference; ``against``: that model file
    instead, e.g. the fp32 original) against its built library on the device, on ``trials``
    random input sets; exit 1 at a mismatch, naming the first mismatching output and its first
    differing element."""
    from byocc.runtime import Interpreter
    from byocc.runtime import bind_arguments
    from byocc.runtime import compare
    from byocc.runtime import flatten_outputs
    from byocc.runtime import random_arguments
    from byocc.runtime.inputs import DEVICE_TOLERANCES
    from byocc.runtime.inputs import compute_dtype

    from .run import check_dims
    from .run import fmt_number
    from .run import quiet_numpy

    runner, entry, func = open_runner(model, device, entry)
    module = partitioned_module(model)
    floor = compute_dtype(module)
    what = "the partitioned module"
    ref_entry = entry
    if against is not None:
        from .model import load_model
        from .run import entry_function

        original = load_model(against)
        ref_entry, ref_func = entry_function(original, entry if entry in original.functions else None)
        _check_same_inputs(func, ref_func, against)
        module, what = original, against
    reference = Interpreter(module)
    check_dims(func, dims)
    click.echo(f"{model}: {what} on the CPU (numpy, float64 math) against the built library on "
               f"{runner.device.describe()}, {trials} trial{'s' if trials != 1 else ''}"
               + (f"; the model computes in {floor}, so every floating output gets at least {floor}'s tolerance"
                  if floor else ""), err=True)
    worst: dict = {}
    first_bad = None
    with quiet_numpy():
        for t in range(trials):
            args = bind_arguments(func, random_arguments(func, seed + t, dict(dims)))
            expected = reference.run(args, ref_entry)
            result, _ = runner.run(runner.upload(args), timed=False)
            leaves = tuple(flatten_outputs(expected))
            for rec in compare(leaves, tuple(download(runner, result)), DEVICE_TOLERANCES, scale_atol=True,
                               floor=floor):
                rec = dict(rec, seed=seed + t)
                old = worst.get(rec["index"])
                if old is None or (old["ok"] and not rec["ok"]) or (old["ok"] == rec["ok"] and rec["max_abs"] > old["max_abs"]):
                    worst[rec["index"]] = rec
                if not rec["ok"] and first_bad is None:
                    first_bad = rec
    rows = []
    for index in sorted(worst):
        rec = worst[index]
        shape = "-" if rec["shape"] is None else "(" + ", ".join(map(str, rec["shape"])) + ")"
        rows.append([f"output_{index}", shape, rec["dtype"], fmt_number(rec["max_abs"]), fmt_number(rec["max_rel"]),
                     f"{fmt_number(rec['rtol'])}/{fmt_number(rec['atol'])}",
                     "ok" if rec["ok"] else f"MISMATCH (seed {rec['seed']}, {rec.get('mismatches', '?')} elements)"])
    render_table(f"verify {model} ({entry}) on {device}", ["output", "shape", "dtype", "max abs err", "max rel err",
                                                            "rtol/atol", "status"], rows)
    if first_bad is not None:
        where = first_bad.get("first_bad")
        detail = (f" first differs at index {list(where['index'])}: expected {where['expected']:.6g}, got "
                  f"{where['actual']:.6g}" if where else f" {first_bad.get('note', '')}")
        click.echo(f"error: output_{first_bad['index']} differs beyond rtol/atol "
                   f"{first_bad['rtol']:g}/{first_bad['atol']:.4g} (seed {first_bad['seed']});{detail}", err=True)
        click.get_current_context().exit(1)
    click.echo(f"ok: the built library on {device} computes what {what} does on the CPU "
               "(per-dtype tolerances of docs/runtime.md#tolerances; atol scaled by each output's largest "
               "magnitude)", err=True)
