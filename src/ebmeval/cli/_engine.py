"""``ebmeval engine build|measure|status``: the native local engine."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ._common import JsonOption, app, console

if TYPE_CHECKING:
    from ..models import NativeEngine

engine_app = typer.Typer(
    help="Compile llama.cpp for this CPU, used by the local models once built and measured faster.",
    no_args_is_help=True,
)
app.add_typer(engine_app, name="engine")


@engine_app.command("build")
def build(
    source: Annotated[
        Path | None,
        typer.Option(help="A llama-cpp-python sdist (.tar.gz) already on disk; downloaded with pip if not given."),
    ] = None,
    jobs: Annotated[int | None, typer.Option(help="Compiler processes (default: all cores).")] = None,
    keep_build: Annotated[bool, typer.Option(help="Keep the build directory so a rebuild is incremental.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Compile llama.cpp's server for this CPU (fastest instruction set that works), verify and time it."""
    from ..models import build_native_engine, engines_dir

    if not as_json:
        console.print(f"compiling llama.cpp for this CPU (log: {engines_dir() / 'build.log'}) …", highlight=False)
    engine = _or_exit(lambda: build_native_engine(archive=source, jobs=jobs, keep_build=keep_build))
    if as_json:
        print(json.dumps(_record(engine)))
        return
    console.print(
        f"built {engine.provenance()['engine']} in {engine.build_seconds:.0f} s: {engine.binary}", highlight=False
    )
    _describe(engine)


@engine_app.command("measure")
def measure(as_json: JsonOption = False) -> None:
    """Time the installed native build against xllamacpp again; local models use the faster one."""
    from ..models import load_native_engine, measure_build, record_speed

    engine = load_native_engine()
    if engine is None:
        console.print("error: no native engine for this CPU; build one with: ebmeval engine build", highlight=False)
        raise typer.Exit(2)
    binary = engine.binary
    engine = _or_exit(lambda: record_speed(measure_build(binary)))
    if as_json:
        print(json.dumps(_record(engine)))
        return
    _describe_speed(engine)


@engine_app.command("status")
def status(as_json: JsonOption = False) -> None:
    """Show which engine local models run on, and the native build with its speed check if there is one."""
    from ..models import cpu_features, features_beyond_prebuilt, load_native_engine, native_dir

    engine = load_native_engine()
    if as_json:
        default = "native" if engine is not None and engine.measured_faster else "xllamacpp"
        print(json.dumps({"default_engine": default, "native": None if engine is None else _record(engine)}))
        return
    if engine is None:
        built = (native_dir() / "engine.json").exists()
        reason = "built for another CPU" if built else "not built"
        console.print(f"native engine: {reason}; local models run on xllamacpp (build one with: ebmeval engine build)")
        features = cpu_features()
        console.print(f"this CPU: {' '.join(features) or 'unknown'}", highlight=False)
        if extra := features_beyond_prebuilt(features):
            console.print(f"the prebuilt engine does not use {' '.join(extra)}: a native build may be faster")
        return
    console.print(f"native engine: {engine.provenance()['engine']} at {engine.binary}", highlight=False)
    console.print(f"built {engine.built_at} in {engine.build_seconds:.0f} s from {engine.source}", highlight=False)
    _describe(engine)


def _or_exit(make: Callable[[], NativeEngine]) -> NativeEngine:
    """``make()``; a failed build or speed check is printed as one line and ends with exit status 1."""
    from ..models import EngineBuildError

    try:
        return make()
    except EngineBuildError as exc:
        console.print(f"error: {exc}", highlight=False, markup=False)
        raise typer.Exit(1) from None


def _describe(engine: NativeEngine) -> None:
    """The variant, the variants refused before it, the instructions, and the speed check."""
    console.print(f"variant: {engine.variant}; instructions: {engine.system_info or 'not reported'}", highlight=False)
    for refusal in engine.refused:
        console.print(f"variant {refusal.variant} refused: {refusal.reason}", highlight=False, markup=False)
    _describe_speed(engine)


def _describe_speed(engine: NativeEngine) -> None:
    speed = engine.speed
    if speed is None:
        console.print("speed: not measured; local models run on xllamacpp (measure with: ebmeval engine measure)")
        return
    console.print(
        f"speed on {speed.model}, {speed.prompts} prompts, {speed.max_tokens} tokens each, "
        f"{speed.n_threads} threads ({speed.measured_at}):",
        highlight=False,
    )
    rows = [("native", speed.native), ("xllamacpp", speed.xllamacpp)]
    for name, figures in rows:
        if figures is None:
            console.print(f"  {name:<10} not installed", highlight=False)
            continue
        console.print(
            f"  {name:<10} prompt {figures.prompt_tokens_per_s:7.1f} tok/s  decode {figures.decode_tokens_per_s:6.1f}"
            f" tok/s  {figures.seconds:6.1f} s",
            highlight=False,
        )
    if engine.measured_faster:
        console.print("local models run on the native build; --model-arg engine=xllamacpp chooses the prebuilt engine")
    else:
        console.print(
            "the native build measured no faster: local models run on xllamacpp; "
            "--model-arg engine=native chooses the native build"
        )


def _record(engine: NativeEngine) -> dict[str, Any]:
    return {
        "binary": str(engine.binary),
        "build_seconds": engine.build_seconds,
        **engine.provenance(),
        "variant": engine.variant,
        "refused": [asdict(refusal) for refusal in engine.refused],
        "speed": None if engine.speed is None else asdict(engine.speed),
        "measured_faster": engine.measured_faster,
    }
