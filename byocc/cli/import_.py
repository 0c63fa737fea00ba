"""``byocc import MODEL.onnx``: an ONNX model as a Relax module (TVM-printed text), its
constants in a sidecar ``.npz``."""

from __future__ import annotations

import os

import click

from .model import check_input_file
from .model import set_source
from .output import check_output_file
from .output import note_input
from .output import warn_dropped_constants
from .output import write_file
from .output import write_npz
from .output import write_stdout


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
    from byocc.frontend import from_onnx
    from byocc.ir import FrontendError

    set_source(model)
    note_input(model)
    check_input_file(model, "is a folder, not an ONNX file")
    sidecar = None
    if out_file is not None and out_file != "-":
        sidecar = os.path.splitext(out_file)[0] + ".npz"
        check_output_file(out_file)
        check_output_file(sidecar)
    try:
        mod = from_onnx(model, params_as_inputs=params_as_inputs)
    except FrontendError as err:
        if not model.lower().endswith(".relax"):
            raise
        raise FrontendError(err.message, err.span, err.notes + (
            "byocc import reads ONNX models; the other commands read a .relax file as it is",)) from None
    text, constants = print_with_constants(mod)
    if sidecar is None:
        warn_dropped_constants(len(constants), keep="-o OUT.relax")
        write_stdout(text + "\n")
        return
    if constants:
        write_npz(sidecar, constants)
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
    from byocc.text import constant_arrays
    from byocc.text import print_module_with_metadata

    text, meta = print_module_with_metadata(mod)
    return text, constant_arrays(meta)


__all__ = ["import_", "print_with_constants"]
