"""Options shared by several commands (``partition``, ``verify``), in a module of its own so
that ``byocc.cli_runtime`` can use them without importing the ``byocc.cli`` package."""

from __future__ import annotations

import click


def prepare_options(command):
    """The options that run :func:`byocc.transform.prepare_for_backend` first."""
    command = click.option(
        "--fold-batch-norm/--no-fold-batch-norm", "fold_bn", default=None,
        help="Fold inference BatchNorm into the preceding convolution (implies --prepare).")(command)
    command = click.option(
        "--layout", type=click.Choice(["NHWC", "none"]), default=None,
        help="Convert conv2d to this layout first (cutlass needs NHWC/OHWI). Implies "
             "--prepare; 'none' keeps the layout.")(command)
    return click.option(
        "--prepare", is_flag=True,
        help="Before partitioning, apply what the backends need: constant folding, BatchNorm "
             "folding into convolutions and (for cutlass) the NHWC/OHWI layout.")(command)


def apply_prepare(mod, backends, prepare: bool, layout: str | None, fold_bn: bool | None):
    """``mod`` prepared for ``backends`` when any of the prepare options was given."""
    if not (prepare or layout is not None or fold_bn is not None):
        return mod
    from byocc.transform import prepare_for_backend

    return prepare_for_backend(mod, list(backends), layout=None if layout == "none" else "NHWC",
                               fold_batch_norm=True if fold_bn is None else fold_bn)
