"""Exports, the import of human scores into the run store, and serving the app."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from sqlalchemy.orm import Session

from .._util.errors import ConfigError, MissingDependencyError, UsageError
from ..store import RunStore
from ._answers import Rating, study_ratings
from ._models import Study, find_study, make_engine

"""The run-store table of human scores: one row per (run, sample, epoch, study, annotator, field, opponent);
``opponent`` is the other system of a pairwise comparison and empty for the other forms."""


def _ratings(db: str, study: str) -> tuple[Study, list[Rating], dict[str, str | None], dict[str, int]]:
    engine = make_engine(db)
    try:
        with Session(engine) as session:
            row = find_study(session, db, study)
            ratings = study_ratings(session, row)
            runs = {s.name: s.run_id for s in row.systems}
            epochs = {i.item_key: i.epoch for i in row.items}
            session.expunge_all()
    finally:
        engine.dispose()
    return row, ratings, runs, epochs


def export(db: str, study: str, path: str | Path | None = None, *, fmt: Literal["csv", "json"] = "csv") -> str:
    """Export every rating of ``study`` with system names revealed (for the study lead).

    Columns: study, form, item, annotator, field, system, opponent (pairwise), slot (where the
    candidate was shown), raw, value (numeric, see :class:`Rating`), seconds, answered_at, revisions.

    Args:
        db: Annotation database (SQLite path or ``postgresql://`` URL).
        study: The study's slug.
        path: File to write; None only returns the text.
        fmt: ``csv`` or ``json``.

    Returns:
        The exported text.
    """
    from ._admin import ratings_csv, ratings_json

    if fmt not in ("csv", "json"):
        raise ConfigError("format", f"must be 'csv' or 'json', got {fmt!r}")
    row, ratings, _, _ = _ratings(db, study)
    text = ratings_csv(row, ratings) if fmt == "csv" else ratings_json(row, ratings)
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text


def import_scores(db: str, study: str, store_path: str | Path) -> int:
    """Write the human scores of ``study`` into the run store's ``human_scores`` table.

    Only candidates that came from runs are written (file-based items have no run). Importing
    again replaces the earlier rows of the same annotator and field, so revisions made before the
    study closed win.

    Returns:
        The number of rows written.
    """
    row, ratings, runs, epochs = _ratings(db, study)
    store_path = Path(store_path)
    if not store_path.exists():
        raise UsageError(f"no run store at {store_path}")
    records = [
        (
            runs[r.system],
            r.item,
            epochs[r.item],
            row.slug,
            r.annotator,
            row.form,
            r.field,
            r.value,
            r.raw,
            r.opponent or "",
            r.answered_at,
        )
        for r in ratings
        if runs.get(r.system) is not None
    ]
    store = RunStore(store_path)
    try:
        store.put_human_scores(records)
    finally:
        store.close()
    return len(records)


def serve(
    db: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    workers: int = 1,
    behind_tls: bool = False,
    trusted_proxies: str = "",
) -> None:
    """Serve the annotation app with uvicorn until interrupted.

    Log records pass through :class:`~ebmeval.annotate._logs.RedactTokens`: no token, session id or
    CSRF token reaches the access or error log.

    Args:
        db: Annotation database (SQLite path or ``postgresql://`` URL; use PostgreSQL with several workers).
        host: Interface to bind; the default keeps the app on this machine (put a TLS proxy in front to share it).
        port: TCP port.
        workers: Uvicorn worker processes.
        behind_tls: Users reach the app over HTTPS through a proxy: ``Secure`` cookies and HSTS always.
        trusted_proxies: Comma-separated addresses whose ``X-Forwarded-Proto``/``X-Forwarded-For`` are
            believed (uvicorn's ``forwarded_allow_ips``): https reported by them also gives ``Secure``
            cookies and HSTS, and the slowdown on failed links counts the forwarded client address.
            Empty (the default): no proxy is trusted and the forwarded headers are ignored, from
            127.0.0.1 too (any local client, an SSH tunnel included, could send them).
    """
    try:
        import uvicorn
    except ImportError as exc:
        raise MissingDependencyError("Serving the annotation app", "uvicorn", "web") from exc
    from ._app import create_app
    from ._logs import redacted_log_config

    common = {
        "host": host,
        "port": port,
        "log_level": "info",
        "log_config": redacted_log_config(),
        "proxy_headers": bool(trusted_proxies.strip()),
        "forwarded_allow_ips": trusted_proxies.strip() or None,
    }
    if workers == 1:
        uvicorn.run(create_app(db, behind_tls=behind_tls), **common)  # type: ignore[arg-type]
    else:
        import os

        os.environ["EBMEVAL_ANNOTATE_DB"] = db
        os.environ["EBMEVAL_ANNOTATE_BEHIND_TLS"] = "1" if behind_tls else "0"
        uvicorn.run("ebmeval.annotate._app:app_from_env", factory=True, workers=workers, **common)  # type: ignore[arg-type]
