"""The web application: invitation links, onboarding, calibration, blinded tasks and the lead's dashboard.

Opening an invitation link (``/join/<token>``) or the admin link exchanges the token, once, for a
session id that is not the token; the session cookie carries only that id (the lead's scripts may
send ``Authorization: Bearer <admin token>`` instead). Every state-changing request carries a CSRF
token bound to the session (or to the bearer credential), whatever its headers. Pages and JSON show
candidates only by opaque per-assignment ids; system names reach only the admin exports.

The routes are in one router each: signing in (:mod:`._auth`), onboarding and calibration
(:mod:`._calibration`), the tasks (:mod:`._annotation`), the dashboard (:mod:`._reports`) and the
exports (:mod:`._admin`); what they share is in :mod:`._web`.
"""

from __future__ import annotations

from .._util.errors import MissingDependencyError

try:
    from fastapi import FastAPI, HTTPException
    from fastapi.staticfiles import StaticFiles
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingDependencyError("The annotation app", "fastapi", "web") from exc
from pydantic import ValidationError
from sqlalchemy.orm import sessionmaker

from . import _admin, _annotation, _auth, _calibration, _reports
from ._limits import BodyLimit
from ._logs import install_log_redaction
from ._models import make_engine
from ._security import signing_secret
from ._throttle import FailureThrottle
from ._web import HERE, MAX_BODY, Web, http_error, invalid_input, page_templates, security_headers

ROUTERS = (_auth.router, _calibration.router, _annotation.router, _reports.router, _admin.router)
"""Every router of the app, in the order their routes are matched."""


def create_app(db: str, *, behind_tls: bool = False, throttle: FailureThrottle | None = None) -> FastAPI:
    """The annotation app over the annotation database ``db`` (SQLite path or ``postgresql://`` URL).

    Args:
        db: The annotation database.
        behind_tls: Served through a TLS proxy: cookies are ``Secure`` and responses carry HSTS even
            when the proxy does not say so. Without it, requests whose scheme is https (uvicorn
            takes it from ``X-Forwarded-Proto`` sent by a trusted proxy, see ``forwarded_allow_ips``)
            get both.
        throttle: The slowdown on failed token lookups (default: :class:`FailureThrottle`'s defaults).
    """
    install_log_redaction()
    sessions = sessionmaker(make_engine(db), expire_on_commit=False)
    with sessions() as s:
        secret = signing_secret(s)
    app = FastAPI(title="ebmeval annotation", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.web = Web(sessions, secret, behind_tls, throttle or FailureThrottle(), page_templates())
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    app.add_middleware(BodyLimit, limit=MAX_BODY)  # inside the security headers: its 413s get them too
    app.middleware("http")(security_headers)
    app.exception_handler(HTTPException)(http_error)
    app.exception_handler(ValidationError)(invalid_input)
    for router in ROUTERS:
        app.include_router(router)
    return app


def app_from_env() -> FastAPI:
    """The app over ``EBMEVAL_ANNOTATE_DB`` (the factory uvicorn workers import).

    ``EBMEVAL_ANNOTATE_BEHIND_TLS=1`` sets ``behind_tls``.
    """
    import os

    return create_app(
        os.environ["EBMEVAL_ANNOTATE_DB"], behind_tls=os.environ.get("EBMEVAL_ANNOTATE_BEHIND_TLS") == "1"
    )
