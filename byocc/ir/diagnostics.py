"""Source spans and the one exception hierarchy every byocc layer raises.

The CLI maps each class to an exit code (docs/architecture.md#exit-codes): :class:`InputError` and its
subclasses -> 1, :class:`PathError` -> 2 (a usage error, as click's own),
:class:`ExternalToolError` -> 3, anything else -> 70 (a bug in byocc).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    """A region of a source text, 1-based lines and columns (end exclusive)."""

    source: str  # file name as the user gave it ("<stdin>" for -)
    line: int
    column: int
    end_line: int = 0
    end_column: int = 0

    def __str__(self) -> str:
        return f"{self.source}:{self.line}:{self.column}"


class ByoccError(RuntimeError):
    """Base of every error byocc raises on purpose. A ``RuntimeError``, as TVM's own errors
    (``TVMError``, ``InternalError``, ``DiagnosticError``) are."""

    exit_code = 70

    def __init__(self, message: str, span: Span | None = None, notes: tuple[str, ...] = ()):
        super().__init__(message)
        self.message = message
        self.span = span
        self.notes = tuple(notes)

    def __str__(self) -> str:
        return f"{self.span}: {self.message}" if self.span else self.message


class InputError(ByoccError):
    """The user's input is wrong (exit code 1)."""

    exit_code = 1


class ParseError(InputError):
    """Malformed text: lexing, grammar, or an unknown construct."""


class TypeInferenceError(InputError):
    """An operator got arguments it cannot take (wrong dtype, rank, shape...)."""


class UnsupportedError(InputError):
    """A construct or operator byocc does not support."""


class WellFormedError(InputError, ValueError):
    """The module violates a well-formedness rule (docs/partitioning.md#well-formedness). Also a
    ``ValueError``, as TVM's ``relax.analysis.well_formed`` raises."""


class PatternError(InputError):
    """A pattern table or pattern file is wrong (bad name, raising check, ...)."""


class PassError(InputError, ValueError):
    """A pass cannot run on this module (e.g. MergeCompositeFunctions without main). Also a
    ``ValueError``: what TVM raises for such modules (inconsistent match_casts, a variable
    bound twice)."""


class FrontendError(InputError):
    """A model file for a frontend (ONNX) is malformed or uses what byocc cannot import."""


class InterpretError(InputError):
    """The numpy interpreter cannot run the module on the given inputs (a shape mismatch,
    a constant without its value, an external function it has no implementation of)."""


class PathError(ByoccError):
    """A file or folder named on the command line cannot be used as asked: it does not
    exist, or is a folder where a file is wanted, or cannot be read (exit code 2, a usage
    error like click's own ``Path(exists=True)``). What is *in* a file that can be read is
    an :class:`InputError`."""

    exit_code = 2


class ExternalToolError(ByoccError):
    """An external tool (nvcc, ninja) is missing or failed (exit code 3)."""

    exit_code = 3


class InternalError(ByoccError):
    """A bug in byocc (exit code 70)."""

    exit_code = 70


class MultipleErrors(InputError):
    """Several located problems reported together (``byocc check``)."""

    def __init__(self, errors: list[ByoccError]):
        first = errors[0]
        super().__init__(first.message, first.span)
        self.errors = list(errors)
