"""Access tokens: made at random, shown once, stored only as their SHA-256.

A token is 32 random bytes (URL-safe base64), so an unsalted hash is enough: nobody can guess
one from its hash. The prefix `lab_` makes a leaked token easy to spot in logs."""

from __future__ import annotations

import hashlib
import hmac
import secrets

PREFIX = "lab_"


def new_token() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """The hex SHA-256 the database keeps in place of the token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def same_secret(given: str, kept: str) -> bool:
    """Compare two secrets in constant time."""
    return hmac.compare_digest(given.encode("utf-8"), kept.encode("utf-8"))
