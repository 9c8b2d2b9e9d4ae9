"""Blocking forms of the async API (``run`` of ``arun``, ``rescore`` of ``arescore`` …)."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from .errors import UsageError

P = ParamSpec("P")
T = TypeVar("T")


def run_blocking(main: Coroutine[Any, Any, T], name: str, instead: str) -> T:
    """Run ``main`` to completion in a new event loop: the synchronous twin ``name`` of an async API.

    Raises:
        UsageError: Called inside a running event loop (a notebook), where ``instead`` is to be awaited.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no loop running: the usual case
        return asyncio.run(main)
    main.close()
    raise UsageError(f"{name} cannot run inside a running event loop (a notebook): use {instead}")


def synchronous(function: Callable[P, Coroutine[Any, Any, T]], name: str, instead: str) -> Callable[P, T]:
    """The blocking form of the coroutine function ``function``, public as ``name``: the same parameters and result.

    Each call runs ``function`` through :func:`run_blocking` (so inside a running event loop it
    raises ``UsageError`` naming ``instead``). Its docstring is ``function``'s, after a paragraph
    saying it is the blocking form; ``inspect.signature`` gives ``function``'s parameters.
    """
    short = name.rpartition(".")[2]

    @functools.wraps(function)
    def blocking(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            main = function(*args, **kwargs)
        except TypeError as exc:  # arguments that do not bind: Python's words, naming this function
            raise TypeError(str(exc).replace(f"{function.__qualname__}()", f"{short}()", 1)) from None
        return run_blocking(main, name, instead)

    blocking.__name__ = blocking.__qualname__ = short
    blocking.__doc__ = (
        f"The blocking form of :func:`{function.__name__}`, for code outside an event loop; inside a running one\n"
        f"(a notebook) it raises ``UsageError``: use ``{instead}`` there.\n\n"
        + inspect.cleandoc(function.__doc__ or "")
    )
    return blocking
