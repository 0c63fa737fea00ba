"""The one template mechanism of the code-generation layer: Jinja2.

Generated C++ is written as Jinja2 templates that read as the C++ they produce
(``byocc/backends/<package>/templates/*.j2``); fixed C++ that does not depend on the model
lives in real files (``byocc/backends/<package>/csrc/``), copied into ``DIR/src/`` as they
are. Both ship in the wheel as package data.

Why Jinja2 and not :class:`string.Template`: the wrapper and the kernel units repeat blocks
per argument, per dim and per step and include parts only for some configurations. With
``string.Template`` those loops and conditions would stay in Python, concatenating pieces,
and the shape of the C++ would again be hidden in the source. Jinja2's ``{% for %}`` and
``{% if %}`` keep it in the template. It is imported only when code is generated, never by
``byocc --help``.

Names: ``"<package>/<file>"``, where ``<package>`` is a sub-package of
:mod:`byocc.backends` (``cuda/wrapper.cu.j2``, ``cutlass/gemm_step.cu.j2``). The
environment trims the newline after a block tag and the indentation before it
(``trim_blocks``, ``lstrip_blocks``), keeps the final newline, and fails on an undefined
name (``StrictUndefined``). Filters: ``c_comment`` and ``c_string`` (:mod:`.cxx`).
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

from .cxx import c_comment
from .cxx import c_string


def _package_dir(package: str):
    if not package.isidentifier():
        raise ValueError(f"template package must be a sub-package name of byocc.backends, got {package!r}")
    return resources.files(f"byocc.backends.{package}")


def _load(name: str) -> str | None:
    package, _, file = name.partition("/")
    path = _package_dir(package) / "templates" / file
    return path.read_text(encoding="utf-8") if path.is_file() else None


@functools.cache
def environment():
    """The shared Jinja2 environment (built on first use)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(_load),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    env.filters["c_comment"] = c_comment
    env.filters["c_string"] = c_string
    return env


def render(name: str, /, **context: Any) -> str:
    """Render template ``<package>/<file>`` with ``context`` (which may hold a ``name``)."""
    return environment().get_template(name).render(**context)


@functools.cache
def fixed_source(name: str) -> str:
    """The text of fixed C++ file ``<package>/<file>`` (``byocc/backends/<package>/csrc/<file>``)."""
    package, _, file = name.partition("/")
    return (_package_dir(package) / "csrc" / file).read_text(encoding="utf-8")


__all__ = ["environment", "fixed_source", "render"]
