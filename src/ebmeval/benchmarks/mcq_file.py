"""Multiple-choice questions from the user's own JSONL file."""

from __future__ import annotations

import hashlib
import string
from pathlib import Path
from typing import Any

from .._util.errors import DataError
from ..tasks import Document, Sample, Task, read_jsonl, task
from ..workflows import Strategy
from ._mcq import mcq_task


def load_mcq_file(path: str | Path) -> list[Sample]:
    """Samples from JSONL lines ``{"id", "question", "options", "answer", "context"?, "metadata"?}``.

    ``options`` is a list (lettered A, B, …) or a mapping letter → text (letters ignore case, so
    ``"A"`` and ``"a"`` together are refused); ``answer`` a letter or
    a list of letters; ``context`` a string or a list of strings. Every problem is a
    ``DataError`` naming the file, line and field.
    """
    samples: list[Sample] = []
    seen: set[str] = set()
    for line, record in read_jsonl(path):
        for key in ("id", "question", "options", "answer"):
            if key not in record:
                raise DataError(path, "missing field", line=line, field=key)
        sample_id = _sample_id(record["id"], path, line)
        if sample_id in seen:
            raise DataError(path, "duplicate id", line=line, field="id", value=sample_id)
        seen.add(sample_id)
        question = record["question"]
        if not isinstance(question, str) or not question.strip():
            raise DataError(path, "expected a non-empty string", line=line, field="question", value=question)
        choices = _options(record["options"], path, line)
        answers = record["answer"] if isinstance(record["answer"], list) else [record["answer"]]
        if not answers:
            raise DataError(
                path, "expected a letter or a non-empty list of letters", line=line, field="answer", value=[]
            )
        for answer in answers:
            if not isinstance(answer, str) or answer.strip().upper() not in choices:
                raise DataError(
                    path, f"not one of the options {list(choices)}", line=line, field="answer", value=answer
                )
        context = record.get("context") or []
        texts = [context] if isinstance(context, str) else context
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise DataError(path, "expected a string or a list of strings", line=line, field="context", value=context)
        metadata = record.get("metadata", {})
        if not isinstance(metadata, dict):
            raise DataError(path, "expected an object", line=line, field="metadata", value=metadata)
        letters = [a.strip().upper() for a in answers]
        samples.append(
            Sample(
                id=sample_id,
                input=question,
                target=letters if isinstance(record["answer"], list) else letters[0],
                choices=choices,
                documents=[Document(id=f"{sample_id}/context/{i}", text=t) for i, t in enumerate(texts)],
                metadata=metadata,
            )
        )
    if not samples:
        raise DataError(path, "no questions in the file")
    return samples


def _sample_id(raw: Any, path: str | Path, line: int) -> str:
    """A record's id: a non-empty string or an integer (never null, a boolean, a number with a fraction)."""
    if isinstance(raw, str) and raw.strip():
        return raw
    if isinstance(raw, int) and not isinstance(raw, bool):
        return str(raw)
    raise DataError(path, "expected a non-empty string or an integer", line=line, field="id", value=raw)


def _options(raw: Any, path: str | Path, line: int) -> dict[str, str]:
    if isinstance(raw, list) and raw and all(isinstance(o, str) for o in raw) and len(raw) <= 26:
        return dict(zip(string.ascii_uppercase, raw, strict=False))
    if isinstance(raw, dict) and raw and all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        options: dict[str, str] = {}
        for key, text in raw.items():
            letter = key.strip().upper()
            if letter in options:
                raise DataError(
                    path, f"two options are letter {letter} (letters ignore case and spaces)", line=line,
                    field="options", value=raw,
                )  # fmt: skip
            options[letter] = text
        return options
    raise DataError(
        path, "expected a list of option texts or an object letter → text", line=line, field="options", value=raw
    )


@task("mcq-file")
def mcq_file(path: str, strategy: Strategy = "direct", multi: bool = False) -> Task:
    """Multiple-choice questions from your own JSONL file, scored by accuracy (or multi-answer metrics)."""
    samples = load_mcq_file(path)
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]
    return mcq_task(
        "mcq-file",
        samples,
        data_version=f"file-{digest}",
        metadata={"source": str(path)},
        strategy=strategy,
        multi=multi,
    )
