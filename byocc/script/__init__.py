"""byocc.script: TVMScript entry points (``tvm.script``) over byocc's parser.

* :func:`from_source` parses Relax text (a module, or one stand-alone ``@R.function``)
  into an :class:`~byocc.ir.IRModule`.
* ``from byocc.script import ir as I, relax as R``: ``@I.ir_module`` on a class returns the
  IRModule its source text describes; ``@R.function`` on a top-level def returns the
  :class:`~byocc.ir.Function`. The decorated object's source is read back with
  :mod:`inspect` and parsed by :mod:`byocc.text`, so it must live in a file, and the text
  must use the printed spelling (``I.``, ``R.``, ``T.`` prefixes; spec/textual-ir.md).
"""

from __future__ import annotations

from typing import Any

from byocc.ir import IRModule

from . import ir
from . import relax
from . import tirx

tir = tirx  # the name TVM releases before 0.27 used
ir_module = ir.ir_module  # ``@tvm.script.ir_module``: the same decorator as ``@I.ir_module``


def from_source(text: str, extra_vars: dict[str, Any] | None = None, source: str = "<string>") -> IRModule:
    """Parse Relax text into a module (a stand-alone function becomes a module holding it).

    ``extra_vars`` is accepted for TVM compatibility and ignored: byocc's parser resolves
    only the ``I``/``R``/``T`` prefixes and ``metadata``.
    """
    from byocc.text import parse_module

    return parse_module(text, source)


__all__ = ["from_source", "ir", "ir_module", "relax", "tir", "tirx"]
