"""``byocc partition MODEL``: carve out the subgraphs that backends can run (docs/architecture.md#cli-contract).

Pipeline: FuseOpsByPattern -> [MergeCompositeFunctions] (the ``--path``; no
CanonicalizeBindings, as in TVM's conformance oracle), then RunCodegen when writing an
output folder. Without ``-o`` the partitioned module (before RunCodegen) goes to stdout
exactly as TVM prints it; with ``-o DIR`` every output file is produced in memory first and
then moved into DIR, so a failure writes nothing; the files an earlier run wrote into DIR
and this one does not are removed then (:func:`byocc.cli.output.write_output_folder`).
``--print-after`` names are checked against the passes this run would run before any work.

Pattern table: the ``--patterns`` file's entries first, then each ``--backend``'s table
in the order given (earlier entries have priority, as in TVM's ``FuseOpsByPattern``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .model import check_input_file
from .model import load_model
from .model import model_argument
from .options import BACKEND
from .options import apply_frontend
from .options import backend_steps_option
from .options import codegen_option_option
from .options import lowering_passes
from .options import mixed_precision_passes
from .options import precision_options
from .options import prepare_options
from .options import prepare_passes_of
from .options import recompose_passes
from .options import steps_of
from .options import target_options
from .output import check_output_dir
from .output import check_output_file
from .output import note_input
from .output import warn_dropped_constants
from .output import write_file
from .output import write_output_folder
from .output import write_stdout


@click.command()
@model_argument()
@click.option("--path", "path_", type=click.Choice(["annotate", "merge"]), default="annotate",
              show_default=True,
              help="annotate: one external function per match. merge: neighbouring matches for "
                   "the same backend merged (MergeCompositeFunctions).")
@click.option("--backend", "backends", multiple=True, type=BACKEND, metavar="NAME",
              help="Use a backend's pattern table (cutlass, cublas); repeat to concatenate "
                   "tables in the order given.")
@click.option("--patterns", "patterns_file", metavar="FILE.py",
              help="A Python file defining `patterns`, a list of (name, pattern[, annotations"
                   "[, check]]) tuples; its entries come before any --backend table.")
@click.option("--bind-constants/--no-bind-constants", default=True, show_default=True,
              help="Keep constants inside the fused functions, or lift them to parameters.")
@click.option("--entry", "entries", multiple=True, metavar="FUNC",
              help="Partition only these functions (repeatable; default: all).")
@click.option("-o", "--output", "out_dir", metavar="DIR",
              help="Write <stem>.partitioned.relax, <stem>.codegen.relax (after RunCodegen), "
                   "manifest.json, the generated sources and the build files into DIR; the "
                   "files an earlier run wrote there and this one does not are removed.")
@click.option("--time-passes", is_flag=True, help="Print the time each pass took (stderr).")
@click.option("--print-after", "print_after", multiple=True, metavar="PASS",
              help="Print the module after the named pass (stderr; repeatable). A name that "
                   "is no pass of this run is a usage error listing the passes.")
@click.option("--print-after-all", is_flag=True, help="Print the module after every pass (stderr).")
@click.option("--dump-ir", "dump_dir", metavar="DIR",
              help="Write the module after every pass to DIR/NNN_<pass>.relax.")
@click.option("--verify-each", is_flag=True,
              help="Check well-formedness after every pass.")
@prepare_options
@precision_options
@backend_steps_option
@codegen_option_option
@click.option("--explain", is_flag=True,
              help="Explain on stderr what was offloaded and why each remaining operator was not.")
@click.option("--explain-json", "explain_json", metavar="FILE",
              help="Write the explanation as JSON to FILE (- for stdout, with -o DIR).")
@click.option("--report", "report_file", metavar="FILE",
              help="Write a self-contained HTML picture of the partition to FILE (.html): the graph "
                   "with each offloaded function as a box coloured by backend (click to open), "
                   "heavy operators kept on the host with --explain's reason, a summary. Needs "
                   "Graphviz's dot (exit 3 without it). - for stdout, with -o DIR.")
def partition(model: str, path_: str, backends: tuple[str, ...], patterns_file: str | None,
              bind_constants: bool, entries: tuple[str, ...], out_dir: str | None,
              time_passes: bool, print_after: tuple[str, ...], print_after_all: bool,
              dump_dir: str | None, verify_each: bool, prepare: bool, layout: str | None,
              fold_bn: bool | None, mixed_dtype: str | None, accumulate: str, recompose: bool | None,
              backend_steps: bool, codegen_options: tuple, explain: bool,
              explain_json: str | None, report_file: str | None) -> None:
    """Partition MODEL for the given backends or pattern file.

    \b
    Examples:
      byocc partition samples/seed.relax --patterns samples/seed_patterns.py
      byocc partition samples/mlp_fp16.relax --path merge --backend cutlass
      byocc partition model.relax --backend cutlass --backend cublas -o out/
      byocc partition model.relax --backend cublas -o out/ --codegen-option cublas.fp32_math=tf32
      byocc partition cnn.relax --path merge --backend cutlass --layout NHWC --fold-batch-norm
      byocc partition samples/transformer_block_fp16.relax --path merge --backend cutlass --report r.html
      byocc partition bert.onnx --dtype float16 --backend cutlass --path merge -o out/
    """
    if not backends and not patterns_file:
        raise click.UsageError("give a pattern table: --backend NAME and/or --patterns FILE.py")
    if explain_json == "-" and out_dir is None:
        raise click.BadParameter("stdout holds the partitioned module; give -o DIR to have the "
                                 "JSON on stdout, or a file name", param_hint="'--explain-json'")
    if report_file == "-" and (out_dir is None or explain_json == "-"):
        raise click.BadParameter("stdout already holds " + ("the partitioned module; give -o DIR to have "
                                 "the page on stdout, or a file name" if out_dir is None else
                                 "the --explain-json document; give a file name"), param_hint="'--report'")
    options = target_options(codegen_options)
    if report_file is not None:
        from .report import find_dot

        find_dot()  # Graphviz missing: exit 3 before any work, nothing written
    front = (recompose, mixed_dtype, accumulate)
    if print_after:
        check_pass_names(print_after, path_, backends, bind_constants, entries, out_dir is not None,
                         (prepare, layout, fold_bn), backend_steps, front)
    mod = load_model(model)
    patterns = load_patterns(patterns_file, backends)
    check_output_file(explain_json, "--explain-json")  # destinations before the work
    check_output_file(report_file, "--report")
    check_output_dir(out_dir)
    check_output_dir(dump_dir, "--dump-ir")

    from byocc.transform import PassContext
    from byocc.transform import PassTimingInstrument
    from byocc.transform import partition as run_partition

    instruments = list(_instruments(print_after_all, dump_dir, verify_each))
    timing = PassTimingInstrument() if time_passes else None
    if timing is not None:
        instruments.insert(0, timing)
    if print_after and not print_after_all:
        instruments.append(_print_after_instrument(frozenset(print_after)))
    try:
        with PassContext(instruments=instruments):
            # the preparation passes run under the instruments too (--time-passes, --dump-ir)
            mod = apply_frontend(mod, backends, (prepare, layout, fold_bn), *front)
            partitioned = run_partition(
                mod, patterns, path=path_, bind_constants=bind_constants,
                entry_functions=list(entries) or None, **steps_of(backends, backend_steps),
            )
            codegen = None
            if out_dir is not None:
                from byocc.transform import RunCodegen

                codegen = RunCodegen(options, entry_functions=list(entries) or None)(partitioned)
    finally:
        if timing is not None:
            sys.stderr.write(timing.render())

    report = None
    if explain or explain_json or report_file:
        from .explain import explain_partition
        from .explain import render_explanation

        report = explain_partition(mod, partitioned, patterns, path=path_, entries=list(entries) or None)
        if explain:
            render_explanation(report)
    page = None
    if report_file is not None:  # made before anything is written: a failure writes nothing
        page = _report_page(model, partitioned, report, backends, patterns_file, path_)

    if out_dir is None:
        from byocc.text import constant_arrays
        from byocc.text import print_module_with_metadata

        text, meta = print_module_with_metadata(partitioned)
        text += "\n"
        warn_dropped_constants(len(constant_arrays(meta)))
        if explain_json:
            _write_json_file(explain_json, report)
        if page is not None:
            write_file(report_file, page)
        write_stdout(text)
        return
    from .artifacts import output_files

    stem = "stdin" if model == "-" else Path(model).stem
    files = output_files(stem, partitioned, codegen)
    written, removed = write_output_folder(Path(out_dir), files)
    if explain_json:
        _write_json_file(explain_json, report)
    if page is not None:
        write_file(report_file, page)
    stale = f" and removed {len(removed)} left by the previous run" if removed else ""
    click.echo(f"wrote {len(written)} files to {out_dir}{stale}", err=True)


def load_patterns(patterns_file: str | None, backends: tuple[str, ...]) -> list:
    """The pattern table: the file's entries, then each backend's, in the order given."""
    patterns: list = []
    if patterns_file:
        note_input(patterns_file)
        # an error without a span is located at the pattern file, not at the model
        ctx = click.get_current_context(silent=True)
        meta = ctx.find_root().meta if ctx is not None else {}
        model_source = meta.get("byocc.source")
        meta["byocc.source"] = patterns_file
        check_input_file(patterns_file, prefix="cannot read pattern file: ")
        from byocc.backends import load_pattern_file

        patterns += load_pattern_file(patterns_file)
        meta["byocc.source"] = model_source
    if backends:
        from byocc.backends import get_backend

        for name in backends:
            # the record's table, as TVM's get_patterns_with_prefix: highest priority first
            patterns += get_backend(name).patterns()
    return patterns


def _instruments(print_after_all: bool, dump_dir: str | None, verify_each: bool):
    from byocc.transform import DumpIR
    from byocc.transform import PrintAfterAll
    from byocc.transform import WellFormedInstrument

    if verify_each:
        yield WellFormedInstrument()
    if print_after_all:
        yield PrintAfterAll()
    if dump_dir:
        from .output import write_file

        # no NNN_*.relax of an earlier run left behind; every file through the one writer
        yield DumpIR(dump_dir, refresh=True, writer=write_file)


def pass_names(path_: str, backends: tuple[str, ...], bind_constants: bool, entries: tuple[str, ...],
               run_codegen: bool, prepare: tuple, backend_steps: bool,
               front: tuple = (None, None, "half")) -> list[str]:
    """The names of the passes ``partition`` runs with these options, each once, in the
    order they finish: ``--recompose``'s, the preparation's passes and ``prepare``,
    ToMixedPrecision with ``--dtype``, the partitioning's passes and ``partition``, and
    RunCodegen with ``-o``. ``prepare``: the ``(--prepare, --layout, --fold-batch-norm)``
    values; ``front``: ``(--recompose, --dtype, --accumulate-dtype)``."""
    from byocc.transform import Sequential
    from byocc.transform import partition_passes

    def walk(passes) -> list[str]:  # in the order they finish, as --print-after-all prints
        out: list[str] = []
        for p in passes:
            out += walk(p.passes) if isinstance(p, Sequential) else []
            out.append(p.info.name)
        return out

    recompose, mixed_dtype, accumulate = front
    before = prepare_passes_of(backends, *prepare)
    names = walk(recompose_passes(backends, recompose, mixed_dtype, prepare))
    names += ([*walk(before), "prepare"] if before else [])
    names += walk(mixed_precision_passes(mixed_dtype, accumulate) + lowering_passes(backends, recompose, mixed_dtype))
    names += walk(partition_passes(
        [], path_, bind_constants, list(entries) or None, **steps_of(backends, backend_steps))) + ["partition"]
    if run_codegen:
        names.append("RunCodegen")
    return list(dict.fromkeys(names))


def check_pass_names(wanted: tuple[str, ...], path_: str, backends: tuple[str, ...], bind_constants: bool,
                     entries: tuple[str, ...], run_codegen: bool, prepare: tuple, backend_steps: bool,
                     front: tuple = (None, None, "half")) -> None:
    """A usage error for a ``--print-after`` name that is no pass of this run, listing
    the passes it runs (and saying which option runs a pass it does not)."""
    import difflib

    args = (bind_constants, entries)
    known = pass_names(path_, backends, *args, run_codegen, prepare, backend_steps, front)
    for name in wanted:
        if name in known:
            continue
        hint = ""
        other = "merge" if path_ == "annotate" else "annotate"
        if name in pass_names(other, backends, *args, run_codegen, prepare, backend_steps, front):
            hint = f"; it runs with --path {other}"
        elif not run_codegen and name == "RunCodegen":
            hint = "; it runs with -o DIR"
        elif name in pass_names(path_, backends, *args, run_codegen, (True, None, None), True):
            hint = "; it runs with --prepare or --backend-steps"
        elif name in pass_names(path_, backends, *args, run_codegen, prepare, backend_steps,
                                (True, "float16", "half")):
            hint = "; it runs with --dtype or --recompose"
        else:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
        raise click.BadParameter(f"no pass {name!r} on this run (--path {path_}; its passes: "
                                 f"{', '.join(known)}){hint}", param_hint="'--print-after'")


def _print_after_instrument(wanted: frozenset):
    """An instrument printing the module after the passes named in ``wanted`` (stderr)."""
    from byocc.transform import PassInstrument

    class PrintAfter(PassInstrument):
        def __init__(self):
            self.wanted = wanted

        def run_after_pass(self, mod, info):
            if info.name in self.wanted:
                sys.stderr.write(f"After Running Pass: {info.name}\n{mod.script()}\n")

    return PrintAfter()


def _report_page(model: str, partitioned, report, backends: tuple[str, ...], patterns_file: str | None,
                 path_: str) -> str:
    """The ``--report`` page (byocc.cli.report) of this run."""
    from .report import render_html

    name = "stdin" if model == "-" else model
    table = [f"backend {b}" for b in backends] + ([f"patterns {patterns_file}"] if patterns_file else [])
    subtitle = f"{name} · path {path_} · {', '.join(table)} · {report['patterns']} patterns"
    return render_html(partitioned, f"byocc partition: {Path(name).name}", subtitle, report)


def _write_json_file(path: str, report) -> None:
    import json

    from .output import write_file

    write_file(path, json.dumps(report, indent=2, sort_keys=True) + "\n")


__all__ = ["check_pass_names", "load_patterns", "partition", "pass_names"]
