"""Multiple-choice and yes/no questions from the user's own file (JSONL, JSON, CSV, Parquet, a datasets folder)."""

from __future__ import annotations

import hashlib
import json
import string
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._util.errors import ConfigError, DataError
from .._util.hashing import stable_hash
from ..tasks import Document, RowPlace, Sample, Task, read_rows, task
from ..workflows import Strategy
from ._mcq import mcq_task

FIELDS = ("id", "question", "options", "answer", "context", "metadata")
"""The fields of an item; ``fields=`` maps them to a file's own names."""
YES_NO = ("yes", "no")


def load_mcq_file(
    path: str | Path, *, fields: Mapping[str, str] | None = None, split: str | None = None
) -> list[Sample]:
    """Samples from a file of items ``{"id", "question", "options", "answer", "context"?, "metadata"?}``.

    The file is JSONL, JSON, CSV, Parquet or a ``datasets`` folder (:func:`~ebmeval.tasks.read_rows`);
    ``fields`` maps an item field to the file's name for it (``{"question": "prompt"}``).
    ``options`` is a list (lettered A, B, …) or a mapping letter → text (letters ignore case, so
    ``"A"`` and ``"a"`` together are refused); in a CSV file a JSON list or object, or columns
    named ``A``, ``B``, …; left out entirely, the item is a yes/no question (yes/no/maybe when an
    answer of the file is "maybe"). ``answer`` is a letter, an option's text (ignoring case) or a
    list of either (a CSV cell may hold a JSON list); ``context`` a string or a list of strings.
    Every problem is a ``DataError`` naming the file, line or row, and field.
    """
    records = [(place, _mapped(record, fields or {}, place)) for place, record in read_rows(path, split=split)]
    yes_no = _yes_no_options(records)
    samples: list[Sample] = []
    seen: set[str] = set()
    for place, record in records:
        for key in ("id", "question", "answer"):
            if key not in record:
                raise place.error("missing field", field=key)
        sample_id = _sample_id(record["id"], place)
        if sample_id in seen:
            raise place.error("duplicate id", field="id", value=sample_id)
        seen.add(sample_id)
        question = record["question"]
        if not isinstance(question, str) or not question.strip():
            raise place.error("expected a non-empty string", field="question", value=question)
        choices = _choices(record, place, yes_no)
        raw_answer = _decoded(record["answer"], place, "answer", list)
        letters = [_letter(a, choices, place) for a in (raw_answer if isinstance(raw_answer, list) else [raw_answer])]
        if not letters:
            raise place.error("expected a letter or a non-empty list of letters", field="answer", value=[])
        context = _decoded(record.get("context") or [], place, "context", list)
        texts = [context] if isinstance(context, str) else context
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise place.error("expected a string or a list of strings", field="context", value=context)
        metadata = _decoded(record.get("metadata", {}), place, "metadata", dict)
        if not isinstance(metadata, dict):
            raise place.error("expected an object", field="metadata", value=metadata)
        samples.append(
            Sample(
                id=sample_id,
                input=question,
                target=letters if isinstance(raw_answer, list) else letters[0],
                choices=choices,
                documents=[Document(id=f"{sample_id}/context/{i}", text=t) for i, t in enumerate(texts)],
                metadata=metadata,
            )
        )
    if not samples:
        raise DataError(path, "no questions in the file")
    return samples


def _mapped(record: dict[str, Any], fields: Mapping[str, str], place: RowPlace) -> dict[str, Any]:
    """``record`` with each mapped field under its item name (``fields``: item name → the file's name)."""
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise ConfigError("fields", f"unknown item field {unknown[0]!r}; item fields: {', '.join(FIELDS)}")
    mapped = dict(record)
    for name, column in fields.items():
        if column not in record:
            raise place.error(f"missing field (mapped to '{name}'); the record has {sorted(record)}", field=column)
        mapped[name] = record[column]
    return mapped


def _yes_no_options(records: list[tuple[RowPlace, dict[str, Any]]]) -> dict[str, str]:
    """The options of items that give none: yes/no, with maybe when an answer of the file is maybe."""
    answers = {
        str(r.get("answer", "")).strip().lower() for _p, r in records if _letter_columns(r) == {} and "options" not in r
    }
    labels = (*YES_NO, "maybe") if "maybe" in answers else YES_NO
    return dict(zip(string.ascii_uppercase, labels, strict=False))


def _letter_columns(record: dict[str, Any]) -> dict[str, str]:
    """Options given as columns ``A``, ``B``, … (a CSV file's way), in letter order."""
    return {k: str(record[k]) for k in string.ascii_uppercase if isinstance(record.get(k), str | int | float)}


def _choices(record: dict[str, Any], place: RowPlace, yes_no: dict[str, str]) -> dict[str, str]:
    if "options" in record:
        return _options(_decoded(record["options"], place, "options", (list, dict)), place)
    return _letter_columns(record) or yes_no


def _decoded(value: Any, place: RowPlace, field: str, kinds: type | tuple[type, ...]) -> Any:
    """A CSV cell holding JSON of ``kinds`` (``["A", "C"]``) read as such; anything else as it is."""
    if not isinstance(value, str) or not value.lstrip().startswith(("[", "{")):
        return value
    try:
        decoded = json.loads(value)
    except ValueError:
        raise place.error("looks like JSON but cannot be read as JSON", field=field, value=value) from None
    return decoded if isinstance(decoded, kinds) else value


def _letter(answer: Any, choices: dict[str, str], place: RowPlace) -> str:
    """An answer as its option letter: the letter itself, or the text of exactly one option (ignoring case)."""
    if isinstance(answer, str):
        letter = answer.strip().upper()
        if letter in choices:
            return letter
        matches = [k for k, text in choices.items() if text.strip().casefold() == answer.strip().casefold()]
        if len(matches) == 1:
            return matches[0]
    raise place.error(f"not one of the options {list(choices)} nor the text of one", field="answer", value=answer)


def _sample_id(raw: Any, place: RowPlace) -> str:
    """A record's id: a non-empty string or an integer (never null, a boolean, a number with a fraction)."""
    if isinstance(raw, str) and raw.strip():
        return raw
    if isinstance(raw, int) and not isinstance(raw, bool):
        return str(raw)
    raise place.error("expected a non-empty string or an integer", field="id", value=raw)


def _options(raw: Any, place: RowPlace) -> dict[str, str]:
    if isinstance(raw, list) and raw and all(isinstance(o, str) for o in raw) and len(raw) <= 26:
        return dict(zip(string.ascii_uppercase, raw, strict=False))
    if isinstance(raw, dict) and raw and all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        options: dict[str, str] = {}
        for key, text in raw.items():
            letter = key.strip().upper()
            if letter in options:
                raise place.error(
                    f"two options are letter {letter} (letters ignore case and spaces)", field="options", value=raw
                )
            options[letter] = text
        return options
    raise place.error("expected a list of option texts or an object letter → text", field="options", value=raw)


def file_digest(path: str | Path, length: int = 12, *, named: bool = True) -> str:
    """A short sha256 of a file, or of every file of a folder (names and bytes, in name order), read in blocks.

    ``length`` hex digits are kept. ``named=False`` hashes a lone file's bytes alone, without the
    empty name before them (the digests ``factuality/summaries`` records). A file that cannot be
    read is a ``DataError`` naming it.
    """
    source = Path(path)
    digest = hashlib.sha256()
    for file in sorted(p for p in source.rglob("*") if p.is_file()) if source.is_dir() else [source]:
        if named:
            digest.update(str(file.relative_to(source) if source.is_dir() else "").encode() + b"\0")
        try:
            with file.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
        except OSError as exc:
            raise DataError(file, f"cannot read: {exc.strerror}") from None
    return digest.hexdigest()[:length]


@task("mcq-file")
def mcq_file(
    path: str,
    strategy: Strategy = "direct",
    multi: bool = False,
    fields: dict[str, str] | None = None,
    split: str | None = None,
) -> Task:
    """Multiple-choice or yes/no questions from your own file, scored by accuracy (or multi-answer metrics).

    Args:
        path: A JSONL, JSON, CSV or Parquet file, or a folder written by datasets' save_to_disk.
        strategy: How the model is asked (direct or cot).
        multi: Items may have several right answers.
        fields: Item field → the file's name for it, e.g. {question: prompt, answer: label}.
        split: The split of a datasets folder that holds several.
    """
    samples = load_mcq_file(path, fields=fields, split=split)
    mapping = f".{stable_hash([sorted((fields or {}).items()), split], 8)}" if fields or split else ""
    return mcq_task(
        "mcq-file",
        samples,
        data_version=f"file-{file_digest(path)}{mapping}",
        metadata={"source": str(path)},
        strategy=strategy,
        multi=multi,
    )
