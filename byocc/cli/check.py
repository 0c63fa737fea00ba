"""``byocc check MODEL``: parse and check well-formedness, reporting every problem located."""

from __future__ import annotations

import click

from .model import load_model
from .model import model_argument


@click.command()
@model_argument()
def check(model: str) -> None:
    """Parse MODEL and check that it is well formed.

    Exits 0 (printing "ok: N functions" to stderr) or 1 with every problem, each located
    as file:line:col with the offending line. MODEL may be - for stdin.
    """
    mod = load_model(model)
    from byocc.ir import ByoccError
    from byocc.ir import MultipleErrors
    from byocc.ir import WellFormedError
    from byocc.ir.well_formed import well_formed

    problems = list(well_formed(mod))
    if problems:
        errors: list[ByoccError] = [
            p if isinstance(p, ByoccError) else WellFormedError(str(p)) for p in problems
        ]
        raise errors[0] if len(errors) == 1 else MultipleErrors(errors)
    count = len(mod)
    click.echo(f"ok: {count} function{'s' if count != 1 else ''}", err=True)


__all__ = ["check"]
