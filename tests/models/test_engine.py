"""Unit tests of the native engine's build logic, caching, selection and process handling.

The compiler and ``llama-server`` are replaced here by doubles (a recording runner and a
small Python script speaking llama-server's protocol); ``test_engine_native.py`` runs
the real build.
"""

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

from ebmeval._util.errors import ConfigError
from ebmeval.models._engine import (
    CMAKE_OPTIONS,
    EngineBuildError,
    NativeServer,
    build_native_engine,
    compile_command,
    configure_command,
    cpu_features,
    download_command,
    engines_dir,
    features_beyond_prebuilt,
    load_native_engine,
    native_dir,
    server_command,
    start_native_server,
    verify_binary,
)
from ebmeval.models.providers.llamacpp import LlamaCppModel, local, select_engine
from tests.models import requires_small_model

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
flags\t\t: fpu sse2 pni ssse3 fma avx f16c avx2 bmi2 avx512f avx512bw avx512vl avx512_vnni amx_tile amx_int8 xsave
processor\t: 1
flags\t\t: fpu
"""

FAKE_SERVER = """
import http.server, json, os, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("version: 42 (abc1234)", file=sys.stderr)
    print("built with test", file=sys.stderr)
    sys.exit(0)
if os.environ.get("FAKE_FAIL"):
    print("error: failed to load model", file=sys.stderr, flush=True)
    sys.exit(1)
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
    """Records each command; the compile step leaves a fake ``llama-server`` behind."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.commands: list[list[str]] = []
        self.fail_on = fail_on

    def __call__(self, command: list[str], log: IO[str]) -> None:
        self.commands.append(command)
        log.write("ran\n")
        if self.fail_on is not None and self.fail_on in command:
            raise EngineBuildError(f"{command[0]} failed")
        if "download" in command:
            fake_sdist(Path(command[command.index("-d") + 1]) / "llama_cpp_python-0.3.36.tar.gz", "0.3.36")
        if "--build" in command:
            fake_binary(Path(command[command.index("--build") + 1]) / "bin" / "llama-server")


def fake_verify(binary: Path, model: Path) -> tuple[str, str, str]:
    assert binary.exists() and model.name == "model.gguf"
    return "42 (abc1234)", "CPU : AVX2 = 1 | AVX512 = 1 |", "Paris"


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


def test_command_lines_build_only_the_server_with_native_flags(tmp_path: Path) -> None:
    configure = configure_command(tmp_path / "src", tmp_path / "build")
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
    )
    assert [c[1] for c in toolchain.commands] == ["-S", "--build"]  # no download
    source = engines_dir() / ".build" / "llama_cpp_python-9.9.9" / "vendor" / "llama.cpp"
    assert toolchain.commands[0] == configure_command(source, engines_dir() / ".build" / "build-native")
    assert toolchain.commands[1][-2:] == ["-j", "3"]
    assert engine.binary == native_dir() / "llama-server" and os.access(engine.binary, os.X_OK)
    assert engine.source == "llama-cpp-python 9.9.9" and engine.llama_cpp_version == "42 (abc1234)"
    assert engine.cmake_options == CMAKE_OPTIONS and engine.cpu_features == cpu_features()
    assert engine.verified_reply == "Paris"
    assert not (engines_dir() / ".build").exists()
    assert (engines_dir() / "build.log").read_text(encoding="utf-8").count("ran") == 2
    assert load_native_engine() == engine


def test_build_downloads_the_pinned_sdist_and_can_keep_the_build_dir(model_file: Path) -> None:
    toolchain = FakeToolchain()
    engine = build_native_engine(verify_model=model_file, run=toolchain, verify=fake_verify, keep_build=True)
    assert toolchain.commands[0][:4] == [sys.executable, "-m", "pip", "download"]
    assert engine.source == "llama-cpp-python 0.3.36"
    assert (engines_dir() / ".build" / "build-native" / "bin" / "llama-server").exists()


def test_a_failed_step_names_the_log_and_keeps_the_previous_engine(tmp_path: Path, model_file: Path) -> None:
    archive = fake_sdist(tmp_path / "llama_cpp_python-9.9.9.tar.gz")
    first = build_native_engine(archive=archive, verify_model=model_file, run=FakeToolchain(), verify=fake_verify)
    with pytest.raises(EngineBuildError, match=r"cmake failed \(see .*build\.log\)"):
        build_native_engine(archive=archive, verify_model=model_file, run=FakeToolchain(fail_on="--build"))

    def refuse(binary: Path, model: Path) -> tuple[str, str, str]:
        raise EngineBuildError("the built server answered with empty text")

    with pytest.raises(EngineBuildError, match="empty text"):
        build_native_engine(archive=archive, verify_model=model_file, run=FakeToolchain(), verify=refuse)
    assert load_native_engine() == first


def test_a_build_dir_from_another_source_tree_is_started_afresh(tmp_path: Path, model_file: Path) -> None:
    build = engines_dir() / ".build" / "build-native"
    build.mkdir(parents=True)
    (build / "CMakeCache.txt").write_text("CMAKE_HOME_DIRECTORY:INTERNAL=/elsewhere/llama.cpp\n", encoding="utf-8")
    (build / "stale.o").write_text("", encoding="utf-8")
    build_native_engine(
        archive=fake_sdist(tmp_path / "llama_cpp_python-9.9.9.tar.gz"),
        verify_model=model_file,
        run=FakeToolchain(),
        verify=fake_verify,
        keep_build=True,
    )
    assert not (build / "stale.o").exists()


def test_an_sdist_without_llama_cpp_is_refused(tmp_path: Path, model_file: Path) -> None:
    archive = tmp_path / "llama_cpp_python-1.0.tar.gz"
    with tarfile.open(archive, "w:gz"):
        pass
    with pytest.raises(EngineBuildError, match="no vendor/llama.cpp tree"):
        build_native_engine(archive=archive, verify_model=model_file, run=FakeToolchain(), verify=fake_verify)


def _install_record(directory: Path, **changes: object) -> None:
    record: dict[str, object] = {
        "llama_cpp_version": "42 (abc1234)",
        "source": "llama-cpp-python 0.3.36",
        "cmake_options": list(CMAKE_OPTIONS),
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
    _install_record(native_dir())
    fake_binary(native_dir() / "llama-server")
    native = select_engine()
    assert native is not None and native == select_engine("native")
    assert select_engine("xllamacpp") is None


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
    native = local("smollm2", n_threads=1)
    assert isinstance(native, LlamaCppModel) and native.native is not None
    assert native.provenance()["engine"] == "llama.cpp native 42 (abc1234)"
    assert native.provenance()["cmake_options"] == list(CMAKE_OPTIONS)
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
    with pytest.raises(RuntimeError, match="exit status 1.*failed to load model"):
        start_native_server(fake_binary(tmp_path / "llama-server"), model_file, n_ctx=256, startup_timeout=30)


def test_verify_binary_reads_version_system_info_and_a_reply(tmp_path: Path, model_file: Path) -> None:
    version, system_info, reply = verify_binary(fake_binary(tmp_path / "llama-server"), model_file)
    assert version == "42 (abc1234)"
    assert "AVX512 = 1" in system_info
    assert reply.startswith("args=--model")
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
    _install_record(native_dir())
    fake_binary(native_dir() / "llama-server")
    after = json.loads(ebmeval("engine", "status", "--json").stdout)
    assert after["default_engine"] == "native"
    assert after["native"]["engine"] == "llama.cpp native 42 (abc1234)" and after["native"]["build_seconds"] == 600.0


def test_engine_build_command_reports_a_failure_with_exit_status_1(tmp_path: Path) -> None:
    broken = tmp_path / "llama_cpp_python-1.0.tar.gz"
    with tarfile.open(broken, "w:gz"):
        pass
    result = ebmeval("engine", "build", "--source", str(broken))
    assert result.returncode == 1
    errors = " ".join(result.stderr.split())
    assert "no vendor/llama.cpp tree" in errors and "build.log" in errors
    assert load_native_engine() is None
