"""Command-line interface."""

from __future__ import annotations

import sys


def main() -> None:
    """Entry point of the ``ebmeval`` command.

    User mistakes (``UsageError``) print one line and exit 2; bugs keep their traceback.
    SIGTERM and SIGHUP stop a command as Ctrl-C does, so a run they end is marked interrupted.
    """
    from rich.markup import escape

    from .._util.errors import UsageError
    from ._app import app
    from ._display import console

    _interrupt_on_termination()
    try:
        # without standalone mode click returns an Exit's code instead of exiting
        code = app(standalone_mode=False)
    except UsageError as exc:
        console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, markup=True, soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt:
        console.print("[yellow]Interrupted.[/]")
        sys.exit(130)
    except SystemExit:
        raise
    except BaseException as exc:
        import typer

        if isinstance(exc, typer.Exit):
            sys.exit(exc.exit_code)
        if isinstance(exc, _click_exception()):
            exc.show()  # type: ignore[attr-defined]
            sys.exit(2)
        if isinstance(exc, typer.Abort):
            sys.exit(130)
        raise
    if isinstance(code, int) and code:
        sys.exit(code)


def _interrupt_on_termination() -> None:
    """Treat SIGTERM and SIGHUP as SIGINT (Ctrl-C).

    They are turned into SIGINT rather than a ``KeyboardInterrupt`` raised in whatever frame runs:
    inside an event loop, ``asyncio.run`` then cancels the run's main task and finishes it cleanly,
    instead of the exception surfacing in some connection callback. A signal that is ignored
    (SIGHUP under ``nohup``) stays ignored. Where SIGINT itself was inherited ignored (a job put
    in the background by a script), SIGTERM and SIGHUP restore its default handler first, so
    they still stop the command (``timeout``, ``docker stop``, ``scancel``).
    """
    import signal
    from types import FrameType

    def interrupt(_signum: int, _frame: FrameType | None) -> None:
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            # inherited ignored (a background job of a script): raised as it is, it would do nothing
            signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.raise_signal(signal.SIGINT)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, interrupt)


def _click_exception() -> type[Exception]:
    """The ``ClickException`` class of the click that typer runs on (typer may vendor its own)."""
    import typer

    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


__all__ = ["main"]
