"""``byocc run MODEL``: interpret a module with numpy and summarise its outputs; the helpers
``byocc verify`` shares with it (the entry function, ``--dim`` checks, quiet numpy).

Library layers (numpy, the interpreter, the parser) are imported inside the functions, so
``byocc --help`` stays cheap.
"""

from __future__ import annotations

import click

from .model import check_input_file
from .model import load_model
from .options import DIM
from .options import DeviceType
from .output import check_output_file
from .output import note_input
from .output import render_table
from .output import write_npz

MODEL_HELP = "MODEL is a .relax file (its sidecar .npz is read too), an .onnx file, or - for stdin."
RUN_HELP = (MODEL_HELP + " It may also be a folder `byocc partition -o` wrote: --device cpu interprets "
            "its partitioned module; --device cuda runs it on the GPU once `byocc build` compiled it "
            "(docs/runtime.md).")

DEVICE_HELP = ("Where to run: cpu (the numpy interpreter) or cuda / cuda:N (a built folder on the GPU, "
               "through CuPy; exit code 3 without CUDA or CuPy).")


@click.command("run", epilog=RUN_HELP)
@click.argument("model", metavar="MODEL")
@click.option("--inputs", "inputs_file", metavar="FILE.npz",
              help="Arrays for the parameters, by name (or by position when no name matches).")
@click.option("--random-inputs", "seed", type=click.IntRange(min=0), metavar="SEED",
              help="Random inputs from this seed (the default, with seed 0, when --inputs is not given).")
@click.option("-o", "--output", "out_file", metavar="OUT.npz",
              help="Write the outputs to OUT.npz as output_0, output_1, ... (- for stdout; the "
                   "summary then goes to stderr).")
@click.option("--entry", metavar="FUNC", help="The function to run (default: main, or the only public function).")
@click.option("--dim", "dims", multiple=True, type=DIM, metavar="NAME=VALUE",
              help="Value (>= 0) of a symbolic dimension for random inputs (repeatable).")
@click.option("--check/--no-check", default=False,
              help="Check every value against its variable's type while running.")
@click.option("--device", default="cpu", type=DeviceType(), show_default=True, metavar="cpu|cuda[:N]", help=DEVICE_HELP)
@click.option("--cuda-graph", is_flag=True,
              help="--device cuda: capture the whole run as one CUDA graph and replay it (static shapes).")
@click.option("--summary", "summary_file", metavar="FILE.json",
              help="--device cuda: also write the run summary (time per function, bytes moved, peak "
                   "memory, the allocation plan) as JSON (- for stdout).")
def run(model: str, inputs_file: str | None, seed: int | None, out_file: str | None, entry: str | None,
        dims: tuple[tuple[str, int], ...], check: bool, device: str, cuda_graph: bool,
        summary_file: str | None) -> None:
    """Interpret MODEL with numpy, or run a built folder on the GPU, and summarise its outputs.

    \b
    Examples:
      byocc run samples/mlp_fp16.relax --random-inputs 1
      byocc run samples/small_cnn.onnx -o out.npz
      byocc run model.relax --inputs inputs.npz --entry main
      byocc run out/ --device cuda --random-inputs 0 --summary run.json
    """
    from byocc.runtime import Interpreter
    from byocc.runtime import bind_arguments
    from byocc.runtime import flatten_outputs
    from byocc.runtime import random_arguments

    if inputs_file and seed is not None:
        raise click.UsageError("give either --inputs or --random-inputs, not both")
    if inputs_file:
        note_input(inputs_file)
    device = device.strip().lower()
    if device != "cpu" or cuda_graph or summary_file:
        from .device_run import run_on_device

        return run_on_device(model, device, inputs_file, seed, out_file, entry, dims, cuda_graph, summary_file, check)
    mod = load_model_or_folder(model)
    check_output_file(out_file)  # before the work: a bad destination fails fast
    entry, func = entry_function(mod, entry)
    if inputs_file:
        args = bind_arguments(func, read_inputs(inputs_file), what=inputs_file)
    else:
        check_dims(func, dims)
        args = bind_arguments(func, random_arguments(func, seed or 0, dict(dims)))
    with quiet_numpy():
        result = Interpreter(mod, check=check).run(args, entry)
        leaves = flatten_outputs(result)
        rows = summary_rows(leaves)
    render_table(f"{entry}: {len(leaves)} output{'s' if len(leaves) != 1 else ''}",
                 ["output", "shape", "dtype", "min", "max", "mean"], rows, stderr=out_file == "-")
    if out_file:
        import numpy as np

        write_npz(out_file, {f"output_{i}": np.asarray(v) for i, v in enumerate(leaves)})
        where = "stdout" if out_file == "-" else out_file
        click.echo(f"wrote {len(leaves)} output{'s' if len(leaves) != 1 else ''} to {where}", err=True)


def load_model_or_folder(model: str):
    """The module of MODEL; for a folder ``partition -o`` wrote (it has a manifest.json),
    its partitioned module (which the numpy interpreter runs: its Codegen functions are
    ordinary calls). Any other folder is refused as a model file is."""
    import os

    if model != "-" and os.path.isfile(os.path.join(model, "manifest.json")):
        from .device_run import partitioned_module

        return partitioned_module(model)
    return load_model(model)


def check_dims(func, dims: tuple[tuple[str, int], ...]) -> None:
    """Warn about a ``--dim`` that names no symbolic dimension of ``func``'s parameters (a
    script may pass the same ``--dim`` to many models, so this is not an error)."""
    if not dims:
        return
    from byocc.ir import struct_info_vars

    names = sorted({v.name for p in func.params for v in struct_info_vars(p.struct_info)})
    for name, _ in dims:
        if name not in names:
            click.echo(f"warning: --dim {name}: {_func_name(func)} has no symbolic dimension of that "
                       f"name ({'dimensions: ' + ', '.join(names) if names else 'its parameter shapes are static'})",
                       err=True)


def _func_name(func) -> str:
    sym = func.attrs.get("global_symbol") if hasattr(func, "attrs") else None
    return repr(sym) if isinstance(sym, str) else "the function"


def entry_function(mod, entry: str | None):
    """``(name, function)`` of ``--entry``; without it ``main``, or else the module's only
    public Relax function (a module whose one function is ``forward`` runs as is)."""
    from byocc.ir import Function
    from byocc.ir import InterpretError

    if entry is None:
        if "main" in mod:
            entry = "main"
        else:
            public = sorted(name for name, f in mod.items() if isinstance(f, Function)
                            and isinstance(f.attrs.get("global_symbol"), str))
            if len(public) != 1:
                known = ", ".join(public) or "none"
                raise InterpretError(f"the module has no function 'main'; give --entry FUNC "
                                     f"(public functions: {known})")
            entry = public[0]
    if entry not in mod:
        known = ", ".join(sorted(mod.names())) or "none"
        raise InterpretError(f"the module has no function {entry!r} (functions: {known})")
    func = mod[entry]
    if not isinstance(func, Function):
        raise InterpretError(f"{entry!r} is an external function; give --entry a Relax function")
    return entry, func


def read_inputs(path: str) -> dict:
    import numpy as np

    from byocc.ir import InputError

    note_input(path)
    check_input_file(path, prefix=f"cannot read inputs {path!r}: ")
    try:
        with np.load(path, allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    except Exception as err:  # noqa: BLE001  (numpy raises assorted types for a bad file)
        raise InputError(f"cannot read inputs {path!r}: {err}") from None


def fmt_number(v: float) -> str:
    return f"{v:.6g}"


def summary_rows(leaves: list) -> list[list[str]]:
    import numpy as np

    from byocc.ops.reference import dtype_name
    from byocc.runtime import describe

    rows = []
    for i, v in enumerate(leaves):
        if isinstance(v, np.ndarray):
            shape = "(" + ", ".join(map(str, v.shape)) + ("," if v.ndim == 1 else "") + ")"
            if v.size and v.dtype.kind in "fiub" or (v.size and dtype_name(v.dtype).startswith(("bfloat", "float"))):
                f = v.astype(np.float64)
                stats = [fmt_number(float(np.nanmin(f))), fmt_number(float(np.nanmax(f))), fmt_number(float(np.nanmean(f)))]
            else:
                stats = ["-", "-", "-"]
            rows.append([f"output_{i}", shape, dtype_name(v.dtype)] + stats)
        else:
            rows.append([f"output_{i}", "-", describe(v), "-", "-", "-"])
    return rows


def quiet_numpy():
    """NaN and overflow are results to compare, not warnings for the user (numpy's
    RuntimeWarnings: 'invalid value encountered', 'All-NaN slice')."""
    import contextlib
    import warnings

    import numpy as np

    stack = contextlib.ExitStack()
    stack.enter_context(np.errstate(all="ignore"))
    stack.enter_context(warnings.catch_warnings())
    warnings.simplefilter("ignore", RuntimeWarning)
    return stack


__all__ = ["DEVICE_HELP", "MODEL_HELP", "check_dims", "entry_function", "fmt_number", "load_model_or_folder",
           "quiet_numpy", "read_inputs", "run", "summary_rows"]
