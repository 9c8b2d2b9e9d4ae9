"""``ebmeval engine build`` and ``ebmeval engine status``: the native local engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from ._common import JsonOption, app, console

engine_app = typer.Typer(
    help="Compile llama.cpp for this CPU, used by the local models once built.", no_args_is_help=True
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
    """Compile llama.cpp's server with this CPU's instructions, verify it, and use it for local models."""
    from ..models._engine import EngineBuildError, build_native_engine, engines_dir

    if not as_json:
        console.print(f"compiling llama.cpp for this CPU (log: {engines_dir() / 'build.log'}) …")
    try:
        engine = build_native_engine(archive=source, jobs=jobs, keep_build=keep_build)
    except EngineBuildError as exc:
        console.print(f"[bold red]error:[/] {exc}", highlight=False)
        raise typer.Exit(1) from None
    if as_json:
        print(json.dumps(_record(engine.binary, engine.provenance(), engine.build_seconds)))
        return
    console.print(f"built {engine.provenance()['engine']} in {engine.build_seconds:.0f} s: {engine.binary}")
    console.print(f"instructions: {engine.system_info or 'not reported'}")
    console.print("local models now run on it; --model-arg engine=xllamacpp chooses the prebuilt engine")
    _note_gain(engine.cpu_features)


@engine_app.command("status")
def status(as_json: JsonOption = False) -> None:
    """Show which engine local models run on, and the native build if there is one."""
    from ..models._engine import cpu_features, load_native_engine, native_dir

    engine = load_native_engine()
    if as_json:
        record = None if engine is None else _record(engine.binary, engine.provenance(), engine.build_seconds)
        print(json.dumps({"default_engine": "xllamacpp" if engine is None else "native", "native": record}))
        return
    if engine is None:
        built = (native_dir() / "engine.json").exists()
        reason = "built for another CPU" if built else "not built"
        console.print(f"native engine: {reason}; local models run on xllamacpp (build one with: ebmeval engine build)")
        console.print(f"this CPU: {' '.join(cpu_features()) or 'unknown'}")
        return
    console.print(f"native engine: {engine.provenance()['engine']} at {engine.binary}")
    console.print(f"built {engine.built_at} in {engine.build_seconds:.0f} s from {engine.source}")
    console.print(f"instructions: {engine.system_info or 'not reported'}")
    console.print("local models run on it by default; --model-arg engine=xllamacpp chooses the prebuilt engine")
    _note_gain(engine.cpu_features)


def _note_gain(features: tuple[str, ...]) -> None:
    from ..models._engine import features_beyond_prebuilt

    extra = features_beyond_prebuilt(features)
    if extra:
        console.print(f"this CPU has {' '.join(extra)}, which the prebuilt engine does not use")
    else:
        console.print(
            "note: this CPU has no instructions beyond the prebuilt engine's (AVX2), so expect little or no gain"
        )


def _record(binary: Path, provenance: dict[str, Any], build_seconds: float) -> dict[str, Any]:
    return {"binary": str(binary), "build_seconds": build_seconds, **provenance}
