"""Unit tests of the native engine's build logic, caching, selection and process handling.

The compiler and ``llama-server`` are replaced here by doubles (a recording runner and a
small Python script speaking llama-server's protocol); ``test_engine_native.py`` runs
the real build.
"""

import dataclasses
import io
import json
import os
import platform
import stat
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import IO

import pytest

from ebmeval._util.errors import ConfigError, EbmevalError
from ebmeval.models._engine import (
    COMMON_CMAKE_OPTIONS,
    INSTRUCTION_OPTIONS,
    BuildVariant,
    EngineBuildError,
    NativeServer,
    ServerStartError,
    VerificationError,
    build_native_engine,
    build_variants,
    compile_command,
    configure_command,
    cpu_features,
    download_command,
    engines_dir,
    features_beyond_prebuilt,
    kernel_grants_amx,
    load_native_engine,
    native_dir,
    record_speed,
    server_command,
    speed_check_model,
    start_native_server,
    verify_binary,
)
from ebmeval.models._engine_speed import SpeedCheck, Throughput, compare_engines
from ebmeval.models.providers.llamacpp import LlamaCppModel, local, select_engine
from tests.models import requires_small_model

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
flags\t\t: fpu sse2 pni ssse3 fma avx f16c avx2 bmi2 avx512f avx512bw avx512vl avx512_vnni amx_tile amx_int8 xsave
processor\t: 1
flags\t\t: fpu
"""

FAKE_SERVER = """
import http.server, json, os, signal, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("version: 42 (abc1234)", file=sys.stderr)
    print("built with test", file=sys.stderr)
    sys.exit(0)
if os.environ.get("FAKE_FAIL"):
    print("error: failed to load model", file=sys.stderr, flush=True)
    sys.exit(1)
if os.path.exists(os.path.join(os.path.dirname(sys.argv[0]), "CRASH")):
    # what the AMX build did: it segfaulted right after the thread pool started
    print("llama threadpool init, n_threads = 1", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGSEGV)
key = os.environ.get("LLAMA_API_KEY")

class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        self.reply(200, {"status": "ok"})
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if key and self.headers.get("Authorization") != "Bearer " + key:
            return self.reply(401, {"error": {"message": "Invalid API Key", "type": "authentication_error"}})
        if body["messages"][0]["content"] == "too long":
            return self.reply(400, {"error": {"type": "exceed_context_size_error", "n_prompt_tokens": 900}})
        question = body["messages"][0]["content"]
        if question == "Continue the sequence: 1, 2, 3, 4, 5,":
            text = os.environ.get("FAKE_ANSWER", "1, 2, 3, 4, 5, 6, 7, 8, ")
        else:
            text = "args=" + " ".join(args)
        self.reply(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 2}})

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("main: system_info: n_threads = 1 | CPU : AVX2 = 1 | AVX512 = 1 |", file=sys.stderr, flush=True)
print(f"srv  main: listening on http://127.0.0.1:{server.server_address[1]}", file=sys.stderr, flush=True)
server.serve_forever()
"""


def fake_binary(path: Path) -> Path:
    """An executable that behaves like ``llama-server`` as far as the engine uses it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{sys.executable}\n{FAKE_SERVER}", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def fake_sdist(path: Path, version: str = "9.9.9") -> Path:
    """A ``llama-cpp-python`` sdist holding only the marker of a llama.cpp tree."""
    with tarfile.open(path, "w:gz") as tar:
        data = b"project(llama.cpp)\n"
        info = tarfile.TarInfo(f"llama_cpp_python-{version}/vendor/llama.cpp/CMakeLists.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path


class FakeToolchain:
    """Records each command; the compile step leaves a fake ``llama-server`` behind.

    A build directory configured with an option in ``crash_with`` gets a binary that
    answers ``--version`` but dies of SIGSEGV when started as a server.
    """

    def __init__(self, fail_on: str | None = None, crash_with: tuple[str, ...] = ()) -> None:
        self.commands: list[list[str]] = []
        self.fail_on = fail_on
        self.crash_with = crash_with
        self.crashing: set[str] = set()

    def __call__(self, command: list[str], log: IO[str]) -> None:
        self.commands.append(command)
        log.write("ran\n")
        if self.fail_on is not None and self.fail_on in command:
            raise EngineBuildError(f"{command[0]} failed")
        if "download" in command:
            fake_sdist(Path(command[command.index("-d") + 1]) / "llama_cpp_python-0.3.36.tar.gz", "0.3.36")
        if "-S" in command:
            directory = command[command.index("-B") + 1]
            if set(command) & set(self.crash_with):
                self.crashing.add(directory)
            else:
                self.crashing.discard(directory)
        if "--build" in command:
            build = command[command.index("--build") + 1]
            binary = fake_binary(Path(build) / "bin" / "llama-server")
            (binary.parent / "CRASH").unlink(missing_ok=True)
            if build in self.crashing:
                (binary.parent / "CRASH").touch()


def fake_verify(binary: Path, model: Path) -> tuple[str, str, str]:
    assert binary.exists() and model.name == "model.gguf"
    return "42 (abc1234)", "CPU : AVX2 = 1 | AVX512 = 1 |", "Paris"


def speed_check(native_seconds: float, prebuilt_seconds: float | None = 10.0) -> SpeedCheck:
    """A speed check in which the native build took ``native_seconds`` and xllamacpp ``prebuilt_seconds``."""
    prebuilt = None if prebuilt_seconds is None else Throughput(70.0, 15.0, prebuilt_seconds)
    return SpeedCheck("m", 2, 32, 4, Throughput(110.0, 16.0, native_seconds), prebuilt, "2026-11-25T00:00:00+00:00")


def fake_measure(binary: Path) -> SpeedCheck:
    assert binary.exists()
    return speed_check(8.0)


NATIVE_ONLY = (BuildVariant("native", ("-DGGML_NATIVE=ON",)),)


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test builds into a cache of its own."""
    monkeypatch.setenv("EBMEVAL_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF")
    return path


def test_cpu_features_reads_the_first_flags_line_in_a_fixed_order() -> None:
    assert cpu_features(CPUINFO) == (
        "sse3",
        "ssse3",
        "avx",
        "avx2",
        "f16c",
        "fma",
        "bmi2",
        "avx512f",
        "avx512bw",
        "avx512vl",
        "avx512_vnni",
        "amx_tile",
        "amx_int8",
    )
    assert cpu_features("processor : 0\n") == ()
    assert features_beyond_prebuilt(cpu_features(CPUINFO)) == (
        "avx512f",
        "avx512bw",
        "avx512vl",
        "avx512_vnni",
        "amx_tile",
        "amx_int8",
    )
    assert features_beyond_prebuilt(("sse3", "avx", "avx2", "fma")) == ()


def test_variants_are_the_instruction_sets_the_cpu_advertises_fastest_first() -> None:
    variants = {variant.name: variant for variant in build_variants(cpu_features(CPUINFO))}
    assert list(variants) == ["native", "avx512", "avx2"]
    native = variants["native"].instruction_options
    assert native[0] == "-DGGML_NATIVE=ON" and all(o.endswith("=OFF") for o in native[1:] if o.startswith("-DGGML_"))
    # every variant sets every option: they share one build directory, whose cmake cache keeps old values
    for variant in variants.values():
        names = [option.partition("=")[0] for option in variant.instruction_options]
        assert names == [
            "-DGGML_NATIVE",
            *(f"-DGGML_{o}" for o in INSTRUCTION_OPTIONS),
            "-DCMAKE_C_FLAGS",
            "-DCMAKE_CXX_FLAGS",
        ]
        # on a CPU with AMX, GCC must keep the tile configuration's stores (and the flags are the same in all)
        assert variant.instruction_options[-2:] == ("-DCMAKE_C_FLAGS=-fno-dse", "-DCMAKE_CXX_FLAGS=-fno-dse")
    assert build_variants(("avx", "avx2", "fma", "f16c"))[0].instruction_options[-1] == "-DCMAKE_CXX_FLAGS="
    avx512 = set(variants["avx512"].instruction_options)
    assert {"-DGGML_NATIVE=OFF", "-DGGML_AVX512=ON", "-DGGML_AVX512_VNNI=ON", "-DGGML_BMI2=ON"} <= avx512
    # extensions this CPU lacks stay off, and AMX is off whatever the CPU has
    assert {"-DGGML_AVX512_BF16=OFF", "-DGGML_AVX512_VBMI=OFF", "-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF"} <= avx512
    assert "-DGGML_AVX512=OFF" not in avx512
    avx2 = set(variants["avx2"].instruction_options)
    assert {"-DGGML_NATIVE=OFF", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON", "-DGGML_AVX512=OFF"} <= avx2
    for variant in variants.values():
        assert variant.cmake_options == (*COMMON_CMAKE_OPTIONS, *variant.instruction_options)
    # /proc/cpuinfo spells VBMI "avx512vbmi", without the underscore of avx512_vnni and avx512_bf16
    wider = cpu_features(CPUINFO.replace("avx512_vnni", "avx512_vnni avx512vbmi avx512_bf16 avx512_vbmi2"))
    assert {"-DGGML_AVX512_VBMI=ON", "-DGGML_AVX512_BF16=ON"} <= set(build_variants(wider)[1].instruction_options)
    assert [v.name for v in build_variants(("sse3", "avx", "avx2", "f16c", "fma"))] == ["native", "avx2"]
    assert [v.name for v in build_variants(("sse3",))] == ["native"]


def test_command_lines_build_only_the_server_with_native_flags(tmp_path: Path) -> None:
    configure = configure_command(tmp_path / "src", tmp_path / "build", NATIVE_ONLY[0])
    assert configure[:5] == ["cmake", "-S", str(tmp_path / "src"), "-B", str(tmp_path / "build")]
    assert "-DGGML_NATIVE=ON" in configure and "-DCMAKE_BUILD_TYPE=Release" in configure
    # Nothing may be fetched from the network during the build.
    assert "-DLLAMA_USE_PREBUILT_UI=OFF" in configure and "-DLLAMA_CURL=OFF" in configure
    assert compile_command(tmp_path / "build", 2) == [
        "cmake",
        "--build",
        str(tmp_path / "build"),
        "--target",
        "llama-server",
        "-j",
        "2",
    ]
    download = download_command(tmp_path)
    assert download[:3] == [sys.executable, "-m", "pip"]
    assert download[3:] == [
        "download",
        "--no-deps",
        "--no-binary",
        ":all:",
        "llama-cpp-python==0.3.36",
        "-d",
        str(tmp_path),
    ]


def test_server_command_gives_each_slot_its_own_window(tmp_path: Path) -> None:
    command = server_command(
        tmp_path / "llama-server",
        tmp_path / "m.gguf",
        n_ctx=1024,
        n_parallel=4,
        n_threads=2,
        host="127.0.0.1",
        port=0,
        alias="m",
    )
    pairs = {flag: command[command.index(flag) + 1] for flag in command if flag.startswith("--")}
    assert pairs["--ctx-size"] == "4096" and pairs["--parallel"] == "4"
    assert pairs["--threads"] == pairs["--threads-batch"] == "2"
    assert pairs["--port"] == "0" and "--alias" in command and "--no-kv-unified" in command
    assert not any("key" in part for part in command)


def test_build_from_a_given_sdist_installs_a_verified_engine(tmp_path: Path, model_file: Path) -> None:
    toolchain = FakeToolchain()
    engine = build_native_engine(
        archive=fake_sdist(tmp_path / "llama_cpp_python-9.9.9.tar.gz"),
        jobs=3,
        verify_model=model_file,
        run=toolchain,
        verify=fake_verify,
        measure=fake_measure,
    )
    assert [c[1] for c in toolchain.commands] == ["-S", "--build"]  # no download
    source = engines_dir() / ".build" / "llama_cpp_python-9.9.9" / "vendor" / "llama.cpp"
    variant = build_variants(cpu_features())[0]
    assert toolchain.commands[0] == configure_command(source, engines_dir() / ".build" / "build", variant)
    assert toolchain.commands[1][-2:] == ["-j", "3"]
    assert engine.binary == native_dir() / "llama-server" and os.access(engine.binary, os.X_OK)
    assert engine.source == "llama-cpp-python 9.9.9" and engine.llama_cpp_version == "42 (abc1234)"
    assert engine.cmake_options == variant.cmake_options and engine.cpu_features == cpu_features()
    assert engine.verified_reply == "Paris" and engine.variant == "native" and engine.refused == ()
    assert engine.speed == speed_check(8.0) and engine.measured_faster
    assert not (engines_dir() / ".build").exists()
    assert (engines_dir() / "build.log").read_text(encoding="utf-8").count("ran") == 2
    assert load_native_engine() == engine


def test_build_downloads_the_pinned_sdist_and_can_keep_the_build_dir(model_file: Path) -> None:
    toolchain = FakeToolchain()
    engine = build_native_engine(
        verify_model=model_file, run=toolchain, verify=fake_verify, measure=fake_measure, keep_build=True
    )
    assert toolchain.commands[0][:4] == [sys.executable, "-m", "pip", "download"]
    assert engine.source == "llama-cpp-python 0.3.36"
    assert (engines_dir() / ".build" / "build" / "bin" / "llama-server").exists()


def test_a_failed_step_names_the_log_and_keeps_the_previous_engine(tmp_path: Path, model_file: Path) -> None:
    archive = fake_sdist(tmp_path / "llama_cpp_python-9.9.9.tar.gz")
    first = build_native_engine(
        archive=archive, verify_model=model_file, run=FakeToolchain(), verify=fake_verify, measure=fake_measure
    )
    with pytest.raises(EngineBuildError, match=r"cmake failed \(see .*build\.log\)"):
        build_native_engine(archive=archive, verify_model=model_file, run=FakeToolchain(fail_on="--build"))

    def refuse(binary: Path, model: Path) -> tuple[str, str, str]:
        raise EngineBuildError("the built server answered with empty text")

    with pytest.raises(EngineBuildError, match="empty text"):
        build_native_engine(
            archive=archive, verify_model=model_file, run=FakeToolchain(), verify=refuse, measure=fake_measure
        )
    assert load_native_engine() == first


def test_a_variant_that_crashes_at_start_is_skipped_and_the_next_installed(tmp_path: Path, model_file: Path) -> None:
    toolchain = FakeToolchain(crash_with=("-DGGML_NATIVE=ON",))
    engine = build_native_engine(
        archive=fake_sdist(tmp_path / "llama_cpp_python-9.9.9.tar.gz"),
        verify_model=model_file,
        variants=build_variants(cpu_features(CPUINFO)),
        run=toolchain,
        measure=fake_measure,
    )
    # native was built and refused; avx512 was built, verified (the real check) and installed; avx2 never built
    configured = [c for c in toolchain.commands if "-S" in c]
    assert [next(o for o in c if o.startswith("-DGGML_NATIVE")) for c in configured] == [
        "-DGGML_NATIVE=ON",
        "-DGGML_NATIVE=OFF",
    ]
    assert {c[c.index("-B") + 1] for c in configured} == {str(engines_dir() / ".build" / "build")}
    assert engine.variant == "avx512" and "-DGGML_AVX512=ON" in engine.cmake_options
    assert engine.verified_reply == "1, 2, 3, 4, 5, 6, 7, 8, "
    [refusal] = engine.refused
    assert refusal.variant == "native"
    assert refusal.reason.startswith("the built server did not start (exit status -11 (SIGSEGV))")
    # where the CPU has AMX, the reason says whether the kernel grants it (which -march=native code uses)
    granted = kernel_grants_amx()
    if "amx_tile" in cpu_features() and granted is not None:
        assert refusal.reason.endswith(f"the kernel {'grants' if granted else 'does not grant'} AMX tile data")
    else:
        assert "AMX" not in refusal.reason
    assert "llama threadpool init, n_threads = 1" in refusal.log_tail
    assert load_native_engine() == engine
    record = json.loads((native_dir() / "engine.json").read_text(encoding="utf-8"))
    assert record["variant"] == "avx512" and record["refused"][0]["reason"] == refusal.reason
    assert "variant native refused" in (engines_dir() / "build.log").read_text(encoding="utf-8")
    assert engine.provenance()["engine"] == "llama.cpp native/avx512 42 (abc1234)"


def test_the_speed_check_runs_the_default_local_model_or_smollm2() -> None:
    assert speed_check_model().name in {"qwen2.5-coder-1.5b-instruct-q4", "smollm2-135m-instruct-q4_1"}


def test_the_kernel_is_asked_whether_it_grants_amx() -> None:
    granted = kernel_grants_amx()
    if sys.platform == "linux" and platform.machine() == "x86_64":
        assert isinstance(granted, bool)
        # a kernel that grants tile data to processes says so in /proc/cpuinfo only if the CPU has it
        if "amx_tile" not in cpu_features():
            assert granted is False
    else:
        assert granted is None


def test_when_no_variant_starts_the_build_says_why_and_keeps_the_previous_engine(
    tmp_path: Path, model_file: Path
) -> None:
    archive = fake_sdist(tmp_path / "llama_cpp_python-9.9.9.tar.gz")
    first = build_native_engine(
        archive=archive, verify_model=model_file, run=FakeToolchain(), verify=fake_verify, measure=fake_measure
    )
    every = FakeToolchain(crash_with=("-DGGML_NATIVE=ON", "-DGGML_NATIVE=OFF"))
    variants = build_variants(cpu_features(CPUINFO))
    with pytest.raises(EngineBuildError) as raised:
        build_native_engine(archive=archive, verify_model=model_file, variants=variants, run=every)
    message = str(raised.value)
    assert message.startswith("no variant of the build started and answered correctly")
    for name in ("native", "avx512", "avx2"):
        assert f"{name}: the built server did not start (exit status -11 (SIGSEGV))" in message
    assert "build.log" in message
    assert load_native_engine() == first


def test_a_build_that_answers_wrongly_is_refused(
    tmp_path: Path, model_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_ANSWER", "lorem lorem lorem")
    with pytest.raises(VerificationError, match=r"answered 'lorem lorem lorem', without '6, 7, 8'"):
        verify_binary(fake_binary(tmp_path / "llama-server"), model_file)


def test_a_build_dir_from_another_source_tree_is_started_afresh(tmp_path: Path, model_file: Path) -> None:
    build = engines_dir() / ".build" / "build"
    build.mkdir(parents=True)
    (build / "CMakeCache.txt").write_text("CMAKE_HOME_DIRECTORY:INTERNAL=/elsewhere/llama.cpp\n", encoding="utf-8")
    (build / "stale.o").write_text("", encoding="utf-8")
    build_native_engine(
        archive=fake_sdist(tmp_path / "llama_cpp_python-9.9.9.tar.gz"),
        verify_model=model_file,
        run=FakeToolchain(),
        verify=fake_verify,
        measure=fake_measure,
        keep_build=True,
    )
    assert not (build / "stale.o").exists()


def test_an_sdist_without_llama_cpp_is_refused(tmp_path: Path, model_file: Path) -> None:
    archive = tmp_path / "llama_cpp_python-1.0.tar.gz"
    with tarfile.open(archive, "w:gz"):
        pass
    with pytest.raises(EngineBuildError, match="no vendor/llama.cpp tree"):
        build_native_engine(
            archive=archive, verify_model=model_file, run=FakeToolchain(), verify=fake_verify, measure=fake_measure
        )


def _install_record(directory: Path, **changes: object) -> None:
    record: dict[str, object] = {
        "llama_cpp_version": "42 (abc1234)",
        "source": "llama-cpp-python 0.3.36",
        "cmake_options": list(NATIVE_ONLY[0].cmake_options),
        "cpu_features": list(cpu_features()),
        "machine": platform.machine(),
        "system_info": "CPU : AVX2 = 1 |",
        "build_seconds": 600.0,
        "built_at": "2026-11-24T00:00:00+00:00",
    }
    record.update(changes)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "engine.json").write_text(json.dumps(record), encoding="utf-8")


def test_a_build_is_only_used_on_the_cpu_it_was_built_for(tmp_path: Path) -> None:
    directory = tmp_path / "native"
    assert load_native_engine(directory) is None  # nothing built
    _install_record(directory)
    assert load_native_engine(directory) is None  # record without binary
    fake_binary(directory / "llama-server")
    assert load_native_engine(directory) is not None
    assert load_native_engine(directory, features=("avx2", "avx512f")) is None
    _install_record(directory, machine="riscv64")
    assert load_native_engine(directory) is None
    (directory / "engine.json").write_text("{not json", encoding="utf-8")
    assert load_native_engine(directory) is None
    _install_record(directory)
    (directory / "llama-server").chmod(0o644)
    assert load_native_engine(directory) is None


def test_engine_selection_falls_back_to_xllamacpp_and_refuses_a_missing_native() -> None:
    assert select_engine() is None
    assert select_engine("xllamacpp") is None
    with pytest.raises(ConfigError, match=r"engine.*ebmeval engine build"):
        select_engine("native")
    with pytest.raises(ConfigError, match=r"engine.*one of xllamacpp, native.*'vulkan'"):
        select_engine("vulkan")
    # a build whose speed was never measured, or that measured slower, is not the default
    _install_record(native_dir())
    fake_binary(native_dir() / "llama-server")
    assert select_engine() is None and select_engine("native") is not None
    record_speed(speed_check(12.0))
    assert select_engine() is None and select_engine("native") is not None
    record_speed(speed_check(8.0))
    native = select_engine()
    assert native is not None and native == select_engine("native") and native.measured_faster
    assert select_engine("xllamacpp") is None
    # without xllamacpp to compare with, the native build is the only engine
    assert speed_check(30.0, None).native_faster


def test_speed_check_alternates_between_the_engines_and_sums_llama_cpp_timings() -> None:
    order: list[str] = []

    class Timed:
        def __init__(self, name: str, ms_per_token: float) -> None:
            self.name, self.ms = name, ms_per_token

        def handle_chat_completions(self, request: dict[str, object]) -> dict[str, object]:
            order.append(self.name)
            assert request["ignore_eos"] is True and request["cache_prompt"] is False
            tokens = request["max_tokens"]
            assert isinstance(tokens, int)
            timings = {"prompt_n": 100, "prompt_ms": 100 * self.ms, "predicted_n": tokens}
            return {"timings": {**timings, "predicted_ms": tokens * 5 * self.ms}}

    check = compare_engines(Timed("native", 1.0), Timed("xllamacpp", 2.0), model="m", n_threads=2, prompts=("a", "b"))
    assert order == ["native", "xllamacpp"] * 3  # a warm-up each, then alternating
    assert check.native == Throughput(1000.0, 200.0, 0.52)  # 200 prompt tokens in 200 ms, 64 in 320 ms
    assert check.xllamacpp == Throughput(500.0, 100.0, 1.04)
    assert check.native_faster and check.prompts == 2 and check.max_tokens == 32
    assert SpeedCheck.from_record(json.loads(json.dumps(dataclasses.asdict(check)))) == check

    class Silent:
        def handle_chat_completions(self, request: dict[str, object]) -> dict[str, object]:
            return {"choices": []}

    with pytest.raises(EbmevalError, match="xllamacpp answered the speed check without timings"):
        compare_engines(Timed("native", 1.0), Silent(), model="m", n_threads=2)


@requires_small_model
def test_the_engine_is_provenance_not_model_identity() -> None:
    prebuilt = local("smollm2", engine="xllamacpp", n_threads=1)
    assert isinstance(prebuilt, LlamaCppModel)
    assert prebuilt.provenance()["engine"].startswith("xllamacpp ")
    assert prebuilt.provenance()["n_parallel"] == 1
    # parallel slots batch requests together, which changes greedy replies: another identity
    assert "slots" not in prebuilt.describe()
    slotted = local("smollm2", engine="xllamacpp", n_threads=1, n_parallel=4)
    assert slotted.describe() == {**prebuilt.describe(), "slots": 4}
    _install_record(native_dir())
    fake_binary(native_dir() / "llama-server")
    record_speed(speed_check(8.0))
    native = local("smollm2", n_threads=1)
    assert isinstance(native, LlamaCppModel) and native.native is not None
    assert native.provenance()["engine"] == "llama.cpp native 42 (abc1234)"
    assert native.provenance()["cmake_options"] == list(NATIVE_ONLY[0].cmake_options)
    # another engine runs other kernels: another identity (cache key, run), same model file
    assert native.describe()["sha256"] == prebuilt.describe()["sha256"]
    assert native.describe()["engine"] == "llama.cpp native 42 (abc1234)" != prebuilt.describe()["engine"]


def test_native_server_speaks_chat_and_keeps_the_key_off_the_command_line(tmp_path: Path, model_file: Path) -> None:
    binary = fake_binary(tmp_path / "llama-server")
    server = start_native_server(binary, model_file, n_ctx=256, n_parallel=2, api_key="s3cret", alias="m")
    try:
        assert isinstance(server, NativeServer) and server.listening_address.startswith("http://127.0.0.1:")
        data = server.handle_chat_completions({"messages": [{"role": "user", "content": "hi"}]})
        assert "--ctx-size 512 --no-kv-unified --parallel 2" in data["choices"][0]["message"]["content"]
        assert "s3cret" not in data["choices"][0]["message"]["content"]
        error = server.handle_chat_completions({"messages": [{"role": "user", "content": "too long"}]})
        assert error["error"]["type"] == "exceed_context_size_error"
        assert server.system_info() == "n_threads = 1 | CPU : AVX2 = 1 | AVX512 = 1 |"
    finally:
        server.close()
    assert server._process.poll() is not None


def test_native_server_that_fails_to_start_reports_its_log(
    tmp_path: Path, model_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_FAIL", "1")
    with pytest.raises(ServerStartError, match="exit status 1.*failed to load model"):
        start_native_server(fake_binary(tmp_path / "llama-server"), model_file, n_ctx=256, startup_timeout=30)


def test_verify_binary_reads_version_system_info_and_a_reply(tmp_path: Path, model_file: Path) -> None:
    version, system_info, reply = verify_binary(fake_binary(tmp_path / "llama-server"), model_file)
    assert version == "42 (abc1234)"
    assert "AVX512 = 1" in system_info
    assert reply == "1, 2, 3, 4, 5, 6, 7, 8, "
    not_a_server = tmp_path / "broken"
    not_a_server.write_text("#!/bin/sh\nexit 3\n", encoding="utf-8")
    not_a_server.chmod(0o755)
    with pytest.raises(EngineBuildError, match="--version failed"):
        verify_binary(not_a_server, model_file)


def ebmeval(*args: str) -> subprocess.CompletedProcess[str]:
    """The ``ebmeval`` command in a child process (which inherits this test's cache directory)."""
    command = [sys.executable, "-c", "from ebmeval.cli import main; main()", *args]
    env = {**os.environ, "COLUMNS": "400"}  # long paths stay on one line
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False, env=env)


def test_engine_status_command_tells_which_engine_runs() -> None:
    before = ebmeval("engine", "status", "--json")
    assert before.returncode == 0 and json.loads(before.stdout) == {"default_engine": "xllamacpp", "native": None}
    # without a build, status says whether this CPU has instructions the prebuilt engine leaves unused
    hint = "native build may be faster" in " ".join(ebmeval("engine", "status").stderr.split())
    assert hint == bool(features_beyond_prebuilt(cpu_features()))
    _install_record(native_dir())
    fake_binary(native_dir() / "llama-server")
    unmeasured = ebmeval("engine", "status")
    assert "speed: not measured; local models run on xllamacpp" in unmeasured.stderr
    assert json.loads(ebmeval("engine", "status", "--json").stdout)["default_engine"] == "xllamacpp"
    record_speed(speed_check(8.0))
    after = json.loads(ebmeval("engine", "status", "--json").stdout)
    assert after["default_engine"] == "native" and after["native"]["measured_faster"] is True
    assert after["native"]["engine"] == "llama.cpp native 42 (abc1234)" and after["native"]["build_seconds"] == 600.0
    assert after["native"]["speed"]["xllamacpp"]["seconds"] == 10.0
    shown = " ".join(ebmeval("engine", "status").stderr.split("\n"))
    assert "native     prompt   110.0 tok/s  decode   16.0 tok/s     8.0 s" in shown
    assert "xllamacpp  prompt    70.0 tok/s  decode   15.0 tok/s    10.0 s" in shown
    assert "local models run on the native build" in shown
    record_speed(speed_check(12.0))
    assert "measured no faster: local models run on xllamacpp" in ebmeval("engine", "status").stderr


def test_engine_measure_without_a_build_is_a_usage_error() -> None:
    result = ebmeval("engine", "measure")
    assert result.returncode == 2 and "no native engine for this CPU" in result.stdout + result.stderr


def test_engine_build_command_reports_a_failure_with_exit_status_1(tmp_path: Path) -> None:
    broken = tmp_path / "llama_cpp_python-1.0.tar.gz"
    with tarfile.open(broken, "w:gz"):
        pass
    result = ebmeval("engine", "build", "--source", str(broken))
    assert result.returncode == 1
    errors = " ".join(result.stderr.split())
    assert "no vendor/llama.cpp tree" in errors and "build.log" in errors
    assert load_native_engine() is None
