"""CareMedEval gold answers, written in every multi-answer style, through ``ebmeval run``.

A loopback OpenAI-compatible server (``benchmarks/_delay_server.py``) answers each
request with the gold answer of the question in its prompt, rendered in the style named
by the request's model (``openai-compatible:STYLE@URL``). Each style must score EMR 1.0,
or lose exactly the replies it leaves unparsed: a reply is never read partially.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from ebmeval.scorers import parse_choices
from ebmeval.tasks import Sample, create_task
from ebmeval.workflows._qa import format_options
from tests.helpers.answer_styles import STYLES
from tests.reliability._support import EBMEVAL, load_delay_server

LIMIT = 30


def gold_reply(samples: list[Sample]) -> Any:
    """The server's reply function: the gold answer of the prompt's question, in the model's style."""

    def reply(request: dict[str, Any]) -> str:
        prompt = request["messages"][-1]["content"]
        found = [s for s in samples if s.input in prompt and format_options(s.choices or {}) in prompt]
        if len(found) != 1:
            raise ValueError(f"{len(found)} questions match the prompt")
        sample = found[0]
        gold = [letter for letter in sample.choices or {} if letter in sample.targets]
        return STYLES[request["model"]](gold, sample.choices or {})

    return reply


@contextmanager
def gold_server(samples: list[Sample]) -> Iterator[str]:
    """The root URL of the gold-answer server, served from a thread."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    stop = asyncio.Event()
    urls: list[str] = []

    async def serve() -> None:
        async with load_delay_server().DelayServer(0.0, reply=gold_reply(samples)) as server:
            urls.append(server.url)
            ready.set()
            await stop.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    try:
        assert ready.wait(30), "the server did not start"
        yield urls[0]
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()


def run_style(style: str, url: str, store: Path, *flags: str, limit: int = LIMIT) -> dict[str, Any]:
    """``ebmeval run`` of CareMedEval against the server in ``style``: its JSON summary."""
    args = [EBMEVAL, "run", "--task", "caremedeval", "--model", f"openai-compatible:{style}@{url}/v1"]
    args += ["--limit", str(limit), "--store", str(store), "--no-cache", "--json", *flags]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    summary: dict[str, Any] = json.loads(done.stdout)
    return summary


@pytest.mark.parametrize("language", ["en", "fr"])
def test_every_question_in_every_style_is_read_exactly(language: str) -> None:
    """In process, all 534 questions: the real option texts (commas, periods, French) in every style."""
    wrong, unparsed = [], []
    for sample in create_task("caremedeval", language=language).dataset:
        choices = sample.choices or {}
        gold = [letter for letter in choices if letter in sample.targets]
        for name, style in STYLES.items():
            parsed = parse_choices(style(gold, choices), choices, multi=True)
            if not parsed.parsed:
                unparsed.append((name, sample.id))
            elif parsed.value != gold:
                wrong.append((name, sample.id, parsed.value))
    assert wrong == []
    assert unparsed == []


@pytest.mark.slow
def test_gold_answers_in_every_style_score_emr_one_or_are_counted_unparsed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = create_task("caremedeval").dataset
    rows = []
    with gold_server(samples) as url:
        for style in STYLES:
            summary = run_style(style, url, tmp_path / f"{style}.sqlite")
            emr = next(m for m in summary["metrics"] if m["metric"] == "exact_match" and m["group"] is None)
            rows.append((style, summary["generations"], emr["value"], summary["unparsed"]))
    with capsys.disabled():
        print(f"\n{'style':22} {'n':>3} {'EMR':>6} {'unparsed':>8}")
        for style, n, value, unparsed in rows:
            print(f"{style:22} {n:>3} {value:>6.3f} {unparsed:>8}")
    for style, n, value, unparsed in rows:
        assert n == LIMIT, style
        # an unparsed reply is graded as the empty answer (EMR 0): every lost point is an unparsed reply
        assert value * n == pytest.approx(n - unparsed), f"{style}: EMR {value} with {unparsed} unparsed"
    assert all(unparsed == 0 for *_, unparsed in rows), "every style of the corpus is read"


def test_a_strict_run_shows_the_lenient_reading_beside_it(tmp_path: Path) -> None:
    """``answer_format=strict`` grades only a final ``ANSWER:`` line; ``*_lenient`` reads the same replies leniently."""
    samples = create_task("caremedeval").dataset
    found = {}
    with gold_server(samples) as url:
        for style in ("inspect", "answer-is-oxford"):
            summary = run_style(style, url, tmp_path / f"{style}.sqlite", "--task-arg", "answer_format=strict", limit=5)
            metrics = {m["metric"]: m["value"] for m in summary["metrics"] if m["group"] is None}
            found[style] = (summary["unparsed"], metrics["exact_match"], metrics["exact_match_lenient"])
    assert found == {"inspect": (0, 1.0, 1.0), "answer-is-oxford": (5, 0.0, 1.0)}
