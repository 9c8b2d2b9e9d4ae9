"""Free-text questions with a reference answer from the user's own file, scored by ROUGE-L and optionally a judge."""

from __future__ import annotations

from collections.abc import Mapping

from .._util.errors import ConfigError, DataError
from .._util.hashing import stable_hash
from ..judges import ReferenceJudge, reference_judge
from ..models import GenerateConfig
from ..scorers.text import rouge_l
from ..tasks import Document, Sample, Scorer, Task, read_rows, task
from .lfqa import LongFormAnswer
from .mcq_file import file_digest

FIELDS = ("id", "question", "reference", "context", "metadata")
"""The fields of a free-text item; ``fields=`` maps them to a file's own names."""


def load_text_file(path: str, *, fields: Mapping[str, str] | None = None, split: str | None = None) -> list[Sample]:
    """Samples from a file of items ``{"id", "question", "reference", "context"?, "metadata"?}``.

    Read like ``mcq-file`` (JSONL, JSON, CSV, Parquet, a ``datasets`` folder; ``fields`` maps
    names); every problem is a ``DataError`` naming the file, line or row, and field.
    """
    unknown = sorted(set(fields or {}) - set(FIELDS))
    if unknown:
        raise ConfigError("fields", f"unknown item field {unknown[0]!r}; item fields: {', '.join(FIELDS)}")
    samples: list[Sample] = []
    seen: set[str] = set()
    for place, raw in read_rows(path, split=split):
        record = dict(raw)
        for name, column in (fields or {}).items():
            if column not in raw:
                raise place.error(f"missing field (mapped to '{name}'); the record has {sorted(raw)}", field=column)
            record[name] = raw[column]
        for key in ("id", "question", "reference"):
            value = record.get(key)
            if key == "id" and isinstance(value, int) and not isinstance(value, bool):
                value = record[key] = str(value)
            if not isinstance(value, str) or not value.strip():
                raise place.error("missing field" if value is None else "expected a non-empty string", field=key)
        if record["id"] in seen:
            raise place.error("duplicate id", field="id", value=record["id"])
        seen.add(record["id"])
        context = record.get("context") or []
        texts = [context] if isinstance(context, str) else context
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise place.error("expected a string or a list of strings", field="context", value=context)
        metadata = record.get("metadata", {})
        if not isinstance(metadata, dict):
            raise place.error("expected an object", field="metadata", value=metadata)
        samples.append(
            Sample(
                id=record["id"],
                input=record["question"],
                target=record["reference"],
                documents=[Document(id=f"{record['id']}/context/{i}", text=t) for i, t in enumerate(texts)],
                metadata=metadata,
            )
        )
    if not samples:
        raise DataError(path, "no questions in the file")
    return samples


@task("text-file")
def text_file(
    path: str,
    fields: dict[str, str] | None = None,
    split: str | None = None,
    judge: bool = False,
    system_prompt: str | None = None,
    max_tokens: int = 512,
) -> Task:
    """Free-text questions with a reference answer from your own file, scored by ROUGE-L (and a judge).

    Args:
        path: A JSONL, JSON, CSV or Parquet file, or a folder written by datasets' save_to_disk.
        fields: Item field → the file's name for it, e.g. {question: prompt, reference: answer}.
        split: The split of a datasets folder that holds several.
        judge: Also grade each answer against the reference with judge/reference-0-5 (role judge).
        system_prompt: Role prompt sent as the system message.
        max_tokens: Answer length budget.
    """
    samples = load_text_file(path, fields=fields, split=split)
    workflow = LongFormAnswer(system_prompt)
    scorers: list[Scorer] = [rouge_l()]
    if judge:
        scorers.append(ReferenceJudge())
    mapping = stable_hash([sorted((fields or {}).items()), split], 8)
    return Task(
        name="text-file",
        dataset=samples,
        workflow=workflow,
        scorers=scorers,
        version=f"file-{file_digest(path)}.{mapping}.{workflow.version}",
        generate_config=GenerateConfig(temperature=0.0, max_tokens=max_tokens),
        metadata={"source": str(path)},
        roles=("judge",) if judge else (),
    )


__all__ = ["FIELDS", "ReferenceJudge", "load_text_file", "reference_judge", "text_file"]
