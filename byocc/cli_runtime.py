"""``byocc run``, ``byocc verify`` and ``byocc import``: the interpreter and the ONNX
frontend on the command line.

The commands are standalone click commands; :func:`register` adds them to the ``byocc``
group. Errors are raised as :class:`~byocc.ir.ByoccError` s and rendered by the group's
error boundary. Library layers (numpy, onnx, the parser) are imported inside the commands.
"""

from __future__ import annotations

import os
import sys

import click

from byocc.cli_options import BACKEND, DIM, apply_prepare
from byocc.cli_options import prepare_options as _prepare_options

_MODEL_HELP = "MODEL is a .relax file (its sidecar .npz is read too), an .onnx file, or - for stdin."


# --------------------------------------------------------------------------- helpers
def _set_source(path: str) -> None:
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.find_root().meta["byocc.source"] = "<stdin>" if path == "-" else path


def load_any_model(path: str, params_as_inputs: bool = False):
    """A module from a ``.relax`` file (or ``-``) or an ``.onnx`` file (kept for callers:
    :func:`byocc.cli.model.load_model` reads both)."""
    from byocc.cli.model import load_model

    return load_model(path, params_as_inputs=params_as_inputs)


def _entry_function(mod, entry: str | None):
    """``(name, function)`` of ``--entry``; without it ``main``, or else the module's only
    public Relax function (a module whose one function is ``forward`` runs as is)."""
    from byocc.ir import Function, InterpretError

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


def _read_inputs(path: str) -> dict:
    import numpy as np

    from byocc.cli.output import note_input
    from byocc.ir import InputError

    note_input(path)
    if not os.path.isfile(path):
        raise InputError(f"cannot read inputs {path!r}: no such file")
    try:
        with np.load(path, allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    except Exception as err:  # noqa: BLE001  (numpy raises assorted types for a bad file)
        raise InputError(f"cannot read inputs {path!r}: {err}") from None


def _write_npz(path: str, arrays: dict) -> None:
    import io

    import numpy as np

    from byocc.cli.output import write_file

    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    write_file(path, buffer.getvalue())


def _console(stderr: bool = False):
    from rich.console import Console

    from byocc.cli.output import stderr_is_terminal, stdout_is_terminal, use_colour

    colour = use_colour(stderr_is_terminal() if stderr else stdout_is_terminal())
    return Console(stderr=stderr, markup=False, highlight=False, no_color=not colour,
                   force_terminal=colour or None)


def _is_terminal(stream) -> bool:
    """Tables are drawn on a terminal, or off one when FORCE_COLOR asks for colour."""
    from byocc.cli.output import stderr_is_terminal, stdout_is_terminal, use_colour

    tty = stderr_is_terminal() if stream is sys.stderr else stdout_is_terminal()
    return tty or use_colour(tty)


def _render_table(title: str, columns: list[str], rows: list[list[str]], stderr: bool = False) -> None:
    stream = sys.stderr if stderr else sys.stdout
    if _is_terminal(stream):
        from rich.table import Table

        table = Table(title=title, title_justify="left")
        for c in columns:
            table.add_column(c, justify="right" if c not in ("output", "dtype", "status", "shape") else "left")
        for r in rows:
            table.add_row(*r)
        _console(stderr).print(table)
        return
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(columns)]
    lines = [title, "  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip()]
    for r in rows:
        lines.append("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    click.echo("\n".join(lines), err=stderr)


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def _summary_rows(leaves: list) -> list[list[str]]:
    import numpy as np

    from byocc.ops.reference import dtype_name
    from byocc.runtime import describe

    rows = []
    for i, v in enumerate(leaves):
        if isinstance(v, np.ndarray):
            shape = "(" + ", ".join(map(str, v.shape)) + ("," if v.ndim == 1 else "") + ")"
            if v.size and v.dtype.kind in "fiub" or (v.size and dtype_name(v.dtype).startswith(("bfloat", "float"))):
                f = v.astype(np.float64)
                stats = [_fmt(float(np.nanmin(f))), _fmt(float(np.nanmax(f))), _fmt(float(np.nanmean(f)))]
            else:
                stats = ["-", "-", "-"]
            rows.append([f"output_{i}", shape, dtype_name(v.dtype)] + stats)
        else:
            rows.append([f"output_{i}", "-", describe(v), "-", "-", "-"])
    return rows


# --------------------------------------------------------------------------- run
@click.command("run", epilog=_MODEL_HELP)
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
def run(model: str, inputs_file: str | None, seed: int | None, out_file: str | None, entry: str | None,
        dims: tuple[tuple[str, int], ...], check: bool) -> None:
    """Interpret MODEL with numpy and summarise its outputs.

    \b
    Examples:
      byocc run samples/mlp_fp16.relax --random-inputs 1
      byocc run samples/small_cnn.onnx -o out.npz
      byocc run model.relax --inputs inputs.npz --entry main
    """
    from byocc.cli.output import check_output_file, note_input
    from byocc.runtime import (
        Interpreter,
        bind_arguments,
        flatten_outputs,
        random_arguments,
    )

    if inputs_file and seed is not None:
        raise click.UsageError("give either --inputs or --random-inputs, not both")
    if inputs_file:
        note_input(inputs_file)
    mod = load_any_model(model)
    check_output_file(out_file)  # before the work: a bad destination fails fast
    entry, func = _entry_function(mod, entry)
    if inputs_file:
        args = bind_arguments(func, _read_inputs(inputs_file), what=inputs_file)
    else:
        _check_dims(func, dims)
        args = bind_arguments(func, random_arguments(func, seed or 0, dict(dims)))
    with _quiet_numpy():
        result = Interpreter(mod, check=check).run(args, entry)
        leaves = flatten_outputs(result)
        rows = _summary_rows(leaves)
    _render_table(f"{entry}: {len(leaves)} output{'s' if len(leaves) != 1 else ''}",
                  ["output", "shape", "dtype", "min", "max", "mean"], rows, stderr=out_file == "-")
    if out_file:
        import numpy as np

        _write_npz(out_file, {f"output_{i}": np.asarray(v) for i, v in enumerate(leaves)})
        where = "stdout" if out_file == "-" else out_file
        click.echo(f"wrote {len(leaves)} output{'s' if len(leaves) != 1 else ''} to {where}", err=True)


def _check_dims(func, dims: tuple[tuple[str, int], ...]) -> None:
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


# --------------------------------------------------------------------------- verify
@click.command("verify", epilog=_MODEL_HELP)
@click.argument("model", metavar="MODEL")
@click.option("--path", "path_", type=click.Choice(["annotate", "merge"]), default="annotate",
              show_default=True, help="The partitioning path.")
@click.option("--backend", "backends", multiple=True, type=BACKEND, metavar="NAME",
              help="A backend's pattern table (cutlass, cublas; repeatable, in priority order).")
@click.option("--patterns", "patterns_file", metavar="FILE.py", help="A pattern file (before any --backend).")
@click.option("--bind-constants/--no-bind-constants", default=True, show_default=True,
              help="Keep constants inside the fused functions, or lift them to parameters.")
@click.option("--trials", type=click.IntRange(min=1), default=3, show_default=True,
              help="How many random input sets to compare on.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed (>= 0) of the first trial.")
@click.option("--entry", metavar="FUNC",
              help="The function to compare (default: main, or the only public function).")
@click.option("--dim", "dims", multiple=True, type=DIM, metavar="NAME=VALUE",
              help="Value (>= 0) of a symbolic dimension (repeatable; default: random in [10, 50)).")
@_prepare_options
def verify(model: str, path_: str, backends: tuple[str, ...], patterns_file: str | None,
           bind_constants: bool, trials: int, seed: int, entry: str | None, dims: tuple[tuple[str, int], ...],
           prepare: bool, layout: str | None, fold_bn: bool | None) -> None:
    """Check that partitioning MODEL keeps what it computes.

    Runs the original and the partitioned module (and, when RunCodegen succeeds, the
    codegen'd module, whose external calls run the functions they replaced) on the same
    random inputs, and compares the outputs with per-dtype tolerances (float16 1e-2,
    float32 1e-5, integers exactly). Exit code 1 on any mismatch.

    \b
    Examples:
      byocc verify samples/mlp_fp16.relax --backend cutlass
      byocc verify samples/seed.relax --patterns samples/seed_patterns.py --path merge --trials 5
      byocc verify cnn.relax --backend cutlass --path merge --layout NHWC --fold-batch-norm
    """
    if not backends and not patterns_file:
        raise click.UsageError("give a pattern table: --backend NAME and/or --patterns FILE.py")
    from byocc.cli.partition import load_patterns
    from byocc.runtime import Interpreter, bind_arguments, compare, random_arguments

    mod = load_any_model(model)
    entry, func = _entry_function(mod, entry)
    patterns = load_patterns(patterns_file, backends)
    partition = _partition_fn()
    partitioned = partition(apply_prepare(mod, backends, prepare, layout, fold_bn), patterns,
                            path=path_, bind_constants=bind_constants)
    stages = [("partitioned", partitioned)]
    codegen = _try_codegen(partitioned)
    if codegen is not None:
        stages.append(("codegen", codegen))
    offloaded = _count_offloaded(partitioned)
    click.echo(f"{model}: {offloaded} external function{'s' if offloaded != 1 else ''} after "
               f"--path {path_}; comparing {' and '.join(s for s, _ in stages)} with the original "
               f"over {trials} trial{'s' if trials != 1 else ''}", err=True)
    worst: dict = {}
    all_nan: set = set()  # outputs NaN everywhere on both sides in some trial
    original = Interpreter(mod)
    runners = [(name, Interpreter(m)) for name, m in stages]
    fixed_dims = dict(dims)
    _check_dims(func, dims)
    with _quiet_numpy():
        for t in range(trials):
            args = bind_arguments(func, random_arguments(func, seed + t, fixed_dims))
            expected = original.run(args, entry)
            for name, runner in runners:
                for rec in compare(expected, runner.run(args, entry)):
                    key = (name, rec["index"])
                    if rec.get("compared") == 0 and rec["shape"] and all(rec["shape"]):
                        all_nan.add(rec["index"])
                    old = worst.get(key)
                    if old is None or _worse(rec, old):
                        worst[key] = dict(rec, trial=t, seed=seed + t)
    rows, failed = [], 0
    order = {name: i for i, (name, _) in enumerate(stages)}
    for (stage, index), rec in sorted(worst.items(), key=lambda kv: (kv[0][1], order[kv[0][0]])):
        ok = rec["ok"]
        failed += not ok
        shape = "-" if rec["shape"] is None else "(" + ", ".join(map(str, rec["shape"])) + ")"
        rows.append([f"output_{index}", stage, shape, rec["dtype"], _fmt(rec["max_abs"]), _fmt(rec["max_rel"]),
                     f"{_fmt(rec['rtol'])}/{_fmt(rec['atol'])}",
                     ("ok (all NaN)" if index in all_nan else "ok") if ok else f"MISMATCH (seed {rec['seed']})"])
    _render_table(f"verify {model} ({entry})", ["output", "stage", "shape", "dtype", "max abs err",
                                                "max rel err", "rtol/atol", "status"], rows)
    for index in sorted(all_nan):
        click.echo(f"warning: output_{index} is NaN everywhere, in the original and the partitioned "
                   "module, in at least one trial: that trial compared nothing for it", err=True)
    if failed:
        click.echo(f"error: {failed} output{'s' if failed != 1 else ''} differ beyond tolerance", err=True)
        click.get_current_context().exit(1)
    if offloaded == 0:
        click.echo("ok: nothing was offloaded (no pattern matched), so the partitioned module is the "
                   "original; only that was checked", err=True)
        return
    click.echo("ok: the partitioned module computes what the original does", err=True)


def _quiet_numpy():
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


def _worse(a: dict, b: dict) -> bool:
    if a["ok"] != b["ok"]:
        return not a["ok"]
    return a["max_abs"] > b["max_abs"]


def _partition_fn():
    try:
        from byocc.transform import partition
    except ImportError:
        from byocc.transform.pipeline import partition
    return partition


def _try_codegen(partitioned):
    """The module after RunCodegen, or None when it cannot run. Stand-in codegens are
    used: the interpreter runs the functions RunCodegen replaced, not generated code."""
    from byocc.ir import ByoccError, Function
    from byocc.transform import RunCodegen, stub_codegen

    backends = {f.attrs["Codegen"] for _, f in partitioned.items()
                if isinstance(f, Function) and isinstance(f.attrs.get("Codegen"), str)}
    try:
        return RunCodegen(codegens={b: stub_codegen(b) for b in sorted(backends)})(partitioned)
    except ByoccError:
        return None


def _count_offloaded(mod) -> int:
    from byocc.ir import Function

    return sum(1 for _, f in mod.items() if isinstance(f, Function) and "Codegen" in f.attrs)


# --------------------------------------------------------------------------- import
@click.command("import")
@click.argument("model", metavar="MODEL.onnx")
@click.option("-o", "--output", "out_file", metavar="OUT.relax",
              help="Write the module to OUT.relax and its constants to OUT.npz (default: stdout, "
                   "without constant values).")
@click.option("--params-as-inputs", is_flag=True,
              help="Make floating-point initializers function parameters (after the graph inputs) "
                   "instead of constants.")
def import_(model: str, out_file: str | None, params_as_inputs: bool) -> None:
    """Import an ONNX model as a Relax module (TVM-printed text).

    Initializers become tensor constants whose values go to the sidecar OUT.npz (keys
    ir.GenericConst/<i>), or parameters with --params-as-inputs. Shape computations on
    constants are folded. An unsupported operator gives one error listing every
    unsupported node.

    \b
    Examples:
      byocc import samples/small_cnn.onnx -o small_cnn.relax
      byocc import samples/small_encoder.onnx --params-as-inputs -o encoder.relax
    """
    from byocc.cli.output import check_output_file, note_input
    from byocc.frontend import from_onnx

    _set_source(model)
    note_input(model)
    sidecar = None
    if out_file is not None and out_file != "-":
        sidecar = os.path.splitext(out_file)[0] + ".npz"
        check_output_file(out_file)
        check_output_file(sidecar)
    mod = from_onnx(model, params_as_inputs=params_as_inputs)
    text, constants = print_with_constants(mod)
    if sidecar is None:
        from byocc.cli.output import warn_dropped_constants, write_stdout

        warn_dropped_constants(len(constants), keep="-o OUT.relax")
        write_stdout(text + "\n")
        return
    from byocc.cli.output import write_file

    if constants:
        _write_npz(sidecar, constants)
    elif os.path.lexists(sidecar):
        os.remove(sidecar)  # a stale sidecar would give the new module wrong constants
    write_file(out_file, text + "\n")
    n_ops = sum(1 for _ in _bindings(mod))
    click.echo(f"wrote {out_file} ({n_ops} bindings)" + (f" and {sidecar} ({len(constants)} constants)"
                                                        if constants else ""), err=True)


def _bindings(mod):
    for f in mod.functions.values():
        for block in getattr(getattr(f, "body", None), "blocks", ()):
            yield from block.bindings


def print_with_constants(mod) -> tuple[str, dict]:
    """The module's text and ``{"ir.GenericConst/<i>": array}`` for its printed constants."""
    from byocc.text import constant_arrays, print_module_with_metadata

    text, meta = print_module_with_metadata(mod)
    return text, constant_arrays(meta)


def register(group: click.Group) -> None:
    """Add ``run``, ``verify`` and ``import`` to the ``byocc`` click group."""
    group.add_command(run)
    group.add_command(verify)
    group.add_command(import_, name="import")


__all__ = ["import_", "load_any_model", "print_with_constants", "register", "run", "verify"]
