"""Pass infrastructure: :class:`Pass`, :class:`Sequential`, :class:`PassContext` and instruments.

Mirrors TVM's ``tvm.transform`` / ``tvm.ir.instrument`` (docs/architecture.md#pass-manager-and-instruments):

* A pass is a small frozen dataclass deriving from :class:`Pass` with ``name`` (TVM's exact
  pass name) and ``opt_level`` class variables, options as fields and ``run(mod)``.
  ``pass_(mod)`` runs it under the current :class:`PassContext`, so TVM-style
  ``FuseOpsByPattern(patterns)(mod)`` works.
* :class:`PassContext` holds ``opt_level``, ``required_pass``, ``disabled_pass`` and
  ``instruments``; ``with PassContext(...):`` makes it current. Instruments get TVM's hooks
  ``enter_pass_ctx``, ``exit_pass_ctx``, ``should_run``, ``run_before_pass`` and
  ``run_after_pass`` (``mod, info``), for every pass run, ``Sequential`` included.
* Instruments shipped here write to stderr or to files, never to stdout (docs/architecture.md#pass-manager-and-instruments):
  :class:`PassTimingInstrument`, :class:`PrintBeforeAll`, :class:`PrintAfterAll`,
  :class:`DumpIR` (``NNN_<pass>.relax``) and :class:`WellFormedInstrument` (verify each).
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from typing import ClassVar

from byocc.ir import ByoccError
from byocc.ir import Function
from byocc.ir import IRModule
from byocc.ir import MultipleErrors
from byocc.ir.memory import gc_paused


@dataclass(frozen=True)
class PassInfo:
    """What instruments learn about a pass: its name, opt level and required passes."""

    name: str
    opt_level: int = 0
    required: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.name


class Pass:
    """Base of every pass. Subclasses are frozen dataclasses that implement :meth:`run`.

    A pass with no options is just a module transform under a name; it says so in its class
    line instead of a body::

        @dataclass(frozen=True)
        class FoldConstant(Pass, name="FoldConstant", transform=fold_constant):
            "Fold computations on constants."
    """

    name: ClassVar[str] = "Pass"
    opt_level: ClassVar[int] = 0
    required: ClassVar[tuple[str, ...]] = ()
    #: the module transform :meth:`run` applies (given as ``transform=`` in the class line)
    transform: ClassVar[Callable[[IRModule], IRModule] | None] = None

    def __init_subclass__(cls, *, name: str | None = None, opt_level: int | None = None,
                          transform: Callable[[IRModule], IRModule] | None = None,
                          **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if name is not None:
            cls.name = name
        if opt_level is not None:
            cls.opt_level = opt_level
        if transform is not None:
            cls.transform = transform

    @property
    def info(self) -> PassInfo:
        return PassInfo(self.pass_name, self.opt_level, tuple(self.required))

    @property
    def pass_name(self) -> str:
        return type(self).name

    def run(self, mod: IRModule) -> IRModule:
        """Transform ``mod`` (never mutate it) and return the result."""
        transform = type(self).transform
        if transform is None:
            raise NotImplementedError(f"{type(self).__name__}.run")
        return transform(mod)

    def __call__(self, mod: IRModule) -> IRModule:
        return PassContext.current().run_pass(self, mod)


class _NamedPass(Pass):
    """A pass whose name, opt level and required passes are given per instance."""

    def __init__(self, name: str, opt_level: int = 0, required: Sequence[str] = ()):
        self._name = name
        self._opt_level = opt_level
        self._required = tuple(required)

    @property
    def info(self) -> PassInfo:
        return PassInfo(self._name, self._opt_level, self._required)

    @property
    def pass_name(self) -> str:
        return self._name


class Sequential(_NamedPass):
    """Run ``passes`` in order (TVM ``tvm.transform.Sequential``).

    A member pass is skipped when the context disables it, or when its ``opt_level`` exceeds
    the context's and it is neither required by the context nor by this sequence.
    """

    name: ClassVar[str] = "sequential"

    def __init__(self, passes: Sequence[Pass] = (), opt_level: int = 0, name: str = "sequential",
                 required: Sequence[str] = ()):
        super().__init__(name, opt_level, required)
        self.passes: tuple[Pass, ...] = tuple(passes)

    def run(self, mod: IRModule) -> IRModule:
        ctx = PassContext.current()
        for p in self.passes:
            info = p.info
            if info.name in ctx.disabled_pass:
                continue
            if info.opt_level > ctx.opt_level and info.name not in ctx.required_pass \
                    and info.name not in self._required:
                continue
            mod = ctx.run_pass(p, mod)
        return mod

    def __repr__(self) -> str:
        return f"Sequential({[p.pass_name for p in self.passes]!r}, name={self._name!r})"


class PassInstrument:
    """Base of instruments: every hook is a no-op; ``should_run`` answers True."""

    def enter_pass_ctx(self) -> None:
        pass

    def exit_pass_ctx(self) -> None:
        pass

    def should_run(self, mod: IRModule, info: PassInfo) -> bool:
        return True

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        pass

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        pass


class PassContext:
    """The configuration passes run under; ``with PassContext(...):`` makes it current.

    On entry every instrument's ``enter_pass_ctx`` runs (if one raises, the instruments
    already entered are exited again and the error propagates); on exit ``exit_pass_ctx``.
    A :class:`ByoccError` raised inside a pass gets a note naming the pass.
    """

    _stack: ClassVar[list[PassContext]] = []

    def __init__(self, opt_level: int = 2, required_pass: Iterable[str] = (),
                 disabled_pass: Iterable[str] = (), instruments: Iterable[PassInstrument] = (),
                 config: dict | None = None):
        self.opt_level = opt_level
        self.required_pass = tuple(required_pass)
        self.disabled_pass = tuple(disabled_pass)
        self.instruments: tuple[PassInstrument, ...] = tuple(instruments)
        self.config = dict(config or {})

    # ------------------------------------------------------------------ scope
    @classmethod
    def current(cls) -> PassContext:
        if not cls._stack:
            cls._stack.append(PassContext())  # the default, outermost context
        return cls._stack[-1]

    def __enter__(self) -> PassContext:
        entered: list[PassInstrument] = []
        try:
            for inst in self.instruments:
                inst.enter_pass_ctx()
                entered.append(inst)
        except BaseException:
            for inst in entered:
                inst.exit_pass_ctx()
            raise
        PassContext._stack.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if PassContext._stack and PassContext._stack[-1] is self:
            PassContext._stack.pop()
        for inst in self.instruments:
            inst.exit_pass_ctx()

    # ------------------------------------------------------------------ running
    def run_pass(self, pass_: Pass, mod: IRModule) -> IRModule:
        """Run one pass with the instrument hooks around it (TVM ``Pass::operator()``)."""
        info = pass_.info
        if self.instruments:
            if info.name not in self.required_pass:
                should = True
                for inst in self.instruments:
                    should = bool(inst.should_run(mod, info)) and should
                if not should:
                    return mod
            for inst in self.instruments:
                inst.run_before_pass(mod, info)
        try:
            with gc_paused():  # a pass builds many long-lived objects and no cycles
                out = pass_.run(mod)
        except ByoccError as err:
            note = f"while running pass {info.name}"
            if not isinstance(pass_, Sequential) and note not in err.notes:
                err.notes = err.notes + (note,)
            raise
        for inst in self.instruments:
            inst.run_after_pass(out, info)
        return out


def _stream(file: IO[str] | None) -> IO[str]:
    return file if file is not None else sys.stderr  # looked up late: pytest's capsys swaps it


class PassTimingInstrument(PassInstrument):
    """Time every pass. :meth:`render` returns one line per pass run, nested passes indented:
    ``<name>: <ms>ms [<ms spent in nested passes>ms]``. Profiles are cleared on entering a
    context; with ``file`` given the report is written there on leaving it."""

    def __init__(self, file: IO[str] | None = None):
        self.file = file
        self._rows: list[list] = []  # [depth, name, seconds, nested seconds]
        self._open: list[tuple[int, float]] = []

    def enter_pass_ctx(self) -> None:
        self._rows = []
        self._open = []

    def exit_pass_ctx(self) -> None:
        if self.file is not None and self._rows:
            self.file.write(self.render())

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        self._rows.append([len(self._open), info.name, 0.0, 0.0])
        self._open.append((len(self._rows) - 1, time.perf_counter()))

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        if not self._open:
            return
        row, start = self._open.pop()
        elapsed = time.perf_counter() - start
        self._rows[row][2] = elapsed
        if self._open:
            self._rows[self._open[-1][0]][3] += elapsed

    def timings(self) -> list[tuple[str, float]]:
        """(pass name, seconds) for every completed pass run, in start order."""
        return [(name, secs) for _, name, secs, _ in self._rows]

    def render(self) -> str:
        lines = []
        for depth, name, secs, nested in self._rows:
            lines.append(f"{'  ' * depth}{name}: {secs * 1e3:.2f}ms [{nested * 1e3:.2f}ms]")
        return "\n".join(lines) + ("\n" if lines else "")


class _PrintModule(PassInstrument):
    """Writes ``<label> Running Pass: <name>`` and the module (to stderr by default)."""

    label: ClassVar[str] = ""

    def __init__(self, file: IO[str] | None = None):
        self.file = file

    def _print(self, mod: IRModule, info: PassInfo) -> None:
        _stream(self.file).write(f"{self.label} Running Pass: {info.name}\n{mod.script()}\n")


class PrintBeforeAll(_PrintModule):
    """Print the pass name and the module before every pass (to stderr by default)."""

    label = "Before"

    def run_before_pass(self, mod: IRModule, info: PassInfo) -> None:
        self._print(mod, info)


class PrintAfterAll(_PrintModule):
    """Print the pass name and the module after every pass (to stderr by default)."""

    label = "After"

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        self._print(mod, info)


_DUMP_NAME = re.compile(r"^\d{3}_.*\.relax$")


class DumpIR(PassInstrument):
    """Write the module after every pass to ``dump_dir/NNN_<pass>.relax`` (NNN counts from 000).

    ``refresh=True`` first empties ``dump_dir`` if it holds only files this instrument writes;
    otherwise a warning goes to stderr and nothing is removed. ``writer(path, text)`` writes
    one file (the CLI passes its one output writer: atomic, through symlinks, umask, inputs
    refused); the default is ``Path.write_text``.
    """

    def __init__(self, dump_dir: str | Path, refresh: bool = False,
                 writer: Callable[[Path, str], object] | None = None):
        self.dump_dir = Path(dump_dir)
        self.counter = 0
        self.writer = writer or (lambda path, text: Path(path).write_text(text))
        if refresh and self.dump_dir.is_dir():
            items = list(self.dump_dir.iterdir())
            if all(p.is_file() and _DUMP_NAME.match(p.name) for p in items):
                for p in items:
                    p.unlink()
            else:
                sys.stderr.write(f"warning: not clearing {self.dump_dir}: it holds other files\n")

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        name = re.sub(r'[<>:"/\\|?*\s]', "_", info.name)
        path = self.dump_dir / f"{self.counter:03d}_{name}.relax"
        self.counter += 1
        self.dump_dir.mkdir(parents=True, exist_ok=True)
        text = mod.script()
        self.writer(path, text if text.endswith("\n") else text + "\n")


class WellFormedInstrument(PassInstrument):
    """Verify each: after every pass, raise the well-formedness problems of its output
    (a :class:`~byocc.ir.WellFormedError`, or :class:`~byocc.ir.MultipleErrors` for several),
    each with a note naming the pass."""

    def __init__(self, check_ty: bool = True, skip: Iterable[str] = ("sequential",)):
        self.check_ty = check_ty
        self.skip = frozenset(skip)

    def run_after_pass(self, mod: IRModule, info: PassInfo) -> None:
        if info.name in self.skip:
            return
        from byocc.ir.well_formed import well_formed

        problems = well_formed(mod, check_ty=self.check_ty)
        if not problems:
            return
        note = f"after pass {info.name}"
        for p in problems:
            p.notes = p.notes + (note,)
        if len(problems) == 1:
            raise problems[0]
        raise MultipleErrors(list(problems))


def pass_instrument(cls: type) -> type:
    """Decorator making a plain class an instrument (TVM ``tvm.instrument.pass_instrument``):
    hooks it does not define fall back to :class:`PassInstrument`'s no-ops."""
    if issubclass(cls, PassInstrument):
        return cls
    return type(cls.__name__, (cls, PassInstrument), {"__doc__": cls.__doc__, "__module__": cls.__module__})


FunctionPassCallable = Callable[[IRModule], IRModule]


class ModulePass(_NamedPass):
    """A pass made from a function ``IRModule -> IRModule`` (TVM ``module_pass``)."""

    def __init__(self, fn: FunctionPassCallable, name: str, opt_level: int = 0,
                 required: Sequence[str] = ()):
        super().__init__(name, opt_level, required)
        self._fn = fn

    def run(self, mod: IRModule) -> IRModule:
        return self._fn(mod)


def map_functions(mod: IRModule, fn: Callable[[Function], Function]) -> IRModule:
    """``mod`` with every Relax function ``f`` replaced by ``fn(f)`` (a function pass); the
    same module when ``fn`` returns every function unchanged."""
    out = mod
    for name in mod.names():
        func = mod[name]
        if isinstance(func, Function):
            new = fn(func)
            if new is not func:
                out = out.with_function(name, new, mod.get_global_var(name))
    return out


__all__ = [
    "DumpIR", "map_functions", "ModulePass", "Pass", "PassContext", "PassInfo", "PassInstrument",
    "PassTimingInstrument", "PrintAfterAll", "PrintBeforeAll", "Sequential",
    "WellFormedInstrument", "pass_instrument",
]
