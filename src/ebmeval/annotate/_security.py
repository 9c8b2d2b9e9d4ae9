"""Invitation tokens, their hashes and CSRF tokens."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ._models import Meta

TOKEN_BYTES = 32
"""Entropy of invitation and admin tokens (256 bits, URL-safe base64)."""


def new_token() -> str:
    """A fresh unguessable token."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def hash_token(token: str) -> str:
    """SHA-256 hex digest of ``token``; only this is stored, so a leaked database grants no access."""
    return hashlib.sha256(token.encode()).hexdigest()


def signing_secret(session: Session) -> str:
    """The database's CSRF signing secret, created on first use (shared by every server process)."""
    row = session.get(Meta, "csrf_secret")
    if row is None:
        session.add(Meta(key="csrf_secret", value=secrets.token_hex(32)))
        try:
            session.commit()
        except IntegrityError:
            # Another process created it first; use theirs.
            session.rollback()
        row = session.get(Meta, "csrf_secret")
        if row is None:
            raise RuntimeError("the CSRF secret could not be created")
    return row.value


def csrf_token(secret: str, token_hash: str) -> str:
    """The CSRF token of one credential: HMAC-SHA256(secret, "csrf:" + token hash)."""
    return hmac.new(secret.encode(), f"csrf:{token_hash}".encode(), hashlib.sha256).hexdigest()


def csrf_ok(secret: str, token_hash: str, given: str | None) -> bool:
    """Whether ``given`` is the CSRF token of the credential (constant-time comparison)."""
    return given is not None and hmac.compare_digest(csrf_token(secret, token_hash), given)
