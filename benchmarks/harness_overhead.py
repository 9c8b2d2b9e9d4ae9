"""Harness overhead and throughput: ebmeval vs lm-evaluation-harness vs inspect_ai.

The same N multiple-choice questions go through each tool to one OpenAI-compatible
server on 127.0.0.1 that answers every request after a fixed ``delay``
(``benchmarks/_delay_server.py``), so every second beyond the delay is the tool's own.
lm-eval and inspect_ai run from their own virtual environments (``--lm-eval-python``,
``--inspect-python``) and read local files only; none of the tools reaches the network.

Per run (tool, delay, concurrency ``c``, repeat), with times from the server's clock:

- ``startup_s`` = first request arrival − process launch
- ``request_phase_s`` = last answer sent − first request arrival
- ``request_rate`` = N / ``request_phase_s``; ``ideal_rate`` = c / delay;
  ``ratio_to_ideal`` = ``request_rate`` / ``ideal_rate`` (a perfect client answers N questions
  in ceil(N / c) waves of ``delay``, so choose N a multiple of every c: 400 at c = 64 is 7 waves
  for 6.25 waves' work, and even a perfect client reaches only 0.89)
- ``process_rate`` = N / (process exit − process launch)
- ``overhead_ms_per_sample`` (delay 0 only) = 1000 · ``request_phase_s`` / N
- ``cpu_ms_per_sample`` = 1000 · (user + system CPU seconds of the process tree) / N

The summary reports the median over repeats. The load average is recorded before each
run because the numbers are only as good as the machine is quiet.

Usage::

    python benchmarks/harness_overhead.py --n 400 --delays 0.2 0 --concurrency 16 64 --repeats 2 \\
        --lm-eval-python /tmp/bvenvs/lmeval/bin/python --inspect-python /tmp/bvenvs/inspect/bin/python
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
EBMEVAL_PYTHON = ROOT / ".venv" / "bin" / "python"


@dataclass
class Measurement:
    """One run of one tool."""

    tool: str
    delay: float
    concurrency: int
    repeat: int
    n: int
    requests: int
    exit_code: int
    load_before: float
    wall_s: float
    cpu_s: float
    startup_s: float | None
    request_phase_s: float | None

    @property
    def derived(self) -> dict[str, float | None]:
        """Rates and ratios computed from the raw times (formulas in the module docstring)."""
        phase = self.request_phase_s
        rate = self.n / phase if phase else None
        ideal = self.concurrency / self.delay if self.delay > 0 else None
        return {
            "process_rate": self.n / self.wall_s,
            "request_rate": rate,
            "ideal_rate": ideal,
            "ratio_to_ideal": rate / ideal if rate is not None and ideal else None,
            "overhead_ms_per_sample": 1000 * phase / self.n if phase is not None and self.delay == 0 else None,
            "cpu_ms_per_sample": 1000 * self.cpu_s / self.n,
        }


def write_questions(path: Path, n: int) -> None:
    """N four-option questions in the ``mcq-file`` JSONL format (which the other tools read too)."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            record = {
                "id": f"q{i:05d}",
                "question": f"Question {i}: which option is the first-line treatment for condition {i}?",
                "options": [f"drug {i}-{k}" for k in range(4)],
                "answer": "ABCD"[i % 4],
            }
            out.write(json.dumps(record) + "\n")


LM_EVAL_TASK = """\
task: bench_mcq
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "{{{{question}}}}\\nA. {{{{options[0]}}}}\\nB. {{{{options[1]}}}}\\n\\
  C. {{{{options[2]}}}}\\nD. {{{{options[3]}}}}\\nAnswer:"
doc_to_target: answer
generation_kwargs:
  until: ["\\n"]
  max_gen_toks: 5
  do_sample: false
metric_list:
  - metric: exact_match
"""

INSPECT_TASK = """\
from inspect_ai import Task, task
from inspect_ai.dataset import FieldSpec, json_dataset
from inspect_ai.scorer import choice
from inspect_ai.solver import multiple_choice


@task
def bench_mcq():
    fields = FieldSpec(input="question", target="answer", choices="options", id="id")
    return Task(dataset=json_dataset({data!r}, fields), solver=multiple_choice(), scorer=choice())
"""


def commands(
    tool: str, work: Path, url: str, n: int, concurrency: int, args: argparse.Namespace
) -> tuple[list[str], dict[str, str]]:
    """The command line and extra environment that run ``tool`` on the questions."""
    data = work / "questions.jsonl"
    env = {"OPENAI_API_KEY": "dummy", "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
    if tool in ("ebmeval", "ebmeval-before"):
        if tool == "ebmeval-before":  # another checkout's source, e.g. the commit before a change
            env["PYTHONPATH"] = args.before_src
        store = tempfile.mkdtemp(dir=work) + "/runs.sqlite"
        env["EBMEVAL_CACHE_DIR"] = str(work / "cache")
        cmd = [str(Path(args.ebmeval_python).parent / "ebmeval"), "run", "--task", "mcq-file"]
        cmd += ["--task-arg", f"path={data}", "--model", f"openai-compatible:delay@{url}/v1"]
        cmd += ["--limit", str(n), "--concurrency", str(concurrency), "--store", store, "--no-cache", "--json"]
        return cmd, env
    if tool == "lm_eval":
        task_dir = work / "lm_eval_task"
        task_dir.mkdir(exist_ok=True)
        (task_dir / "bench_mcq.yaml").write_text(LM_EVAL_TASK.format(data=data))
        env |= {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        env["HF_HOME"] = str(work / "hf")
        model_args = (
            f"model=delay,base_url={url}/v1/chat/completions,num_concurrent={concurrency},"
            "max_retries=1,tokenized_requests=False"
        )
        cmd = [args.lm_eval_python, "-m", "lm_eval", "--model", "local-chat-completions"]
        cmd += ["--model_args", model_args, "--tasks", "bench_mcq", "--include_path", str(task_dir)]
        cmd += ["--apply_chat_template", "--limit", str(n), "--batch_size", "1"]
        return cmd, env
    if tool == "inspect_ai":
        task_file = work / "inspect_task.py"
        task_file.write_text(INSPECT_TASK.format(data=str(data)))
        env |= {"DELAY_API_KEY": "dummy", "DELAY_BASE_URL": f"{url}/v1", "INSPECT_LOG_DIR": str(work / "inspect")}
        cmd = [str(Path(args.inspect_python).parent / "inspect"), "eval", task_file.name]
        cmd += ["--model", "openai-api/delay/delay", "--limit", str(n), "--max-connections", str(concurrency)]
        cmd += ["--max-tokens", "5", "--display", "none", "--no-fail-on-error"]
        return cmd, env
    raise ValueError(f"unknown tool {tool!r}")


def http_json(url: str, method: str = "GET") -> Any:
    """GET or POST ``url`` and decode its JSON answer."""
    request = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


@contextlib.contextmanager
def delay_server(delay: float, work: Path) -> Iterator[str]:
    """A delay server in its own process; yields its root URL."""
    port_file = work / f"port-{delay}"
    port_file.unlink(missing_ok=True)
    server = ROOT / "benchmarks" / "_delay_server.py"
    process = subprocess.Popen(
        [sys.executable, str(server), "--delay", str(delay), "--port-file", str(port_file)],
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the delay server did not start")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port_file.read_text()}"
    finally:
        process.terminate()
        process.wait(10)


def measure(
    tool: str, work: Path, url: str, delay: float, concurrency: int, repeat: int, args: argparse.Namespace
) -> Measurement:
    """Run ``tool`` once and read the server's view of it."""
    cmd, extra = commands(tool, work, url, args.n, concurrency, args)
    http_json(url + "/reset", "POST")
    load = os.getloadavg()[0]
    log = work / f"{tool}-{delay}-{concurrency}-{repeat}.log"
    started = time.time()
    with log.open("w") as out:
        process = subprocess.Popen(cmd, env={**os.environ, **extra}, stdout=out, stderr=subprocess.STDOUT, cwd=work)
        _pid, status, usage = os.wait4(process.pid, 0)
    ended = time.time()
    stats = http_json(url + "/stats")
    first, done = stats["first_arrival"], stats["last_done"]
    result = Measurement(
        tool=tool,
        delay=delay,
        concurrency=concurrency,
        repeat=repeat,
        n=args.n,
        requests=stats["requests"],
        exit_code=os.waitstatus_to_exitcode(status),
        load_before=round(load, 2),
        wall_s=ended - started,
        cpu_s=usage.ru_utime + usage.ru_stime,
        startup_s=first - started if first else None,
        request_phase_s=done - first if first and done else None,
    )
    if result.requests != args.n:
        print(f"  warning: {tool} sent {result.requests} requests for {args.n} questions; log: {log}", flush=True)
    return result


def median_rows(runs: list[Measurement]) -> list[dict[str, Any]]:
    """One row per (tool, delay, concurrency): the median of every figure over the repeats."""
    groups: dict[tuple[str, float, int], list[Measurement]] = {}
    for run in runs:
        groups.setdefault((run.tool, run.delay, run.concurrency), []).append(run)
    rows = []
    for (tool, delay, concurrency), group in groups.items():
        row: dict[str, Any] = {"tool": tool, "delay": delay, "concurrency": concurrency, "repeats": len(group)}
        figures = [{**asdict(m), **m.derived} for m in group]
        for key in ("wall_s", "cpu_s", "startup_s", "request_phase_s", "load_before", *group[0].derived):
            values = [f[key] for f in figures if f[key] is not None]
            row[key] = round(statistics.median(values), 4) if values else None
        row["all_requests_answered"] = all(m.requests == m.n and m.exit_code in (0, 1) for m in group)
        rows.append(row)
    return rows


def table(rows: list[dict[str, Any]], n: int) -> dict[str, Any]:
    """The summary table for ``docs/performance.md``."""
    columns = [
        "tool",
        "delay s",
        "conc.",
        "process samples/s",
        "request-phase samples/s",
        "ratio to ideal",
        "start-up s",
        "overhead ms/sample",
        "CPU ms/sample",
        "load",
    ]

    def fmt(value: Any, digits: int = 2) -> str:
        return "—" if value is None else f"{value:.{digits}f}"

    body = [
        [
            r["tool"],
            f"{r['delay']:g}",
            str(r["concurrency"]),
            fmt(r["process_rate"], 1),
            fmt(r["request_rate"], 1),
            fmt(r["ratio_to_ideal"]),
            fmt(r["startup_s"]),
            fmt(r["overhead_ms_per_sample"]),
            fmt(r["cpu_ms_per_sample"]),
            fmt(r["load_before"], 1),
        ]
        for r in sorted(rows, key=lambda r: (-r["delay"], r["concurrency"], r["tool"]))
    ]
    return {"title": f"Harness overhead and throughput ({n} questions, medians)", "columns": columns, "rows": body}


def versions(args: argparse.Namespace) -> dict[str, str]:
    """Installed versions of the three tools."""
    found = {}
    for tool, python, dist in (
        ("ebmeval", args.ebmeval_python, "ebmeval"),
        ("lm_eval", args.lm_eval_python, "lm_eval"),
        ("inspect_ai", args.inspect_python, "inspect_ai"),
    ):
        if tool in args.tools:
            code = f"import importlib.metadata as m; print(m.version({dist!r}))"
            found[tool] = subprocess.run([python, "-c", code], capture_output=True, text=True).stdout.strip()
    return found


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=400, help="questions per run")
    parser.add_argument("--delays", type=float, nargs="+", default=[0.2, 0.0], help="server delays (s)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64], help="requests in flight")
    parser.add_argument("--repeats", type=int, default=2, help="runs per configuration (the median is reported)")
    parser.add_argument("--tools", nargs="+", default=["ebmeval", "lm_eval", "inspect_ai"])
    parser.add_argument("--ebmeval-python", default=str(EBMEVAL_PYTHON))
    parser.add_argument("--lm-eval-python", default="/tmp/bvenvs/lmeval/bin/python")
    parser.add_argument("--inspect-python", default="/tmp/bvenvs/inspect/bin/python")
    parser.add_argument("--before-src", help="a checkout's src/ folder, run as tool ebmeval-before")
    parser.add_argument("--out", type=Path, default=RESULTS / "harness_overhead.json")
    parser.add_argument("--append", action="store_true", help="add the runs to those already in --out")
    args = parser.parse_args()

    runs: list[Measurement] = []
    with tempfile.TemporaryDirectory(prefix="ebmeval-bench-") as tmp:
        work = Path(tmp)
        write_questions(work / "questions.jsonl", args.n)
        for delay in args.delays:
            with delay_server(delay, work) as url:
                for repeat in range(args.repeats):
                    for concurrency in args.concurrency:
                        for tool in args.tools:
                            run = measure(tool, work, url, delay, concurrency, repeat, args)
                            runs.append(run)
                            shown = {k: round(v, 3) if isinstance(v, float) else v for k, v in run.derived.items()}
                            print(
                                f"{tool} delay={delay} c={concurrency} #{repeat}: wall {run.wall_s:.2f}s "
                                f"startup {run.startup_s} requests {run.requests} exit {run.exit_code} "
                                f"load {run.load_before} {shown}",
                                flush=True,
                            )
    settings = [
        {
            "n": args.n,
            "delays": args.delays,
            "concurrency": args.concurrency,
            "repeats": args.repeats,
            "before_src": args.before_src,
        }
    ]
    found = versions(args)
    if args.append and args.out.exists():  # add these runs to an earlier invocation's
        earlier = json.loads(args.out.read_text())
        if earlier["runs"] and earlier["runs"][0]["n"] != args.n:
            raise SystemExit(f"{args.out} holds runs of {earlier['runs'][0]['n']} questions, not {args.n}")
        fields = set(Measurement.__dataclass_fields__)
        runs = [Measurement(**{k: v for k, v in r.items() if k in fields}) for r in earlier["runs"]] + runs
        settings = earlier["settings"] + settings
        found = {**earlier["versions"], **found}
    rows = median_rows(runs)
    result = {
        "benchmark": "harness_overhead",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "versions": found,
        "settings": settings,
        "runs": [{**asdict(m), **m.derived} for m in runs],
        "medians": rows,
        "table": table(rows, args.n),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(textwrap.indent(json.dumps(result["table"], indent=1), "  "))


if __name__ == "__main__":
    main()
