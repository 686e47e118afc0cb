"""The one way `course` signs what it writes and checks what it reads back: HMAC-SHA256 in hex."""

from __future__ import annotations

import hashlib
import hmac


def sign(key: bytes, data: bytes) -> str:
    """The hex signature of `data` under `key`."""
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def verify(key: bytes, data: bytes, signature: object) -> bool:
    """True when `signature` is the signature of `data` under `key` (compared in constant time)."""
    return isinstance(signature, str) and hmac.compare_digest(sign(key, data), signature)
