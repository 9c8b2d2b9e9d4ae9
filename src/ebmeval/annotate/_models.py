"""The annotation database: SQLAlchemy 2 models and engine setup (SQLite by default, PostgreSQL shared)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from sqlalchemy import (
    JSON,
    Engine,
    ForeignKey,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    event,
    inspect,
    select,
    text,
)
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship

from .._util.errors import UsageError


def utcnow() -> datetime:
    """The current time in UTC, timezone-aware."""
    return datetime.now(UTC)


def aware(value: datetime) -> datetime:
    """``value`` as a UTC-aware datetime (SQLite returns naive datetimes for values stored as UTC)."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


Id = Annotated[int, mapped_column(primary_key=True)]
"""An integer primary key."""
StudyId = Annotated[int, mapped_column(ForeignKey("studies.id"))]
"""The study a row belongs to."""
ItemId = Annotated[int, mapped_column(ForeignKey("items.id"))]
"""An item of the study."""
AnnotatorId = Annotated[int, mapped_column(ForeignKey("annotators.id"))]
"""An annotator of the study."""
AssignmentId = Annotated[int, mapped_column(ForeignKey("assignments.id"))]
"""One annotator's task."""
Sha256 = Annotated[str, mapped_column(String(64), unique=True)]
"""The SHA-256 hex digest of a credential (token or session id), unique in its table."""
Timestamp = Annotated[datetime, mapped_column(default=utcnow)]
"""A UTC time, by default the moment the row is inserted."""


class Base(DeclarativeBase):
    """Declarative base of the annotation tables."""

    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Meta(Base):
    """Key-value settings of the database (the CSRF signing secret)."""

    __tablename__ = "annotate_meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class Study(Base):
    """A study: one form, its systems, items, annotators and assignments."""

    __tablename__ = "studies"
    id: Mapped[Id]
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    title: Mapped[str] = mapped_column(Text)
    form: Mapped[str] = mapped_column(String(32))
    checklist: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    k: Mapped[int]
    seed: Mapped[int]
    pass_threshold: Mapped[float]
    calibration_size: Mapped[int | None] = mapped_column(nullable=True)
    """Gold examples per calibration attempt (None: all of them, so one attempt)."""
    admin_hash: Mapped[Sha256]
    status: Mapped[str] = mapped_column(String(16), default="open")
    created_at: Mapped[Timestamp]
    systems: Mapped[list[System]] = relationship(back_populates="study", order_by="System.id")
    items: Mapped[list[Item]] = relationship(back_populates="study", order_by="Item.id")
    annotators: Mapped[list[Annotator]] = relationship(back_populates="study", order_by="Annotator.id")
    calibration: Mapped[list[CalibrationItem]] = relationship(order_by="CalibrationItem.position")


class System(Base):
    """A system whose outputs are scored; its name is never shown to annotators."""

    __tablename__ = "systems"
    __table_args__ = (UniqueConstraint("study_id", "name"),)
    id: Mapped[Id]
    study_id: Mapped[StudyId]
    name: Mapped[str] = mapped_column(String(200))
    run_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    study: Mapped[Study] = relationship(back_populates="systems")


class Item(Base):
    """A reference, optionally its question and source abstracts, and the candidates of every system."""

    __tablename__ = "items"
    __table_args__ = (UniqueConstraint("study_id", "item_key"),)
    id: Mapped[Id]
    study_id: Mapped[StudyId]
    item_key: Mapped[str] = mapped_column(String(300))
    question: Mapped[str | None] = mapped_column(Text, nullable=True)
    reference: Mapped[str] = mapped_column(Text)
    sources: Mapped[list[Any]] = mapped_column(JSON, default=list)
    epoch: Mapped[int] = mapped_column(default=0)
    steps: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    """The item's own expert steps (the ``expert-steps`` form), else None."""
    study: Mapped[Study] = relationship(back_populates="items")
    candidates: Mapped[list[Candidate]] = relationship(order_by="Candidate.id")


class Candidate(Base):
    """The output of one system for one item."""

    __tablename__ = "candidates"
    __table_args__ = (UniqueConstraint("item_id", "system_id"),)
    id: Mapped[Id]
    item_id: Mapped[ItemId]
    system_id: Mapped[int] = mapped_column(ForeignKey("systems.id"))
    text: Mapped[str] = mapped_column(Text)
    system: Mapped[System] = relationship()


class Annotator(Base):
    """An invited expert; only the SHA-256 of the invitation token is kept (replaced when used or revoked)."""

    __tablename__ = "annotators"
    __table_args__ = (UniqueConstraint("study_id", "name"),)
    id: Mapped[Id]
    study_id: Mapped[StudyId]
    name: Mapped[str] = mapped_column(String(200))
    token_hash: Mapped[Sha256]
    used_hash: Mapped[str | None] = mapped_column(String(64), nullable=True)
    """The hash of the invitation token once it was exchanged (it opens nothing, see ``_app.exchange``)."""
    committed_at: Mapped[datetime | None] = mapped_column(nullable=True)
    calibration_score: Mapped[float | None] = mapped_column(nullable=True)
    calibration_passed_at: Mapped[datetime | None] = mapped_column(nullable=True)
    study: Mapped[Study] = relationship(back_populates="annotators")
    assignments: Mapped[list[Assignment]] = relationship(order_by="Assignment.position")


class Assignment(Base):
    """One task: an item shown to one annotator at one place in their sequence."""

    __tablename__ = "assignments"
    __table_args__ = (UniqueConstraint("annotator_id", "position"), UniqueConstraint("annotator_id", "item_id"))
    id: Mapped[Id]
    annotator_id: Mapped[AnnotatorId]
    item_id: Mapped[ItemId]
    position: Mapped[int]
    opened_at: Mapped[datetime | None] = mapped_column(nullable=True)
    completed_at: Mapped[datetime | None] = mapped_column(nullable=True)
    item: Mapped[Item] = relationship()
    shown: Mapped[list[Shown]] = relationship(order_by="Shown.slot")
    answers: Mapped[list[Answer]] = relationship(order_by="Answer.id")


class Shown(Base):
    """A candidate as one assignment shows it: its slot and the opaque id the page uses for it."""

    __tablename__ = "shown"
    __table_args__ = (UniqueConstraint("assignment_id", "slot"),)
    id: Mapped[Id]
    assignment_id: Mapped[AssignmentId]
    candidate_id: Mapped[int] = mapped_column(ForeignKey("candidates.id"))
    slot: Mapped[int]
    public_id: Mapped[str] = mapped_column(String(32), unique=True)
    candidate: Mapped[Candidate] = relationship()


class Answer(Base):
    """The current answer to one field for one target (a shown candidate's public id, or ``task``)."""

    __tablename__ = "answers"
    __table_args__ = (UniqueConstraint("assignment_id", "target", "field"),)
    id: Mapped[Id]
    assignment_id: Mapped[AssignmentId]
    target: Mapped[str] = mapped_column(String(32))
    field: Mapped[str] = mapped_column(String(64))
    value: Mapped[str] = mapped_column(String(32))
    revisions: Mapped[int] = mapped_column(default=1)
    created_at: Mapped[Timestamp]
    updated_at: Mapped[Timestamp]


class CalibrationItem(Base):
    """A gold example: candidates with reference answers, a justification and passages to highlight."""

    __tablename__ = "calibration_items"
    id: Mapped[Id]
    study_id: Mapped[StudyId]
    position: Mapped[int]
    reference: Mapped[str] = mapped_column(Text)
    candidates: Mapped[list[Any]] = mapped_column(JSON)
    gold: Mapped[dict[str, Any]] = mapped_column(JSON)
    justification: Mapped[str] = mapped_column(Text)
    highlights: Mapped[list[Any]] = mapped_column(JSON, default=list)


class CalibrationAnswer(Base):
    """An annotator's answer on a gold example; targets are ``c<slot>`` or ``task``."""

    __tablename__ = "calibration_answers"
    __table_args__ = (UniqueConstraint("annotator_id", "calibration_item_id", "target", "field"),)
    id: Mapped[Id]
    annotator_id: Mapped[AnnotatorId]
    calibration_item_id: Mapped[int] = mapped_column(ForeignKey("calibration_items.id"))
    target: Mapped[str] = mapped_column(String(32))
    field: Mapped[str] = mapped_column(String(64))
    value: Mapped[str] = mapped_column(String(32))


class AccessSession(Base):
    """A signed-in browser: the SHA-256 of its session id, for an annotator or (``annotator_id`` None) the lead.

    Session ids are issued by the one-time exchange of an invitation or admin link; they are not
    the invitation token, so the cookie never holds a long-lived credential. Revoking a link
    deletes its sessions.
    """

    __tablename__ = "annotate_sessions"
    id: Mapped[Id]
    sid_hash: Mapped[Sha256]
    study_id: Mapped[StudyId]
    annotator_id: Mapped[int | None] = mapped_column(ForeignKey("annotators.id"), nullable=True)
    created_at: Mapped[Timestamp]
    expires_at: Mapped[datetime]
    study: Mapped[Study] = relationship()
    annotator: Mapped[Annotator | None] = relationship()


def database_url(db: str) -> str:
    """A SQLAlchemy URL: a plain path becomes SQLite; ``postgresql://`` uses the psycopg 3 driver."""
    if "://" not in db:
        return f"sqlite:///{db}"
    if db.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + db.split("://", 1)[1]
    return db


def make_engine(db: str) -> Engine:
    """An engine for ``db`` with the tables created."""
    url = database_url(db)
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(conn: Any, _record: Any) -> None:
            # WAL lets the dashboard read while annotators write; foreign keys are off by default in SQLite.
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA foreign_keys=ON")

    else:
        engine = create_engine(url, pool_size=10, max_overflow=20, pool_pre_ping=True)
    Base.metadata.create_all(engine)
    _add_new_columns(engine)
    return engine


def _add_new_columns(engine: Engine) -> None:
    """Add the nullable columns newer versions brought to a database made by an older one.

    Several workers may start at once: a column another one added meanwhile is left as it is.
    """
    for table in Base.metadata.sorted_tables:
        have = {c["name"] for c in inspect(engine).get_columns(table.name)}
        for column in table.columns:
            if column.name in have or not column.nullable:
                continue
            kind = column.type.compile(dialect=engine.dialect)
            try:
                with engine.begin() as conn:
                    conn.execute(text(f'ALTER TABLE {table.name} ADD COLUMN "{column.name}" {kind}'))
            except DBAPIError:
                if column.name not in {c["name"] for c in inspect(engine).get_columns(table.name)}:
                    raise


def find_study(session: Session, db: str, slug: str) -> Study:
    """The study named ``slug``; ``UsageError`` listing the studies of ``db`` when there is none."""
    row = session.scalar(select(Study).where(Study.slug == slug))
    if row is None:
        known = ", ".join(session.scalars(select(Study.slug))) or "none"
        raise UsageError(f"no study '{slug}' in {db} (studies: {known})")
    return row
