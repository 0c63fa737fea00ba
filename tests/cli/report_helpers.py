"""What the report tests expect, counted from the IR itself (not from byocc.cli.report), and
a reader of the page's static DOM.

``expected_dom(mod)``: per drawn function its bindings, per offloaded function its backend,
its call sites and the operators its body shows when expanded. ``PageDom`` collects every
element with a ``data-*`` attribute, separately for the page and for each ``<template>``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from dataclasses import field
from html.parser import HTMLParser

from byocc.ir import Call
from byocc.ir import Function
from byocc.ir import GlobalVar
from byocc.ir import Var


@dataclass
class Expected:
    bindings: dict[str, int] = field(default_factory=dict)
    """drawn function -> number of bindings"""
    backend: dict[str, str] = field(default_factory=dict)
    """offloaded function -> backend"""
    calls: Counter = field(default_factory=Counter)
    """offloaded function -> call sites in the drawn functions"""
    body: dict[str, int] = field(default_factory=dict)
    """offloaded function -> nodes its expansion draws (composite operators, other bindings)"""


def body_nodes(func: Function) -> int:
    local: dict = {}
    count = 0
    for block in func.body.blocks:
        for b in block.bindings:
            if isinstance(b.value, Function):
                local[b.var] = b.value
                continue
            callee = None
            if isinstance(b.value, Call) and isinstance(b.value.op, Var):
                callee = local.get(b.value.op)
            if callee is not None and "Composite" in callee.attrs:
                count += sum(len(bb.bindings) for bb in callee.body.blocks)
            else:
                count += 1
    return count


def expected_dom(mod) -> Expected:
    exp = Expected()
    for name in mod.names():
        func = mod[name]
        if not isinstance(func, Function):
            continue
        attrs = func.attrs or {}
        if "Codegen" in attrs:
            exp.backend[name] = str(attrs["Codegen"])
            exp.body[name] = body_nodes(func)
        elif "Composite" not in attrs:
            exp.bindings[name] = sum(len(b.bindings) for b in func.body.blocks)
    for name in exp.bindings:
        for block in mod[name].body.blocks:
            for b in block.bindings:
                if isinstance(b.value, Call) and isinstance(b.value.op, GlobalVar) and b.value.op.name_hint in exp.backend:
                    exp.calls[b.value.op.name_hint] += 1
    return exp


class PageDom(HTMLParser):
    """Elements with data attributes: ``page`` (outside templates), ``templates`` (by
    data-body-of); each element is its attribute dict; ``section`` is the enclosing
    data-graph."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.page: list[dict] = []
        self.templates: dict[str, list[dict]] = {}
        self._template: str | None = None
        self._sections: list[str] = []
        self._depth: list[str] = []
        self.urls: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("src", "href", "action", "poster", "data"):
            if key in a:
                self.urls.append(a[key])
        if tag == "template":
            self._template = a.get("data-body-of")
            self.templates[self._template] = []
            return
        if tag == "section" and "data-graph" in a:
            self._sections.append(a["data-graph"])
        if any(k.startswith("data-") for k in a):
            a["_tag"] = tag
            a["_section"] = self._sections[-1] if self._sections else None
            (self.templates[self._template] if self._template is not None else self.page).append(a)

    def handle_endtag(self, tag):
        if tag == "template":
            self._template = None

    def having(self, key: str, where: list[dict] | None = None) -> list[dict]:
        return [a for a in (self.page if where is None else where) if key in a]
