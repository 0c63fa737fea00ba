"""byocc.script: TVMScript entry points (``tvm.script``) over byocc's parser.

* :func:`from_source` parses Relax text: a module into an :class:`~byocc.ir.IRModule`,
  one stand-alone ``@R.function`` into its :class:`~byocc.ir.Function` (as TVM does).
* ``from byocc.script import ir as I, relax as R``: ``@I.ir_module`` on a class returns the
  IRModule its source text describes; ``@R.function`` on a top-level def returns the
  :class:`~byocc.ir.Function`. The decorated object's source is read back with
  :mod:`inspect` and parsed by :mod:`byocc.text`, so it must live in a file. Names the
  text does not define resolve through the decorator's caller's Python names, as in TVM:
  ``@tvm.script.ir_module``, ``relax.op.add(x, y)``, ``R.const(weight)``.
"""

from __future__ import annotations

from typing import Any

from byocc.ir import Function
from byocc.ir import IRModule

from . import ir
from . import relax
from . import tirx

tir = tirx  # the name TVM releases before 0.27 used
ir_module = ir.ir_module  # ``@tvm.script.ir_module``: the same decorator as ``@I.ir_module``


def from_source(text: str, extra_vars: dict[str, Any] | None = None,
                source: str = "<string>") -> IRModule | Function:
    """Parse TVMScript text, as ``tvm.script.from_source``: an ``@I.ir_module`` class gives
    the IRModule, one stand-alone ``@R.function`` the Function.

    ``extra_vars`` are the Python names the text may read, as in TVM (``{"R": R}`` needs
    not be given: ``I``, ``R``, ``T`` are the TVMScript namespaces; ``{"weight": array}``
    lets ``R.const(weight)`` read an array, ``{"relax": relax}`` lets ``relax.op.add``
    stand for ``R.add``)."""
    from byocc.text import parse_script

    from ._source import python_scope

    return parse_script(text, source, python_scope(extra_vars) if extra_vars else None)


__all__ = ["from_source", "ir", "ir_module", "relax", "tir", "tirx"]
