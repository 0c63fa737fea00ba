"""Codegen options: the typed schema of what a backend's codegen reads from
``target_options[backend]`` (``--codegen-option BACKEND.KEY=VALUE`` on the command line).

An :class:`OptionSchema` is a tuple of :class:`CodegenOption` (key, kind, default, one-line
help). It parses a value from the command line's text or from a Python value (the API's
``RunCodegen(target_options=...)``), checks it, and fills in the defaults. Kinds:

* ``bool``: ``true``/``false`` (also ``1/0``, ``yes/no``, ``on/off``; a Python bool);
* ``choice``: one of ``choices``;
* ``set``: a non-empty subset of ``choices``, written comma-separated (``sm_90a,sm_80``) or
  given as a list; kept in the order of ``choices``;
* ``float``: a finite number greater than ``above`` (``1e-6``; a Python int or float).

A bool option may be the negation of another (``negates``): two spellings of one setting
(cuBLAS's ``exact_gelu`` is ``not fast_gelu``); given both, they must agree.

Keys the schema does not name are passed through by the API (a TVM script's ``sm`` or
``find_first_valid``) and refused by the command line (``strict``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .codegen import CodegenError

KINDS = ("bool", "choice", "set", "float")
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


class OptionError(CodegenError):
    """A codegen option the schema refuses (an unknown key, a bad value, a disagreement)."""


@dataclass(frozen=True)
class CodegenOption:
    """One option a codegen reads."""

    key: str
    kind: str
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    """The values of a ``choice`` or ``set`` option, in their canonical order."""
    aliases: Mapping[str, str] | None = None
    """Other spellings of values (``sm90`` -> ``sm_90a``), accepted and normalised."""
    key_aliases: tuple[str, ...] = ()
    """Other spellings of the key (``archs`` for ``arch``)."""
    negates: str | None = None
    """For a bool: the key of the bool option this one is the negation of."""
    above: float | None = None
    """For a float: the values must be greater than this (None: any finite number)."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"codegen option {self.key}: unknown kind {self.kind!r}")
        if self.kind in ("choice", "set") and not self.choices:
            raise ValueError(f"codegen option {self.key}: a {self.kind} option needs choices")

    def expected(self) -> str:
        """What a value must be, for error messages and ``byocc list``."""
        if self.kind == "bool":
            return "true or false"
        if self.kind == "float":
            return "a finite number" + ("" if self.above is None else f" > {self.above:g}")
        names = [f"'{c}'" for c in self.choices]
        if self.kind == "choice":
            return " or ".join(names) if len(names) == 2 else "one of " + ", ".join(names)
        return "a comma-separated list of " + ", ".join(names)

    def parse(self, value: Any) -> Any:
        """``value`` (text or a Python value) checked and normalised; :class:`ValueError`
        (the text of :meth:`expected`) otherwise."""
        if self.kind == "bool":
            return self._bool(value)
        if self.kind == "float":
            return self._float(value)
        if self.kind == "choice":
            return self._choice(value)
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, Iterable) or isinstance(items, (bytes, Mapping)):
            raise ValueError(self.expected())
        picked = {self._choice(str(v).strip()) for v in items}
        if not picked:
            raise ValueError(self.expected())
        return tuple(c for c in self.choices if c in picked)

    def _bool(self, value: Any) -> bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower() if isinstance(value, str) else None
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise ValueError(self.expected())

    def _float(self, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValueError(self.expected())
        try:
            number = float(value)
        except ValueError:
            raise ValueError(self.expected()) from None
        if not math.isfinite(number) or (self.above is not None and not number > self.above):
            raise ValueError(self.expected())
        return number

    def _choice(self, value: Any) -> str:
        text = str(value).strip() if isinstance(value, str) else None
        text = (self.aliases or {}).get(text, text)
        if text not in self.choices:
            raise ValueError(self.expected())
        return text

    def text(self, value: Any) -> str:
        """``value`` as the command line writes it."""
        if self.kind == "bool":
            return "true" if value else "false"
        if self.kind == "set":
            return ",".join(value)
        if self.kind == "float":
            return repr(float(value))
        return str(value)

    def to_json(self, value: Any) -> Any:
        return list(value) if self.kind == "set" else value


@dataclass(frozen=True)
class OptionSchema:
    """The options one backend's codegen reads (empty: it reads none)."""

    options: tuple[CodegenOption, ...] = ()
    backend: str = ""
    """The backend's name, for messages (``cublas option fp32_math must be ...``)."""

    def __post_init__(self) -> None:
        keys = [o.key for o in self.options]
        if len(set(keys)) != len(keys):
            raise ValueError(f"codegen options of {self.backend}: a key is declared twice")
        for o in self.options:
            if o.negates is not None and (o.kind != "bool" or self.get(o.negates) is None):
                raise ValueError(f"codegen option {o.key}: negates must name a bool option")

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(o.key for o in self.options)

    def get(self, key: str) -> CodegenOption | None:
        """The option spelt ``key`` (or one of its key aliases), or None."""
        for o in self.options:
            if key == o.key or key in o.key_aliases:
                return o
        return None

    def parse_value(self, key: str, value: Any) -> tuple[str, Any]:
        """``(canonical key, parsed value)``; :class:`OptionError` for an unknown key or a
        bad value, naming the valid keys or values."""
        option = self.get(key)
        if option is None:
            valid = ", ".join(self.keys) if self.options else "none"
            raise OptionError(f"{self.backend} has no codegen option {key!r} (options: {valid})")
        try:
            return option.key, option.parse(value)
        except ValueError as exc:
            raise OptionError(f"{self.backend} option {option.key} must be {exc}, got {value!r}") from None

    def parse(self, values: Mapping[str, Any] | None, strict: bool = False) -> dict[str, Any]:
        """The given values, checked and normalised (canonical keys; no defaults). Unknown
        keys are dropped, or an :class:`OptionError` when ``strict``."""
        out: dict[str, Any] = {}
        for key, value in dict(values or {}).items():
            if not strict and self.get(key) is None:
                continue
            canonical, parsed = self.parse_value(key, value)
            out[canonical] = parsed
        for o in self.options:
            if o.negates is not None and o.key in out and o.negates in out and out[o.key] == out[o.negates]:
                raise OptionError(f"{self.backend} options {o.negates} and {o.key} are both set and "
                                  f"disagree ({o.key} is the negation of {o.negates})")
        return out

    def resolve(self, values: Mapping[str, Any] | None) -> dict[str, Any]:
        """Every option's value: the given ones (:meth:`parse`, unknown keys dropped), a
        negated option's from its partner, the defaults for the rest."""
        given = self.parse(values)
        out: dict[str, Any] = {}
        for o in self.options:
            if o.key in given:
                out[o.key] = given[o.key]
            elif o.negates is not None and o.negates in given:
                out[o.key] = not given[o.negates]
            else:
                partner = next((p.key for p in self.options if p.negates == o.key and p.key in given), None)
                out[o.key] = (not given[partner]) if partner is not None else o.default
        return out

    def to_json(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """Resolved ``values`` as JSON (the manifest's ``codegen_options``)."""
        return {o.key: o.to_json(values[o.key]) for o in self.options if o.key in values}

    def describe(self) -> list[dict[str, Any]]:
        """One JSON object per option (``byocc list --json``): key, kind, choices, default,
        what a value must be, help."""
        return [{"key": o.key, "kind": o.kind, "choices": list(o.choices), "default": o.to_json(o.default),
                 "values": o.expected(), "help": o.help} for o in self.options]


__all__ = ["CodegenOption", "KINDS", "OptionError", "OptionSchema"]
