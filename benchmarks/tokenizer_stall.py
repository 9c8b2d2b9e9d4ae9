"""How long token counting holds up the event loop while evidence is fitted to a context window.

Four golden-rag samples fit their abstracts to a 600-token window at once, counting tokens
with a llama.cpp-style ``/tokenize`` endpoint that answers after ``--delay`` seconds. A ticker
on the run's loop records the longest gap between its 5 ms ticks: a blocking tokenizer
request stalls every other call for its whole round trip. The tokenizer serves from its own
thread and loop, as a remote server would.

    python benchmarks/tokenizer_stall.py --delay 0.05
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import queue
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ebmeval.models import Model
from ebmeval.models.providers.openai_compatible import OpenAICompatibleModel
from ebmeval.synthesis._evidence import fit_evidence
from ebmeval.tasks import SampleContext, create_task

_spec = importlib.util.spec_from_file_location("_delay_server", Path(__file__).with_name("_delay_server.py"))
assert _spec is not None and _spec.loader is not None
_delay = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("_delay_server", _delay)
_spec.loader.exec_module(_delay)


class Tokenizer(_delay.DelayServer):  # type: ignore[misc,name-defined]
    """``/tokenize`` in llama.cpp's style, answering after ``delay`` seconds."""

    async def _answer(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
        if path != "/tokenize":
            return await super()._answer(method, path, body)  # type: ignore[no-any-return]
        await asyncio.sleep(self.delay)
        content = str(json.loads(body).get("content", ""))
        return 200, {"tokens": list(range(len(content.split())))}


async def _ticker(gaps: list[float], stop: asyncio.Event) -> None:
    last = time.perf_counter()
    while not stop.is_set():
        await asyncio.sleep(0.005)
        now = time.perf_counter()
        gaps.append(now - last)
        last = now


def _serve(delay: float, ready: queue.Queue[str], stop: threading.Event) -> None:
    async def serve() -> None:
        async with Tokenizer(delay) as server:
            ready.put(server.url)
            while not stop.is_set():
                await asyncio.sleep(0.01)

    asyncio.run(serve())


async def main(delay: float) -> None:
    samples = list(create_task("synthesis", workflow="golden-rag").dataset)[:4]
    ready: queue.Queue[str] = queue.Queue()
    done = threading.Event()
    thread = threading.Thread(target=_serve, args=(delay, ready, done))
    thread.start()
    url = ready.get(timeout=30)
    try:
        model = Model(OpenAICompatibleModel("m", f"{url}/v1", context_length=600))
        await model.api.prepare()
        gaps: list[float] = []
        stop = asyncio.Event()
        ticker = asyncio.create_task(_ticker(gaps, stop))
        started = time.perf_counter()
        await asyncio.gather(
            *(
                fit_evidence(SampleContext({"model": model}), s.documents, "", title=s.input, policy="truncate")
                for s in samples
            )
        )
        elapsed = time.perf_counter() - started
        stop.set()
        await ticker
        await model.aclose()
    finally:
        done.set()
        thread.join()
    print(
        json.dumps(
            {
                "delay_s": delay,
                "samples": len(samples),
                "elapsed_s": round(elapsed, 3),
                "longest_stall_s": round(max(gaps), 3),
            }
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.05, help="Seconds the tokenizer takes per request.")
    asyncio.run(main(parser.parse_args().delay))
