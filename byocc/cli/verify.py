"""``byocc verify MODEL``: check that partitioning a module keeps what it computes.

The original, the partitioned and (when RunCodegen runs) the codegen'd module are
interpreted on the same random inputs and compared with per-dtype tolerances. What is
checked is the partitioned *program*, on the numpy interpreter: no CUDA code is generated
or run here (``partition -o`` generates it, ``byocc build`` compiles it), and the command
says so.
"""

from __future__ import annotations

import click

from .model import load_model
from .options import BACKEND
from .options import DIM
from .options import DeviceType
from .options import apply_prepare
from .options import backend_steps_option
from .options import prepare_options
from .options import steps_of
from .output import render_table
from .run import MODEL_HELP
from .run import check_dims
from .run import entry_function
from .run import fmt_number
from .run import quiet_numpy

#: What an ``ok`` of verify means (its last line, after ``ok: ``).
VERIFIED = ("the partitioned module computes what the original does (on the interpreter; the "
            "generated code was not run)")


@click.command("verify", epilog=MODEL_HELP)
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
@prepare_options
@backend_steps_option
@click.option("--device", default="cpu", type=DeviceType(), show_default=True, metavar="cpu|cuda[:N]",
              help="cpu: compare on the interpreter (MODEL a model file). cuda / cuda:N: MODEL is a folder "
                   "`partition -o` wrote and `byocc build` compiled; its partitioned module on the CPU "
                   "(numpy, float64 math) against the built library on the GPU (docs/runtime.md#tolerances).")
@click.option("--against", metavar="MODEL_FILE", type=click.Path(dir_okay=False),
              help="With --device cuda: the reference is this model (.relax or .onnx: the one `partition` "
                   "read, e.g. the fp32 export of a --dtype float16 partition) on the CPU instead of the "
                   "folder's partitioned module; its entry takes the same inputs.")
def verify(model: str, path_: str, backends: tuple[str, ...], patterns_file: str | None,
           bind_constants: bool, trials: int, seed: int, entry: str | None, dims: tuple[tuple[str, int], ...],
           prepare: bool, layout: str | None, fold_bn: bool | None, backend_steps: bool, device: str,
           against: str | None) -> None:
    """Check, on the interpreter, that partitioning MODEL keeps what it computes.

    Runs the original and the partitioned module (and, when RunCodegen succeeds, the
    codegen'd module, whose external calls run the functions they replaced) with the numpy
    interpreter on the same random inputs, and compares the outputs with per-dtype
    tolerances (float16 1e-2, float32 1e-5, integers exactly). Exit code 1 on any mismatch.

    This checks the partitioned program, not the generated code: no CUDA code is generated,
    compiled or run, so a composite that `partition -o` cannot generate still passes here.

    \b
    Examples:
      byocc verify samples/mlp_fp16.relax --backend cutlass
      byocc verify samples/seed.relax --patterns samples/seed_patterns.py --path merge --trials 5
      byocc verify cnn.relax --backend cutlass --path merge --layout NHWC --fold-batch-norm
      byocc verify out/ --device cuda --trials 3
      byocc verify out/ --device cuda --against model.onnx
    """
    device = device.strip().lower()
    if device != "cpu":
        from .device_run import verify_on_device

        return verify_on_device(model, device, trials, seed, entry, dims, against)
    if against is not None:
        raise click.UsageError("--against compares a built folder on the GPU: give --device cuda")
    if not backends and not patterns_file:
        raise click.UsageError("give a pattern table: --backend NAME and/or --patterns FILE.py")
    from byocc import transform
    from byocc.runtime import Interpreter
    from byocc.runtime import bind_arguments
    from byocc.runtime import compare
    from byocc.runtime import random_arguments

    from .partition import load_patterns

    mod = load_model(model)
    entry, func = entry_function(mod, entry)
    patterns = load_patterns(patterns_file, backends)
    partitioned = transform.partition(apply_prepare(mod, backends, prepare, layout, fold_bn), patterns,
                                      path=path_, bind_constants=bind_constants,
                                      **steps_of(backends, backend_steps))
    stages = [("partitioned", partitioned)]
    codegen = _try_codegen(partitioned)
    if codegen is not None:
        stages.append(("codegen", codegen))
    offloaded = _count_offloaded(partitioned)
    click.echo(f"{model}: {offloaded} external function{'s' if offloaded != 1 else ''} after "
               f"--path {path_}; comparing {' and '.join(s for s, _ in stages)} with the original "
               f"over {trials} trial{'s' if trials != 1 else ''} on the numpy interpreter (the generated "
               "code is not run)", err=True)
    worst: dict = {}
    all_nan: set = set()  # outputs NaN everywhere on both sides in some trial
    original = Interpreter(mod)
    runners = [(name, Interpreter(m)) for name, m in stages]
    fixed_dims = dict(dims)
    check_dims(func, dims)
    with quiet_numpy():
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
        rows.append([f"output_{index}", stage, shape, rec["dtype"], fmt_number(rec["max_abs"]), fmt_number(rec["max_rel"]),
                     f"{fmt_number(rec['rtol'])}/{fmt_number(rec['atol'])}",
                     ("ok (all NaN)" if index in all_nan else "ok") if ok else f"MISMATCH (seed {rec['seed']})"])
    render_table(f"verify {model} ({entry})", ["output", "stage", "shape", "dtype", "max abs err",
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
    click.echo(f"ok: {VERIFIED}", err=True)


def _worse(a: dict, b: dict) -> bool:
    if a["ok"] != b["ok"]:
        return not a["ok"]
    return a["max_abs"] > b["max_abs"]


def _try_codegen(partitioned):
    """The module after RunCodegen, or None when it cannot run. Stand-in codegens are
    used: the interpreter runs the functions RunCodegen replaced, not generated code."""
    from byocc.ir import ByoccError
    from byocc.ir import Function
    from byocc.transform import RunCodegen
    from byocc.transform import stub_codegen

    backends = {f.attrs["Codegen"] for _, f in partitioned.items()
                if isinstance(f, Function) and isinstance(f.attrs.get("Codegen"), str)}
    try:
        return RunCodegen(codegens={b: stub_codegen(b) for b in sorted(backends)})(partitioned)
    except ByoccError:
        return None


def _count_offloaded(mod) -> int:
    from byocc.ir import Function

    return sum(1 for _, f in mod.items() if isinstance(f, Function) and "Codegen" in f.attrs)


__all__ = ["VERIFIED", "verify"]
