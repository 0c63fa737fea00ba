"""The ``byocc`` command group, its error boundary and the console-script entry point.

Start-up is kept small: this module imports click and the command modules, which import
only click and the standard library at top level. Every library layer (text, transform,
backends; and through them lark, numpy, rich) is imported inside the command that needs
it, so ``byocc --help`` stays cheap (bench/startup.py measures it).

Exit codes (docs/architecture.md#exit-codes): 0 success, 1 bad input (what is inside a file), 2 usage error
(click's, a path on the command line that does not exist or is of the wrong kind, an output
location that cannot be written), 3 an external tool failed, 70 a bug in byocc, 130
interrupted. Errors never print a Python traceback unless
``--debug`` is given (or ``BYOCC_DEBUG=1`` is set).
"""

from __future__ import annotations

import os
from typing import Any

import click

from byocc import __version__

from . import bench
from . import build
from . import check
from . import import_
from . import list_
from . import partition
from . import run
from . import show
from . import verify
from .output import StdoutClosed

EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130


class ByoccGroup(click.Group):
    """A click group that turns every exception into a message and an exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort):
            raise
        except StdoutClosed:
            # The reader of stdout went away (`byocc show big.relax | head`): not an error.
            ctx.exit(0)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)
        except Exception as exc:  # the error boundary: every failure becomes a message
            if _debug_enabled(ctx):
                raise
            from .diagnostics import exit_code_for
            from .diagnostics import render_error

            render_error(exc, default_source=ctx.meta.get("byocc.source"))
            ctx.exit(exit_code_for(exc))


    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's command list, but each command's first sentence whole (wrapped when long),
        never cut short with ``...``."""
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit=_SHORT_HELP_LIMIT)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


#: The longest first sentence ``byocc --help`` shows of a command (longer ones are cut).
_SHORT_HELP_LIMIT = 200


def _debug_enabled(ctx: click.Context) -> bool:
    return bool(ctx.params.get("debug")) or os.environ.get("BYOCC_DEBUG", "") not in ("", "0")


@click.group(cls=ByoccGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="byocc", message="%(prog)s %(version)s")
@click.option("--debug", is_flag=True, help="Show Python tracebacks instead of one-line errors.")
def cli(debug: bool) -> None:
    """byocc: bring-your-own-codegen partitioning of Relax programs, as TVM 0.27 does it.

    Reads modules in TVMScript's Relax syntax (`.relax` files, `-` for stdin), carves out
    the subgraphs a backend (cutlass, cublas, or your own patterns) can run, and prints or
    writes the result.

    \b
    Examples:
      byocc show samples/seed.relax
      byocc check samples/mlp_fp16.relax
      byocc partition samples/seed.relax --path merge --patterns samples/seed_patterns.py
      byocc partition samples/mlp_fp16.relax --backend cutlass -o out/

    Exit codes: 0 ok, 1 bad input, 2 usage error, 3 external tool failed, 70 internal error.
    """


cli.add_command(show.show)
cli.add_command(check.check)
cli.add_command(partition.partition)
cli.add_command(build.build)
cli.add_command(run.run)
cli.add_command(verify.verify)
cli.add_command(bench.bench)
cli.add_command(import_.import_, name="import")
cli.add_command(list_.list_backends, name="list")
cli.add_command(list_.backends_alias, name="backends")


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point (``byocc = byocc.cli:main``)."""
    cli.main(args=argv, prog_name="byocc")


__all__ = ["cli", "main", "EXIT_INTERNAL", "EXIT_INTERRUPTED"]
