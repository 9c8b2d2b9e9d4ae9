"""A llama.cpp server compiled on this machine for this CPU: the ``native`` local engine.

The prebuilt ``xllamacpp`` wheel targets a common instruction set (AVX2 on x86), so a CPU
with AVX-512, VNNI or AMX runs below its speed. ``build_native_engine`` compiles
llama.cpp's ``llama-server`` from the llama.cpp tree inside the ``llama-cpp-python`` sdist
on PyPI, in the :class:`BuildVariant` s this CPU advertises, fastest first (``native``:
``-march=native``, AMX included; ``avx512`` without AMX; ``avx2``, the prebuilt wheel's
set). Each is checked before the next is tried: it must start and answer a chat request
with the bundled SmolLM2 model correctly. The first that does is installed with its
record, ``<cache>/engines/native/engine.json``, which also says why the variants before
it were refused. ``load_native_engine`` finds that build again, but only for the CPU it
was built on. ``start_native_server`` runs the binary as a child process on a loopback
port; the object it returns answers chat requests like an ``xllamacpp.Server`` does.
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import httpx

from .._util.errors import EbmevalError, MissingDependencyError
from ._cache import default_cache_dir
from ._engine_speed import SpeedCheck

if TYPE_CHECKING:
    from ._local_files import LocalModelFile

SOURCE_PACKAGE = "llama-cpp-python"
SOURCE_VERSION = "0.3.36"
"""The ``llama-cpp-python`` sdist whose vendored llama.cpp tree is compiled (pinned, so a build is repeatable)."""

COMMON_CMAKE_OPTIONS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_TOOLS=ON",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_CURL=OFF",
)
"""Options of every variant: a static server, nothing downloaded."""

CPU_FEATURES = (
    "sse3",
    "ssse3",
    "avx",
    "avx2",
    "f16c",
    "fma",
    "bmi2",
    "avx_vnni",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512vbmi",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
)
"""The x86 feature flags (as ``/proc/cpuinfo`` names them) that llama.cpp's CPU kernels use."""

PREBUILT_FEATURES = ("sse3", "ssse3", "avx", "avx2", "f16c", "fma", "bmi2")
"""What the prebuilt ``xllamacpp`` wheel is compiled for (its ``get_system_info()``)."""

VERIFY_QUESTION = "Continue the sequence: 1, 2, 3, 4, 5,"
VERIFY_ANSWER = "6, 7, 8"
"""A build must answer :data:`VERIFY_QUESTION` with text holding this, not just any text: a kernel that
computes wrongly answers nonsense. SmolLM2-135M answers ``1, 2, 3, 4, 5, 6, 7, 8, `` on ``xllamacpp`` and
on correct native builds (it does not know the capital of France)."""

_LISTENING = re.compile(r"listening on (http://\S+)")


@dataclass(frozen=True)
class BuildVariant:
    """One instruction set to compile llama.cpp for."""

    name: str
    instruction_options: tuple[str, ...]
    """The cmake options choosing the instructions, added to :data:`COMMON_CMAKE_OPTIONS`."""

    @property
    def cmake_options(self) -> tuple[str, ...]:
        """Every cmake option of this variant."""
        return (*COMMON_CMAKE_OPTIONS, *self.instruction_options)


INSTRUCTION_OPTIONS = (
    "AVX", "AVX2", "FMA", "F16C", "BMI2", "AVX512", "AVX512_VNNI", "AVX512_BF16", "AVX512_VBMI",
    "AMX_TILE", "AMX_INT8", "AMX_BF16",
)  # fmt: skip
"""llama.cpp's ``GGML_*`` instruction options; every variant sets each, since variants share a build directory."""

AMX_COMPILER_FLAGS = "-fno-dse"
"""Compiler flags of every variant on a CPU with AMX (the same in all, so a variant recompiles only the CPU backend).

GCC 12's RTL dead-store elimination removes the stores that fill the AMX tile configuration
before ``_tile_loadconfig`` (it does not see that ``ldtilecfg`` reads it), so ``-O3`` builds
load a garbage configuration and die of SIGSEGV at their first matrix product
(``docs/performance.md``). ``-fno-dse`` keeps the stores; compilers without the option ignore it.
"""


def _variant(name: str, *, native: bool, on: set[str], compiler_flags: str) -> BuildVariant:
    switches = [f"-DGGML_{option}={'ON' if option in on else 'OFF'}" for option in INSTRUCTION_OPTIONS]
    flags = (f"-DCMAKE_C_FLAGS={compiler_flags}", f"-DCMAKE_CXX_FLAGS={compiler_flags}")
    return BuildVariant(name, (f"-DGGML_NATIVE={'ON' if native else 'OFF'}", *switches, *flags))


def build_variants(features: Sequence[str]) -> tuple[BuildVariant, ...]:
    """The variants worth trying on a CPU with ``features``, fastest first.

    ``native`` (``-march=native``: everything the CPU has, AMX included; every variant
    with :data:`AMX_COMPILER_FLAGS` where the CPU has AMX); then, where the CPU has AVX-512
    F/BW/VL, ``avx512`` with the VNNI, BF16 and VBMI extensions it has and AMX off; then,
    where it has AVX2, FMA and F16C, ``avx2``, the prebuilt wheel's set. Later variants are
    built only when the ones before did not start or answered wrongly.
    """
    have = set(features)
    flags = AMX_COMPILER_FLAGS if "amx_tile" in have else ""
    variants = [_variant("native", native=True, on=set(), compiler_flags=flags)]
    avx2 = {"AVX", "AVX2", "FMA", "F16C"} | ({"BMI2"} if "bmi2" in have else set())
    if {"avx512f", "avx512bw", "avx512vl"} <= have:
        extensions = {"avx512_vnni": "AVX512_VNNI", "avx512_bf16": "AVX512_BF16", "avx512vbmi": "AVX512_VBMI"}
        on = avx2 | {"AVX512"} | {option for feature, option in extensions.items() if feature in have}
        variants.append(_variant("avx512", native=False, on=on, compiler_flags=flags))
    if {"avx", "avx2", "fma", "f16c"} <= have:
        variants.append(_variant("avx2", native=False, on=avx2, compiler_flags=flags))
    return tuple(variants)


@dataclass(frozen=True)
class RefusedVariant:
    """A variant that was built but not installed, and why."""

    variant: str
    reason: str
    """What went wrong, e.g. ``the built server did not start: … (exit status -11, SIGSEGV)``."""
    log_tail: str = ""
    """The last lines the binary wrote before it failed."""


class EngineBuildError(EbmevalError):
    """Compiling or verifying the native engine failed; the message names the log to read."""


class VerificationError(EngineBuildError):
    """A built binary did not start, or did not answer correctly."""

    def __init__(self, reason: str, log_tail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.log_tail = log_tail


class ServerStartError(RuntimeError):
    """``llama-server`` exited, or was not ready in time; the end of its log is kept."""

    def __init__(self, returncode: int | None, log_tail: str) -> None:
        status = "not ready in time" if returncode is None else f"exit status {exit_status(returncode)}"
        super().__init__(f"llama-server did not become ready ({status}): {log_tail}")
        self.status = status
        self.log_tail = log_tail


def exit_status(returncode: int) -> str:
    """``returncode`` as people read it: ``1``, or ``-11 (SIGSEGV)`` for a process killed by a signal."""
    if returncode >= 0:
        return str(returncode)
    try:
        return f"{returncode} ({signal.Signals(-returncode).name})"
    except ValueError:
        return str(returncode)


@dataclass(frozen=True)
class NativeEngine:
    """A verified ``llama-server`` build and what it was built from."""

    binary: Path
    llama_cpp_version: str
    """What ``llama-server --version`` says, e.g. ``1 (1a2b3c4)``."""
    source: str
    """The sdist the llama.cpp tree came from, e.g. ``llama-cpp-python 0.3.36``."""
    cmake_options: tuple[str, ...]
    cpu_features: tuple[str, ...]
    """Features of the CPU it was built on; the build is used only on a CPU with the same."""
    machine: str
    system_info: str
    """llama.cpp's own account of the instructions compiled in (its ``system_info`` line)."""
    build_seconds: float
    built_at: str
    verified_reply: str = field(default="")
    """What the bundled SmolLM2 model answered when the build was checked."""
    variant: str = "native"
    """The :class:`BuildVariant` installed."""
    refused: tuple[RefusedVariant, ...] = ()
    """The faster variants tried before it, and why each was not installed."""
    speed: SpeedCheck | None = None
    """This build against ``xllamacpp`` on fixed prompts; ``None`` until measured."""

    @property
    def measured_faster(self) -> bool:
        """Whether the speed check found this build faster than ``xllamacpp`` (``False`` when unmeasured)."""
        return self.speed is not None and self.speed.native_faster

    def provenance(self) -> dict[str, Any]:
        """What a run records about the engine: version, variant, source, flags and CPU."""
        name = "native" if self.variant == "native" else f"native/{self.variant}"
        return {
            "engine": f"llama.cpp {name} {self.llama_cpp_version}",
            "source": self.source,
            "cmake_options": list(self.cmake_options),
            "cpu_features": list(self.cpu_features),
            "system_info": self.system_info,
        }


def engines_dir() -> Path:
    """``<cache>/engines``: where compiled engines live."""
    return default_cache_dir() / "engines"


def native_dir() -> Path:
    """The installed native build: ``llama-server`` and its ``engine.json``."""
    return engines_dir() / "native"


def cpu_features(cpuinfo: str | None = None) -> tuple[str, ...]:
    """The :data:`CPU_FEATURES` this CPU has, in that order (empty where ``/proc/cpuinfo`` is absent).

    Args:
        cpuinfo: Text of ``/proc/cpuinfo``; read from the system when ``None``.
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ()
    flags: set[str] = set()
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "flags":
            flags = set(value.split())
            break
    # /proc/cpuinfo spells SSE3 "pni".
    if "pni" in flags:
        flags.add("sse3")
    return tuple(name for name in CPU_FEATURES if name in flags)


def kernel_grants_amx() -> bool | None:
    """Whether the kernel offers AMX tile data to processes (``arch_prctl(ARCH_GET_XCOMP_SUPP)``, bit 18).

    A CPU may advertise ``amx_tile`` while the kernel or hypervisor does not save tile state;
    code compiled with AMX then cannot run. ``None`` where this cannot be asked (not x86-64 Linux).
    """
    if sys.platform != "linux" or platform.machine() != "x86_64":
        return None
    supported = ctypes.c_uint64(0)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(_SYS_ARCH_PRCTL, _ARCH_GET_XCOMP_SUPP, ctypes.byref(supported)) != 0:
        return False
    return bool(supported.value >> _XFEATURE_XTILEDATA & 1)


_SYS_ARCH_PRCTL = 158
_ARCH_GET_XCOMP_SUPP = 0x1021
_XFEATURE_XTILEDATA = 18


def features_beyond_prebuilt(features: Sequence[str]) -> tuple[str, ...]:
    """The ``features`` the prebuilt wheel does not use; a native build can only gain where there are some."""
    return tuple(name for name in features if name not in PREBUILT_FEATURES)


def load_native_engine(directory: Path | None = None, *, features: Sequence[str] | None = None) -> NativeEngine | None:
    """The native build recorded in ``directory``, or ``None`` if it cannot run here.

    ``None`` when there is no record, the binary is missing or not executable, or it was
    built on a CPU with other features (``-march=native`` code may not run elsewhere).

    Args:
        directory: Where the build is installed; :func:`native_dir` when ``None``.
        features: This CPU's features; read from the system when ``None``.
    """
    directory = directory if directory is not None else native_dir()
    try:
        record = json.loads((directory / "engine.json").read_text(encoding="utf-8"))
        speed = record.get("speed")
        engine = NativeEngine(
            binary=directory / "llama-server",
            llama_cpp_version=str(record["llama_cpp_version"]),
            source=str(record["source"]),
            cmake_options=tuple(record["cmake_options"]),
            cpu_features=tuple(record["cpu_features"]),
            machine=str(record["machine"]),
            system_info=str(record["system_info"]),
            build_seconds=float(record["build_seconds"]),
            built_at=str(record["built_at"]),
            verified_reply=str(record.get("verified_reply", "")),
            variant=str(record.get("variant", "native")),
            refused=tuple(RefusedVariant(**refusal) for refusal in record.get("refused", ())),
            speed=None if speed is None else SpeedCheck.from_record(speed),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    here = tuple(features) if features is not None else cpu_features()
    if engine.cpu_features != here or engine.machine != platform.machine():
        return None
    if not os.access(engine.binary, os.X_OK):
        return None
    return engine


def configure_command(source: Path, build: Path, variant: BuildVariant) -> list[str]:
    """The ``cmake`` line that configures ``build`` from the llama.cpp tree at ``source`` for ``variant``."""
    return ["cmake", "-S", str(source), "-B", str(build), *variant.cmake_options]


def compile_command(build: Path, jobs: int) -> list[str]:
    """The ``cmake`` line that compiles only the ``llama-server`` target with ``jobs`` processes."""
    return ["cmake", "--build", str(build), "--target", "llama-server", "-j", str(jobs)]


def download_command(dest: Path, version: str = SOURCE_VERSION) -> list[str]:
    """The ``pip`` line that fetches the ``llama-cpp-python`` sdist (no wheel, no dependencies) into ``dest``."""
    return [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--no-binary",
        ":all:",
        f"{SOURCE_PACKAGE}=={version}",
        "-d",
        str(dest),
    ]


Runner = Callable[[list[str], IO[str]], None]
"""Runs one command line, its output going to the given log; raises ``EngineBuildError`` on failure."""


def run_logged(command: list[str], log: IO[str]) -> None:
    """Run ``command`` with stdout and stderr appended to ``log``.

    Raises:
        EngineBuildError: The program is missing or exited non-zero.
    """
    log.write(f"$ {' '.join(command)}\n")
    log.flush()
    try:
        completed = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False)
    except FileNotFoundError:
        needs = "the native engine needs cmake and a C++ compiler"
        raise EngineBuildError(f"{command[0]} is not installed; {needs}") from None
    if completed.returncode != 0:
        raise EngineBuildError(f"{' '.join(command[:3])} … failed with exit status {completed.returncode}")


def extract_llama_cpp(archive: Path, dest: Path) -> Path:
    """Unpack the sdist ``archive`` into ``dest``; return its ``vendor/llama.cpp`` tree.

    Raises:
        EngineBuildError: The archive holds no llama.cpp tree.
    """
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    trees = sorted(dest.glob("*/vendor/llama.cpp/CMakeLists.txt"))
    if not trees:
        raise EngineBuildError(f"{archive.name} holds no vendor/llama.cpp tree")
    return trees[0].parent


def _reusable_build_dir(build: Path, source: Path) -> None:
    """Remove ``build`` if it was configured from another source tree (cmake refuses to mix them)."""
    cache = build / "CMakeCache.txt"
    if not cache.exists():
        return
    for line in cache.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("CMAKE_HOME_DIRECTORY:"):
            if Path(line.partition("=")[2]) != source:
                shutil.rmtree(build)
            return


Verifier = Callable[[Path, Path], tuple[str, str, str]]
"""``(binary, model) -> (version, system_info, reply)``; raises ``VerificationError``."""
Measurer = Callable[[Path], SpeedCheck]
"""Times a built ``llama-server`` against ``xllamacpp``."""


def build_native_engine(
    *,
    archive: Path | None = None,
    jobs: int | None = None,
    keep_build: bool = False,
    verify_model: Path | None = None,
    variants: Sequence[BuildVariant] | None = None,
    run: Runner = run_logged,
    verify: Verifier | None = None,
    measure: Measurer | None = None,
    log_path: Path | None = None,
) -> NativeEngine:
    """Compile ``llama-server`` for this CPU, check it, time it, and install it as the native engine.

    The variants are compiled in turn in one directory under ``<cache>/engines/.build``
    (they differ only in the CPU backend's flags, so a later variant recompiles only that),
    until one starts and answers :data:`VERIFY_QUESTION` correctly; that one is timed
    against ``xllamacpp`` (:mod:`._engine_speed`) and installed with the record of the
    variants refused before it. A build directory left
    there by an earlier build (``keep_build``) is reused, so only what changed is recompiled.

    Args:
        archive: A ``llama-cpp-python`` sdist already on disk; downloaded with pip when ``None``.
        jobs: Compiler processes; all available cores when ``None``.
        keep_build: Keep the unpacked tree and build directories for a faster rebuild.
        verify_model: GGUF file the build is checked with; the bundled SmolLM2 when ``None``.
        variants: What to try, in order; :func:`build_variants` of this CPU when ``None``.
        run: Runs each command line (a test double in unit tests).
        verify: Checks a built binary; :func:`verify_binary` when ``None``.
        measure: Times the verified binary; :func:`measure_build` when ``None``.
        log_path: Where the compiler's output goes; ``<cache>/engines/build.log`` when ``None``.

    Raises:
        EngineBuildError: Compiling failed, or no variant started and answered correctly; the
            message names the log and, for each variant, why it was refused.
    """
    from .providers.llamacpp import available_cpus

    staging = engines_dir() / ".build"
    staging.mkdir(parents=True, exist_ok=True)
    log_path = log_path if log_path is not None else engines_dir() / "build.log"
    jobs = jobs or available_cpus()
    features = cpu_features()
    variants = tuple(variants) if variants is not None else build_variants(features)
    model = verify_model if verify_model is not None else _smollm2()
    start = time.monotonic()
    with log_path.open("w", encoding="utf-8") as log:
        try:
            archive = _source_archive(archive, staging, run, log)
            source = extract_llama_cpp(archive, staging)
            site = _BuildSite(source, staging / "build", jobs, run, log)
            verified = site.first_working(variants, verify or verify_binary, model, features)
            build_seconds = time.monotonic() - start
            speed = (measure or measure_build)(verified.binary)
        except EngineBuildError as exc:
            raise EngineBuildError(f"{exc} (see {log_path})") from None
    engine = verified.record(archive, features, build_seconds, speed)
    _install(verified.binary, engine)
    if not keep_build:
        shutil.rmtree(staging, ignore_errors=True)
    return engine


@dataclass(frozen=True)
class _VerifiedBuild:
    """The first variant that started and answered correctly, what it said, and the variants refused before it."""

    variant: BuildVariant
    binary: Path
    version: str
    system_info: str
    reply: str
    refused: tuple[RefusedVariant, ...]

    def record(self, archive: Path, features: tuple[str, ...], build_seconds: float, speed: SpeedCheck) -> NativeEngine:
        """This build's record as installed: compiled from ``archive`` on a CPU with ``features``."""
        return NativeEngine(
            binary=native_dir() / "llama-server",
            llama_cpp_version=self.version,
            source=f"{SOURCE_PACKAGE} {archive.name.removeprefix('llama_cpp_python-').removesuffix('.tar.gz')}",
            cmake_options=self.variant.cmake_options,
            cpu_features=features,
            machine=platform.machine(),
            system_info=self.system_info,
            build_seconds=round(build_seconds, 1),
            built_at=datetime.now(UTC).isoformat(timespec="seconds"),
            verified_reply=self.reply,
            variant=self.variant.name,
            refused=self.refused,
            speed=speed,
        )


@dataclass(frozen=True)
class _BuildSite:
    """Where and how every variant is compiled: from ``source`` into one ``build`` directory, logged to ``log``."""

    source: Path
    build: Path
    """One directory for all variants: another variant recompiles only the CPU backend."""
    jobs: int
    run: Runner
    log: IO[str]

    def compile(self, variant: BuildVariant) -> Path:
        """Configure and compile ``variant``; the ``llama-server`` binary it produced.

        Raises:
            EngineBuildError: A command failed, or the build produced no binary.
        """
        self.log.write(f"## variant {variant.name}\n")
        _reusable_build_dir(self.build, self.source)
        self.run(configure_command(self.source, self.build, variant), self.log)
        self.run(compile_command(self.build, self.jobs), self.log)
        built = self.build / "bin" / "llama-server"
        if not built.exists():
            raise EngineBuildError(f"the build produced no {built}")
        return built

    def first_working(
        self, variants: Sequence[BuildVariant], verify: Verifier, model: Path, features: Sequence[str]
    ) -> _VerifiedBuild:
        """Compile ``variants`` in turn until one passes ``verify`` with ``model``; each refusal is logged.

        Raises:
            EngineBuildError: A build failed, or no variant passed; the message says why each was refused.
        """
        refused: list[RefusedVariant] = []
        for variant in variants:
            built = self.compile(variant)
            try:
                version, system_info, reply = verify(built, model)
            except VerificationError as exc:
                refusal = RefusedVariant(variant.name, _with_amx_state(exc.reason, variant, features), exc.log_tail)
                refused.append(refusal)
                self.log.write(f"## variant {variant.name} refused: {refusal.reason}\n{refusal.log_tail}\n")
                continue
            return _VerifiedBuild(variant, built, version, system_info, reply, tuple(refused))
        reasons = "; ".join(f"{refusal.variant}: {refusal.reason}" for refusal in refused)
        raise EngineBuildError(f"no variant of the build started and answered correctly ({reasons})")


def _with_amx_state(reason: str, variant: BuildVariant, features: Sequence[str]) -> str:
    """``reason``, with whether the kernel grants AMX where the variant may hold AMX code (``features`` has AMX)."""
    if variant.name != "native" or "amx_tile" not in features:
        return reason
    granted = kernel_grants_amx()
    return (
        reason if granted is None else f"{reason}; the kernel {'grants' if granted else 'does not grant'} AMX tile data"
    )


def _source_archive(archive: Path | None, staging: Path, run: Runner, log: IO[str]) -> Path:
    """``archive``, or the pinned sdist downloaded with pip into ``staging``."""
    if archive is not None:
        return archive
    download = staging / "download"
    shutil.rmtree(download, ignore_errors=True)
    download.mkdir()
    run(download_command(download), log)
    found = sorted(download.glob("llama_cpp_python-*.tar.gz"))
    if not found:
        raise EngineBuildError(f"pip downloaded no {SOURCE_PACKAGE} sdist")
    return found[0]


def measure_build(binary: Path) -> SpeedCheck:
    """Time ``binary`` against ``xllamacpp`` on :func:`speed_check_model`, all cores, as ``local`` runs.

    Raises:
        EngineBuildError: A server did not start or load the model, or answered without timings.
    """
    from ._engine_speed import compare_engines
    from .providers.llamacpp import ServerSettings, available_cpus, start_llama_server

    file = speed_check_model()
    threads = available_cpus()
    try:
        native = start_native_server(binary, file.path, n_ctx=2048, n_threads=threads)
    except ServerStartError as exc:
        raise EngineBuildError(f"the built server did not start for the speed check: {exc}") from None
    try:
        try:
            prebuilt = start_llama_server(file.path, ServerSettings(n_ctx=2048, n_threads=threads))
        except MissingDependencyError:
            prebuilt = None
        return compare_engines(native, prebuilt, model=file.name, n_threads=threads)
    except EbmevalError as exc:
        raise EngineBuildError(f"the speed check failed: {exc}") from None
    finally:
        native.close()


def speed_check_model() -> LocalModelFile:
    """The default local model, or the bundled SmolLM2 where the default is not installed."""
    from ._local_files import resolve_local_model

    default = resolve_local_model("")
    try:
        default.path  # noqa: B018 - locating the file is the check
    except MissingDependencyError:
        return resolve_local_model("smollm2")
    return default


def record_speed(speed: SpeedCheck, directory: Path | None = None) -> NativeEngine:
    """Store a new speed check in the installed engine's record; the engine as loaded again.

    Raises:
        EngineBuildError: No native engine for this CPU is installed there.
    """
    directory = directory if directory is not None else native_dir()
    engine = load_native_engine(directory)
    if engine is None:
        raise EngineBuildError("no native engine for this CPU is installed; build one with: ebmeval engine build")
    updated = replace(engine, speed=speed)
    _write_record(directory, updated)
    return updated


def _smollm2() -> Path:
    from ._local_files import smollm2_path

    return smollm2_path()


def _install(built: Path, engine: NativeEngine) -> None:
    """Copy the binary beside its record, replacing any earlier build atomically."""
    final = native_dir()
    staged = final.with_name(f".native-{secrets.token_hex(4)}")
    staged.mkdir(parents=True)
    shutil.copy2(built, staged / "llama-server")
    _write_record(staged, engine)
    if final.exists():
        old = final.with_name(f".old-{secrets.token_hex(4)}")
        final.rename(old)
        staged.rename(final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        staged.rename(final)


def _write_record(directory: Path, engine: NativeEngine) -> None:
    """Write ``engine.json`` (everything but the binary's path) in ``directory``, atomically."""
    record = {k: v for k, v in asdict(engine).items() if k != "binary"}
    staged = directory / f".engine-{secrets.token_hex(4)}.json"
    staged.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    staged.replace(directory / "engine.json")


def binary_version(binary: Path) -> str:
    """What ``binary --version`` reports, e.g. ``1 (1a2b3c4)``.

    Raises:
        EngineBuildError: The binary does not run.
    """
    try:
        completed = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EngineBuildError(f"{binary} does not run: {exc}") from None
    text = completed.stdout + completed.stderr
    match = re.search(r"version:\s*(.+)", text)
    if completed.returncode != 0 or match is None:
        raise EngineBuildError(f"{binary} --version failed: {text.strip()[-500:]}")
    return match.group(1).strip()


def verify_binary(binary: Path, model: Path) -> tuple[str, str, str]:
    """Run ``binary`` on ``model`` and ask :data:`VERIFY_QUESTION` for a short greedy reply.

    Returns:
        The version, llama.cpp's ``system_info`` line, and the reply text.

    Raises:
        VerificationError: The binary did not run or start, or its reply is empty or lacks
            :data:`VERIFY_ANSWER` (wrong arithmetic in a kernel shows up as nonsense).
    """
    try:
        version = binary_version(binary)
    except EngineBuildError as exc:
        raise VerificationError(str(exc)) from None
    try:
        # Trace verbosity makes llama.cpp log its system_info line (the instructions compiled in).
        server = start_native_server(
            binary, model, n_ctx=512, n_threads=1, startup_timeout=120, extra_args=("--verbosity", "4")
        )
    except ServerStartError as exc:
        raise VerificationError(f"the built server did not start ({exc.status})", _last_lines(exc.log_tail)) from None
    try:
        data = server.handle_chat_completions(
            {
                "messages": [{"role": "user", "content": VERIFY_QUESTION}],
                "max_tokens": 24,
                "temperature": 0.0,
                "seed": 1,
            }
        )
        system_info = server.system_info()
    except RuntimeError as exc:
        raise VerificationError(f"the built server stopped answering: {exc}", _last_lines(server.log_text())) from None
    finally:
        server.close()
    try:
        reply = str(data["choices"][0]["message"]["content"])
    except (KeyError, IndexError, TypeError):
        raise VerificationError(f"the built server answered without a reply: {str(data)[:500]}") from None
    if VERIFY_ANSWER not in reply.lower():
        raise VerificationError(f"the built server answered {reply.strip()[:200]!r}, without {VERIFY_ANSWER!r}")
    return version, system_info, reply


def _last_lines(text: str, count: int = 8) -> str:
    return "\n".join(text.strip().splitlines()[-count:])


class NativeServer:
    """A running ``llama-server`` child process, used like an ``xllamacpp.Server``.

    Dropping the last reference stops the process (as dropping an ``xllamacpp.Server``
    frees the model), so calls still running keep it alive until they return.
    """

    def __init__(self, process: subprocess.Popen[bytes], log: IO[str], address: str, api_key: str | None) -> None:
        self._process = process
        self._log = log
        self.listening_address = address
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(base_url=address, headers=headers, timeout=None)

    def handle_chat_completions(self, request: dict[str, Any]) -> dict[str, Any]:
        """POST ``request`` to ``/v1/chat/completions``; the JSON answer, errors included.

        Raises:
            RuntimeError: The server did not answer with JSON.
        """
        try:
            response = self._client.post("/v1/chat/completions", json=request)
            data = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise RuntimeError(f"the native llama.cpp server did not answer: {exc}") from None
        if not isinstance(data, dict):
            raise RuntimeError(f"the native llama.cpp server answered {str(data)[:200]}")
        return data

    def log_text(self) -> str:
        """Everything the server has logged so far."""
        self._log.seek(0)
        return self._log.read()

    def system_info(self) -> str:
        """llama.cpp's ``system_info`` line from the server's log (empty if not logged)."""
        for line in self.log_text().splitlines():
            if "system_info" in line:
                return line.partition("system_info:")[2].strip() or line.strip()
        return ""

    def close(self) -> None:
        """Stop the process (SIGTERM, then SIGKILL after 10 s) and close the log."""
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._client.close()
        self._log.close()

    def __del__(self) -> None:
        if getattr(self, "_process", None) is not None and not self._log.closed:
            self.close()


def server_command(
    binary: Path,
    model: Path,
    *,
    n_ctx: int,
    n_parallel: int,
    n_threads: int,
    host: str,
    port: int,
    alias: str | None,
) -> list[str]:
    """The ``llama-server`` command line: ``n_parallel`` slots of ``n_ctx`` tokens each.

    The KV cache is split per slot (``--no-kv-unified``), as ``xllamacpp`` does, so a
    request gets the same window on either engine.
    """
    command = [str(binary), "--model", str(model), "--ctx-size", str(n_ctx * n_parallel), "--no-kv-unified"]
    command += ["--parallel", str(n_parallel), "--threads", str(n_threads), "--threads-batch", str(n_threads)]
    command += ["--host", host, "--port", str(port), "--no-webui"]
    if alias:
        command += ["--alias", alias]
    return command


def start_native_server(
    binary: Path,
    model: Path,
    *,
    n_ctx: int,
    n_parallel: int = 1,
    n_threads: int = 1,
    host: str = "127.0.0.1",
    port: int = 0,
    api_key: str | None = None,
    alias: str | None = None,
    startup_timeout: float = 300.0,
    extra_args: Sequence[str] = (),
) -> NativeServer:
    """Start ``binary`` on ``model`` and wait until it has loaded the model.

    Port 0 picks a free port. The API key travels in the environment, not on the command line.
    ``extra_args`` are appended to :func:`server_command`'s line.

    Raises:
        ServerStartError: The server exited or was not ready within ``startup_timeout`` seconds;
            it holds the end of its log.
    """
    command = server_command(
        binary, model, n_ctx=n_ctx, n_parallel=n_parallel, n_threads=n_threads, host=host, port=port, alias=alias
    )
    command += extra_args
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLAMA_")}
    if api_key:
        env["LLAMA_API_KEY"] = api_key
    log = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + startup_timeout
    address: str | None = None
    try:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                break
            if address is None:
                log.seek(0)
                match = _LISTENING.search(log.read())
                address = match.group(1).rstrip("/") if match else None
            if address is not None and _healthy(address):
                return NativeServer(process, log, address, api_key)
            time.sleep(0.05)
    except BaseException:
        process.kill()
        process.wait()
        log.close()
        raise
    exited = process.poll() is not None
    if not exited:
        process.kill()
    process.wait()
    log.seek(0)
    tail = log.read().strip()[-2000:]
    log.close()
    raise ServerStartError(process.returncode if exited else None, tail)


def _healthy(address: str) -> bool:
    try:
        return httpx.get(f"{address}/health", timeout=5).status_code == 200
    except httpx.TransportError:
        return False
