"""Negated evidence: abstracts whose findings a model has inverted, generated once and shared.

Negations live in their own SQLite file, ``negations.sqlite`` next to the response cache
(``$EBMEVAL_CACHE_DIR`` …), keyed by (sha256 of the abstract, negating model, prompt id).
Not in the run store, because a run store keys everything by run: a negation made while
evaluating one model must be reused unchanged when another model is evaluated on the same
negated evidence, in any run or store, so that models are compared on identical inputs. Not
only in the response cache, because that cache is keyed by the full request and cannot be
listed or exported by abstract. Each use is also recorded as a ``negation/<id>`` step of the
sample, so ``ebmeval show`` displays the text the model saw.

Each negation is checked once, by the model playing ``negation_checker`` (by default the
negator's model): asked whether the rewrite inverts the original's findings, it answers
yes or no. The verdict (``inverted``, ``not inverted`` or ``unchecked`` when the reply was
neither) is stored with the negation. A negation judged ``not inverted`` is never used as
evidence: the sample fails with :class:`NegationCheckError`, until ``ebmeval synthesis
negations redo`` marks it to be made again (sampled, so the rewrite differs) and the run is
resumed. An unchecked negation is used, and counted in the sample's metadata.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ValidationError

from .._util import sqlite
from .._util.errors import DataError, EbmevalError
from .._util.hashing import stable_hash
from ..models import GenerateConfig, Model, default_cache_dir
from ..prompts import PromptTemplate
from ..tasks import Call, Document, SampleContext, is_refusal, read_jsonl
from ._prompts import NEGATE, NEGATION_CHECK

_WHAT = "negation store"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS negations ("
    " abstract_hash TEXT NOT NULL, negator_key TEXT NOT NULL, prompt TEXT NOT NULL,"
    " negator TEXT NOT NULL, document_id TEXT NOT NULL, abstract TEXT NOT NULL, negated TEXT NOT NULL,"
    " created_at TEXT NOT NULL, verdict TEXT, attempt INTEGER NOT NULL DEFAULT 0,"
    " PRIMARY KEY (abstract_hash, negator_key, prompt))"
)


NEGATE_CALL = Call(
    "synthesis/negate",
    "evidence",
    temperature=0.0,
    about="rewrites one abstract with its findings inverted; budget 2 x the abstract's tokens + 64",
)
"""The negation call: greedy, so one (abstract, model, prompt) has one negation; a cut-off or
refused rewrite is an error, never stored."""


CHECK_CALL = Call(
    "synthesis/negation-check",
    "verdict",
    temperature=0.0,
    max_tokens=4,
    prefix=True,
    about="asks whether a negation inverts the findings of its abstract; reply Yes or No",
)
"""The negation check: greedy, a one-word reply read by its first word."""

INVERTED, NOT_INVERTED, UNCHECKED, REDO = "inverted", "not inverted", "unchecked", "redo"
"""The verdicts stored with a negation (``redo``: marked by ``ebmeval synthesis negations redo``)."""

REDO_TEMPERATURE = 0.7
"""The temperature of a negation made again: greedy decoding would repeat the failed rewrite."""

_ANSWER = re.compile(r"^\W*(yes|no)\b", re.IGNORECASE)


class NegationCheckError(EbmevalError):
    """A stored negation was judged not to invert the findings of its abstract."""


def negation_config(abstract_tokens: int, attempt: int = 0) -> GenerateConfig:
    """The settings of a negation call.

    Greedy, so one (abstract, model, prompt) has one negation, with room for twice the
    abstract's ``abstract_tokens`` plus 64, since the rewrite is about as long as the original
    (a thinking negator gets room for its trace on top, see :class:`~ebmeval.tasks.Call`).
    A negation made again after a failed check (``attempt`` ≥ 1) is sampled at
    :data:`REDO_TEMPERATURE` with seed ``attempt``, so it differs from the failed one.
    """
    budget = 2 * abstract_tokens + 64
    if attempt:
        return GenerateConfig(temperature=REDO_TEMPERATURE, seed=attempt, max_tokens=budget)
    return GenerateConfig(temperature=0.0, max_tokens=budget)


def parse_check(text: str) -> str:
    """The verdict of a check reply: ``inverted`` (yes), ``not inverted`` (no), else ``unchecked``."""
    found = _ANSWER.match(text.strip())
    if found is None:
        return UNCHECKED
    return INVERTED if found.group(1).lower() == "yes" else NOT_INVERTED


class Negation(BaseModel):
    """One abstract with its findings inverted."""

    abstract_hash: str
    """sha256 of the original abstract text."""
    negator: str
    """Name of the negating model."""
    negator_key: str
    """Hash of the negating model's identity (name, file hash …)."""
    prompt: str
    """Id of the negation prompt (``synthesis/negate@v1``)."""
    document_id: str
    """Id of the document the abstract came from when it was first negated."""
    abstract: str
    negated: str
    created_at: str
    verdict: str | None = None
    """The negation check: ``inverted``, ``not inverted``, ``unchecked``, ``redo``; ``None`` before it ran."""
    attempt: int = 0
    """How many times ``ebmeval synthesis negations redo`` asked for this negation again."""


def default_negation_path() -> Path:
    """``negations.sqlite`` in the response-cache folder."""
    return default_cache_dir() / "negations.sqlite"


class NegationStore:
    """Negations by (abstract, negating model, prompt), in a SQLite file shared by every run."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_negation_path()
        self._lock = threading.Lock()
        self._db = sqlite.open_table(self.path, what=_WHAT, schema=_SCHEMA)
        with sqlite.translate(self.path, _WHAT):
            _add_columns(self._db)

    def get(self, abstract: str, negator_key: str, prompt: str) -> Negation | None:
        """The stored negation of ``abstract`` by that model and prompt."""
        with self._lock, sqlite.translate(self.path, _WHAT, "FROM negations"):
            row = self._db.execute(
                f"SELECT {_COLUMNS} FROM negations WHERE abstract_hash = ? AND negator_key = ? AND prompt = ?",
                (stable_hash(abstract), negator_key, prompt),
            ).fetchone()
        return _negation(row) if row else None

    def put(self, negation: Negation, *, replace: bool = False) -> None:
        """Store ``negation`` (the first one stored for its key wins, unless ``replace``)."""
        verb = "REPLACE" if replace else "IGNORE"
        with self._lock, sqlite.translate(self.path, _WHAT, "INTO negations"):
            self._db.execute(
                f"INSERT OR {verb} INTO negations ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    negation.abstract_hash,
                    negation.negator,
                    negation.negator_key,
                    negation.prompt,
                    negation.document_id,
                    negation.abstract,
                    negation.negated,
                    negation.created_at,
                    negation.verdict,
                    negation.attempt,
                ),
            )

    def set_verdict(self, negation: Negation, verdict: str) -> None:
        """Store the check's ``verdict`` on ``negation``."""
        with self._lock, sqlite.translate(self.path, _WHAT, "UPDATE negations"):
            self._db.execute(
                "UPDATE negations SET verdict = ? WHERE abstract_hash = ? AND negator_key = ? AND prompt = ?",
                (verdict, negation.abstract_hash, negation.negator_key, negation.prompt),
            )

    def redo(self, *, unchecked: bool = False) -> int:
        """Mark the negations judged ``not inverted`` (and ``unchecked`` ones, if asked) to be made again.

        The next run that needs one makes it again, sampled (see :func:`negation_config`), and
        checks it. Returns how many were marked.
        """
        verdicts = (NOT_INVERTED, UNCHECKED) if unchecked else (NOT_INVERTED,)
        with self._lock, sqlite.translate(self.path, _WHAT, "UPDATE negations"):
            marks = ",".join("?" * len(verdicts))
            marked = self._db.execute(
                f"UPDATE negations SET verdict = ?, attempt = attempt + 1 WHERE verdict IN ({marks})", (REDO, *verdicts)
            ).rowcount
        return int(marked)

    def __iter__(self) -> Iterator[Negation]:
        with self._lock, sqlite.translate(self.path, _WHAT, "FROM negations"):
            rows = self._db.execute(f"SELECT {_COLUMNS} FROM negations ORDER BY rowid").fetchall()
        return iter([_negation(r) for r in rows])

    def __len__(self) -> int:
        with self._lock, sqlite.translate(self.path, _WHAT, "FROM negations"):
            return int(self._db.execute("SELECT count(*) FROM negations").fetchone()[0])

    def export(self, path: str | Path, *, negator: str | None = None) -> int:
        """Write every negation (of one negating model, if named) as JSONL; returns how many."""
        count = 0
        with open(path, "w", encoding="utf-8") as handle:
            for negation in self:
                if negator is None or negation.negator == negator:
                    handle.write(negation.model_dump_json() + "\n")
                    count += 1
        return count

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()


_COLUMNS = "abstract_hash, negator, negator_key, prompt, document_id, abstract, negated, created_at, verdict, attempt"


def _add_columns(db: sqlite3.Connection) -> None:
    """Give a store made before negation checks its ``verdict`` and ``attempt`` columns."""
    present = {row[1] for row in db.execute("PRAGMA table_info(negations)")}
    if "verdict" not in present:
        db.execute("ALTER TABLE negations ADD COLUMN verdict TEXT")
    if "attempt" not in present:
        db.execute("ALTER TABLE negations ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0")


def _negation(row: Sequence[object]) -> Negation:
    return Negation(**dict(zip([c.strip() for c in _COLUMNS.split(",")], row, strict=True)))


def export_negations(path: str | Path, *, store: str | Path | None = None, negator: str | None = None) -> int:
    """Export the negation store (default: :func:`default_negation_path`) to JSONL at ``path``."""
    negations = NegationStore(store)
    try:
        return negations.export(path, negator=negator)
    finally:
        negations.close()


async def negate_documents(
    ctx: SampleContext,
    documents: Sequence[Document],
    store: NegationStore,
    *,
    role: str = "negator",
    checker: str = "negation_checker",
    prompt: PromptTemplate = NEGATE,
) -> tuple[list[Document], list[dict[str, object]]]:
    """``documents`` with their findings inverted by the model playing ``role``, asked with ``prompt``.

    A negation already in ``store`` (same abstract, model and prompt) is reused without a
    model call; otherwise it is generated under step ``negate/<id>`` as :data:`NEGATE_CALL`
    and stored (a reply cut off or refused is an error, and nothing is stored; one stored empty
    or as a refusal by an older release, or marked ``redo``, is made again). A negation not yet
    checked is checked by the model playing ``checker`` (the ``role`` model when the context has
    none) under step ``negation-check/<id>`` as :data:`CHECK_CALL`, and the verdict stored.
    Every document's negation is recorded as step ``negation/<id>``. Returns the negated
    documents and one record per document (``id``, ``cached``, ``negator``, ``prompt``, ``check``).

    Raises:
        NegationCheckError: A negation was judged not to invert its abstract's findings.
    """
    model = ctx.model(role)
    negator = _Negator(role, model, stable_hash(model.api.describe(), 16), prompt)
    checker = checker if checker in ctx.models else role
    negated, records = [], []
    for document in documents:
        found = negator.stored(store, document)
        cached = found is not None and not _stale(found)
        if found is None or not cached:
            found = await _negate(ctx, store, document, negator, stale=found)
        found = await _checked(ctx, store, document.id, found, checker)
        text, record = _record_use(ctx, document.id, found, cached)
        negated.append(document.model_copy(update={"text": text}))
        records.append(record)
    return negated, records


@dataclass(frozen=True)
class _Negator:
    """The model playing the negating ``role``, its identity ``key`` and the ``prompt`` it is asked with."""

    role: str
    model: Model
    key: str
    prompt: PromptTemplate

    def stored(self, store: NegationStore, document: Document) -> Negation | None:
        """The negation of ``document`` in ``store`` by this model and prompt."""
        return store.get(document.text, self.key, self.prompt.id)


def _stale(negation: Negation) -> bool:
    """Whether a stored negation must be made again: empty or a refusal (stored by an older release), or marked redo."""
    return not negation.negated.strip() or is_refusal(negation.negated) or negation.verdict == REDO


async def _negate(
    ctx: SampleContext, store: NegationStore, document: Document, negator: _Negator, *, stale: Negation | None
) -> Negation:
    """Generate the negation of ``document`` and store it (replacing ``stale``); the negation stored."""
    attempt = stale.attempt if stale is not None else 0
    output = await ctx.generate(
        f"negate/{document.id}",
        negator.prompt.render(abstract=document.text),
        negation_config(await negator.model.acount_tokens(document.text), attempt),
        role=negator.role,
        call=NEGATE_CALL,
    )
    made = Negation(
        abstract_hash=stable_hash(document.text),
        negator=negator.model.name,
        negator_key=negator.key,
        prompt=negator.prompt.id,
        document_id=document.id,
        abstract=document.text,
        negated=output.text.strip(),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        attempt=attempt,
    )
    store.put(made, replace=stale is not None)
    # a concurrent sample may have stored the same abstract first: use the stored text
    return negator.stored(store, document) or made


async def _checked(
    ctx: SampleContext, store: NegationStore, document_id: str, negation: Negation, checker: str
) -> Negation:
    """``negation`` with its verdict, checked by the model playing ``checker`` (and stored) if it never was.

    Raises:
        NegationCheckError: The verdict is ``not inverted``.
    """
    if negation.verdict is None:
        negation = negation.model_copy(update={"verdict": await check_negation(ctx, document_id, negation, checker)})
        store.set_verdict(negation, str(negation.verdict))
    if negation.verdict == NOT_INVERTED:
        raise NegationCheckError(
            f"the negation of document {document_id} by {negation.negator} ({negation.prompt}) does not invert its "
            "findings, says the negation check; `ebmeval synthesis negations redo` has it made again on resume"
        )
    return negation


def _record_use(
    ctx: SampleContext, document_id: str, negation: Negation, cached: bool
) -> tuple[str, dict[str, object]]:
    """Record ``negation`` as step ``negation/<id>`` of the sample; the text the model sees and the document's record.

    A resumed sample gets the text and verdict its interrupted run recorded.
    """
    seen = ctx.record(
        f"negation/{document_id}",
        {
            "negated": negation.negated,
            "negator": negation.negator,
            "prompt": negation.prompt,
            "cached": cached,
            "check": negation.verdict,
        },
    )
    record: dict[str, object] = {
        "id": document_id,
        "cached": cached,
        "negator": negation.negator,
        "prompt": negation.prompt,
        "check": seen.get("check", UNCHECKED),
    }
    return str(seen["negated"]), record


async def check_negation(ctx: SampleContext, document_id: str, negation: Negation, role: str) -> str:
    """Whether the model playing ``role`` judges ``negation`` to invert its abstract (:func:`parse_check`)."""
    output = await ctx.generate(
        f"negation-check/{document_id}",
        NEGATION_CHECK.render(abstract=negation.abstract, negated=negation.negated),
        role=role,
        call=CHECK_CALL,
    )
    return parse_check(output.text)


def check_counts(records: Sequence[dict[str, object]]) -> dict[str, int]:
    """How many of a sample's negation ``records`` the check found inverted, and left unchecked."""
    return {verdict: sum(r["check"] == verdict for r in records) for verdict in (INVERTED, UNCHECKED)}


def read_negations(path: str | Path) -> list[Negation]:
    """Negations from a JSONL export (to import into another store with :meth:`NegationStore.put`)."""
    negations = []
    for number, record in read_jsonl(path):
        try:
            negations.append(Negation.model_validate(record))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise DataError(path, first["msg"], line=number, field=field) from None
    return negations
