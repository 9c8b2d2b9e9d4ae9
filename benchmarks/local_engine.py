"""Local engines side by side: the prebuilt ``xllamacpp`` wheel against the ``native`` build.

Two measurements, each engine in a fresh child process, the 1-minute load average
(``os.getloadavg``) taken before each:

- ``main-job``: ``ebmeval run --task pubmedqa --model local --limit N`` in-process (the
  same ``RunConfig`` the CLI builds, response cache off, a fresh store), with
  ``--model-arg engine=E``. Reported: the run's wall seconds (model load included) and
  llama.cpp's own timings summed over the requests:
  prompt tokens/s = Σ prompt_n / Σ prompt_ms · 1000, decode tokens/s = Σ predicted_n / Σ predicted_ms · 1000.
- ``slots``: short prompts with long replies (``ignore_eos``, ``max_tokens`` each) on the
  default model with ``n_parallel`` = 1, 2, 4 slots and as many requests in flight.
  Reported: aggregate decode tokens/s = Σ completion tokens / wall seconds of the batch.

Results are merged into ``benchmarks/results/local_engine.json``; run under the shared lock::

    flock /tmp/ebmeval-heavy.lock nice -n 10 python benchmarks/local_engine.py main-job --limit 20 --repeats 2
    flock /tmp/ebmeval-heavy.lock nice -n 10 python benchmarks/local_engine.py slots --repeats 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results" / "local_engine.json"

SLOT_PROMPTS = (
    "Explain step by step how a randomized controlled trial is designed.",
    "Describe in detail how to appraise a systematic review.",
    "Write a long explanation of confidence intervals for clinicians.",
    "Explain the hierarchy of evidence in evidence-based medicine.",
    "Describe how to compute and interpret a number needed to treat.",
    "Explain the difference between sensitivity and specificity at length.",
    "Describe the GRADE approach to rating the certainty of evidence.",
    "Explain in detail what publication bias is and how it is detected.",
)
"""Short prompts; ``ignore_eos`` makes every reply exactly ``max_tokens`` long."""


class TimingRecorder:
    """Wraps a loaded llama.cpp server and keeps the ``timings`` of every answer."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.timings: list[dict[str, Any]] = []

    def handle_chat_completions(self, request: dict[str, Any]) -> Any:
        data = self.server.handle_chat_completions(request)
        if isinstance(data, dict) and isinstance(data.get("timings"), dict):
            self.timings.append(data["timings"])
        return data


def one_main_job(engine: str, limit: int, model: str = "local") -> dict[str, Any]:
    """One PubMedQA run on ``engine`` in this process."""
    from ebmeval import RunConfig, run
    from ebmeval.runner._runner import build_models
    from ebmeval.tasks import create_task

    with tempfile.TemporaryDirectory() as work:
        config = RunConfig(
            task="pubmedqa",
            model=model,
            model_args={"engine": engine},
            limit=limit,
            cache=False,
            store=str(Path(work) / "store.sqlite"),
        )
        task = create_task(config.task, **config.task_args)
        models = build_models(config, task)
        api: Any = models["model"].api
        recorders: list[TimingRecorder] = []
        loaded = api._loaded

        def recording_loaded() -> tuple[Any, Any]:
            server, client = loaded()
            if not recorders:
                recorders.append(TimingRecorder(server))
            return recorders[0], client

        api._loaded = recording_loaded
        result = run(config, task=task, models=models)
        timings = recorders[0].timings if recorders else []
        prompt_n = sum(t.get("prompt_n", 0) for t in timings)
        prompt_ms = sum(t.get("prompt_ms", 0.0) for t in timings)
        predicted_n = sum(t.get("predicted_n", 0) for t in timings)
        predicted_ms = sum(t.get("predicted_ms", 0.0) for t in timings)
        return {
            "engine": api.provenance()["engine"],
            "samples": result.progress.total,
            "errors": result.progress.errors,
            "wall_s": result.elapsed,
            "requests": len(timings),
            "prompt_tokens": prompt_n,
            "decode_tokens": predicted_n,
            "prompt_tok_s": prompt_n / prompt_ms * 1000 if prompt_ms else None,
            "decode_tok_s": predicted_n / predicted_ms * 1000 if predicted_ms else None,
        }


def one_slots(engine: str, slots: int, requests: int, max_tokens: int, model: str = "local") -> dict[str, Any]:
    """``requests`` long replies through ``slots`` parallel slots on ``engine`` in this process."""
    from ebmeval.models._local_files import resolve_local_model
    from ebmeval.models.providers.llamacpp import ServerSettings, select_engine, start_server

    file = resolve_local_model(model.removeprefix("local").removeprefix(":"))
    native = select_engine(engine)
    server = start_server(file.path, native, ServerSettings(n_ctx=1024, n_parallel=slots))

    def ask(prompt: str, tokens: int = max_tokens) -> dict[str, Any]:
        body = {
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": tokens,
            "temperature": 0.0,
            "seed": 1,
            "ignore_eos": True,
        }
        data: dict[str, Any] = server.handle_chat_completions(body)
        if "error" in data:
            raise RuntimeError(str(data["error"]))
        return data

    ask("Hello", 4)  # warm-up: first-call allocations are not part of the measure
    prompts = [SLOT_PROMPTS[i % len(SLOT_PROMPTS)] for i in range(requests)]
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=slots) as pool:
        answers = list(pool.map(ask, prompts))
    wall = time.perf_counter() - start
    tokens = sum(a["usage"]["completion_tokens"] for a in answers)
    return {
        "engine": "xllamacpp" if native is None else native.provenance()["engine"],
        "slots": slots,
        "requests": requests,
        "decode_tokens": tokens,
        "wall_s": wall,
        "decode_tok_s": tokens / wall,
        "per_request_decode_tok_s": statistics.median(a["timings"]["predicted_per_second"] for a in answers),
        "texts": [a["choices"][0]["message"]["content"] for a in answers],
    }


def child(arguments: list[str]) -> dict[str, Any]:
    """Run this script with ``arguments`` in a fresh process; its JSON answer, with the load before it."""
    load = os.getloadavg()[0]
    completed = subprocess.run(
        [sys.executable, __file__, *arguments], capture_output=True, text=True, check=False, env=os.environ
    )
    if completed.returncode != 0:
        raise RuntimeError(f"{' '.join(arguments)} failed:\n{completed.stderr[-3000:]}")
    return {**json.loads(completed.stdout.strip().splitlines()[-1]), "load": round(load, 2)}


def this_cpu() -> dict[str, Any]:
    """The CPU the figures were taken on: its model name and the instruction sets llama.cpp can use."""
    from ebmeval.models import cpu_features

    name = ""
    with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                name = line.partition(":")[2].strip()
                break
    return {"model": name, "cores": os.cpu_count(), "features": list(cpu_features())}


def cpu_class(features: list[str]) -> str:
    """``avx512+amx``, ``avx512`` or ``avx2``: the results of each class of CPU are kept apart."""
    if "avx512f" not in features:
        return "avx2"
    return "avx512+amx" if "amx_tile" in features else "avx512"


def save(key: str, rows: list[dict[str, Any]], settings: dict[str, Any]) -> None:
    """Store ``rows`` under ``key@CPU class``, replacing only the earlier figures of the same class."""
    data = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {}
    cpu = this_cpu()
    data[f"{key}@{cpu_class(cpu['features'])}"] = {
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpu": cpu,
        **settings,
        "rows": rows,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def _median(rows: list[dict[str, Any]], key: str) -> str:
    values = [r[key] for r in rows if r.get(key) is not None]
    return f"{statistics.median(values):.1f}" if values else "–"


def _agreement(every: list[dict[str, Any]], rows: list[dict[str, Any]]) -> str:
    """Greedy replies of ``rows`` identical to the one-slot replies of the same engine and repeat."""
    same = total = 0
    for row in rows:
        one = [r for r in every if r["engine"] == row["engine"] and r["repeat"] == row["repeat"] and r["slots"] == 1]
        if not one or "texts" not in row or "texts" not in one[0]:
            return "–"
        same += sum(a == b for a, b in zip(row["texts"], one[0]["texts"], strict=True))
        total += len(row["texts"])
    return f"{same}/{total}"


def report() -> str:
    """The saved results as Markdown tables: medians over repeats, with each run's load."""
    data = json.loads(RESULTS.read_text(encoding="utf-8"))
    lines: list[str] = []
    for key, job in data.items():
        if key.startswith("main_job"):
            lines += _main_job_table(job)
        elif key.startswith("slots"):
            lines += _slots_table(job)
    return "\n".join(lines)


def _cpu_line(job: dict[str, Any]) -> str:
    cpu = job["cpu"]
    return f"{cpu['model']}, {cpu['cores']} cores, {' '.join(cpu['features'])}"


def _main_job_table(job: dict[str, Any]) -> list[str]:
    lines = [f"PubMedQA, {job['limit']} questions, `{job['model']}`, measured {job['measured_at']}", ""]
    lines += [f"CPU: {_cpu_line(job)}", ""]
    lines += ["| engine | runs | wall s | prompt tok/s | decode tok/s | load |", "|---|---|---|---|---|---|"]
    for engine in dict.fromkeys(r["engine"] for r in job["rows"]):
        rows = [r for r in job["rows"] if r["engine"] == engine]
        cells = [_median(rows, k) for k in ("wall_s", "prompt_tok_s", "decode_tok_s")]
        loads = ", ".join(f"{r['load']:.1f}" for r in rows)
        lines.append(f"| {engine} | {len(rows)} | {' | '.join(cells)} | {loads} |")
    return [*lines, ""]


def _slots_table(slots: dict[str, Any]) -> list[str]:
    lines = [
        f"{slots['requests']} requests × {slots['max_tokens']} tokens, `{slots['model']}`, "
        f"measured {slots['measured_at']}",
        "",
        f"CPU: {_cpu_line(slots)}",
        "",
        "| engine | slots | decode tok/s (all slots) | per request tok/s | replies equal to 1 slot's | load |",
        "|---|---|---|---|---|---|",
    ]
    for engine in dict.fromkeys(r["engine"] for r in slots["rows"]):
        for n in sorted({r["slots"] for r in slots["rows"]}):
            rows = [r for r in slots["rows"] if r["engine"] == engine and r["slots"] == n]
            cells = [_median(rows, k) for k in ("decode_tok_s", "per_request_decode_tok_s")]
            loads = ", ".join(f"{r['load']:.1f}" for r in rows)
            lines.append(f"| {engine} | {n} | {' | '.join(cells)} | {_agreement(slots['rows'], rows)} | {loads} |")
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    main_job = sub.add_parser("main-job")
    main_job.add_argument("--limit", type=int, default=20)
    slots = sub.add_parser("slots")
    slots.add_argument("--slots", type=int, nargs="+", default=[1, 2, 4])
    slots.add_argument("--requests", type=int, default=8)
    slots.add_argument("--max-tokens", type=int, default=128)
    for command in (main_job, slots):
        command.add_argument("--engines", nargs="+", default=["xllamacpp", "native"])
        command.add_argument("--repeats", type=int, default=2)
        command.add_argument("--model", default="local", help="local, local:smollm2 or local:/path/model.gguf")
    sub.add_parser("report")
    one = sub.add_parser("one")
    one.add_argument("spec", nargs="+")
    args = parser.parse_args()

    if args.command == "report":
        print(report())
        return
    if args.command == "one":
        kind, engine, model, *numbers = args.spec
        values = [int(n) for n in numbers]
        if kind == "main-job":
            result = one_main_job(engine, *values, model=model)
        else:
            result = one_slots(engine, *values, model=model)
        print(json.dumps(result))
        return
    rows: list[dict[str, Any]] = []
    # Engines alternate within each repeat so a change in machine load hits both.
    for repeat in range(args.repeats):
        for engine in args.engines:
            if args.command == "main-job":
                runs = [["one", "main-job", engine, args.model, str(args.limit)]]
            else:
                numbers = [[str(n), str(args.requests), str(args.max_tokens)] for n in args.slots]
                runs = [["one", "slots", engine, args.model, *n] for n in numbers]
            for spec in runs:
                row = {"repeat": repeat, **child(spec)}
                rows.append(row)
                print(json.dumps(row), flush=True)
    settings: dict[str, Any] = {"model": args.model}
    settings.update({"limit": args.limit} if args.command == "main-job" else {"requests": args.requests})
    if args.command == "slots":
        settings["max_tokens"] = args.max_tokens
    save(args.command.replace("-", "_"), rows, settings)


if __name__ == "__main__":
    main()
