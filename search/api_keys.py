"""API keys: who may read and who may write, for `python -m search.api --api-keys FILE`.

The file holds one key a line, `read KEY` or `write KEY` (a write key also reads); blank lines and
lines starting with `#` are skipped. Clients send `Authorization: Bearer KEY`. A request without a
key, or with one the file does not hold, is a 401; a read key on a write is a 403 (the service's
write routes ask for "write", every other route but /health and the docs for "read").

Keys are kept as their SHA-256 digests, and a presented key's digest is compared with every
stored one by `hmac.compare_digest` without stopping at a match, so the time an answer takes
says nothing about how much of a key was right, nor which line it matched. No key is ever logged,
shown in /stats or echoed in an error. A key shorter than MIN_KEY_CHARS is refused at start,
with the command that makes a good one.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass
from pathlib import Path

SCOPES = ("read", "write")
# The environment variable that names the keys file when --api-keys is not given.
KEYS_ENV = "SEMSEARCH_API_KEYS"
MIN_KEY_CHARS = 16
MAKE_KEY = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"


class ApiKeysError(ValueError):
    """A keys file that cannot be used: where, what, and the fix."""


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8")).digest()


@dataclass(frozen=True)
class ApiKeys:
    """The digests of the keys a service accepts, each with its scope ("read" or "write")."""

    entries: tuple[tuple[str, bytes], ...]

    def __post_init__(self) -> None:
        if not self.entries:
            raise ApiKeysError("an API keys file must hold at least one key")
        for scope, _ in self.entries:
            if scope not in SCOPES:
                raise ApiKeysError(f"unknown key scope {scope!r}; valid: {', '.join(SCOPES)}")

    @classmethod
    def from_lines(cls, lines: list[str], source: str = "the keys") -> ApiKeys:
        """Parse `read KEY` / `write KEY` lines; an error names `source`:line and the fix."""
        entries: list[tuple[str, bytes]] = []
        seen: dict[bytes, int] = {}
        for number, raw in enumerate(lines, start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split()
            where = f"{source}:{number}"
            if len(parts) != 2 or parts[0] not in SCOPES:
                raise ApiKeysError(f"{where}: expected 'read KEY' or 'write KEY', one key a line, "
                                   f"got {len(parts)} word(s) starting {parts[0][:8]!r}")
            scope, key = parts
            if len(key) < MIN_KEY_CHARS:
                raise ApiKeysError(f"{where}: the key has {len(key)} characters, fewer than {MIN_KEY_CHARS}; "
                                   f"make one with: {MAKE_KEY}")
            digest = _digest(key)
            if digest in seen:
                raise ApiKeysError(f"{where}: the same key as line {seen[digest]}; give each key one line and one "
                                   "scope (a write key also reads)")
            seen[digest] = number
            entries.append((scope, digest))
        if not entries:
            raise ApiKeysError(f"{source} holds no key; add lines such as 'read KEY' and 'write KEY' "
                               f"(make a key with: {MAKE_KEY})")
        return cls(tuple(entries))

    @classmethod
    def load(cls, path: Path | str) -> ApiKeys:
        """The keys of the file at `path`."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ApiKeysError(f"API keys file {path} does not exist; create it with one 'read KEY' or "
                               "'write KEY' a line, or leave --api-keys out") from None
        except (OSError, UnicodeDecodeError) as err:
            raise ApiKeysError(f"API keys file {path} cannot be read ({err}); it must be UTF-8 text") from None
        return cls.from_lines(text.splitlines(), str(path))

    def scope_of(self, presented: str) -> str | None:
        """The scope of the key `presented`, or None when no stored key matches; in constant time
        over the stored keys (every digest is compared, whatever matched)."""
        digest = _digest(presented)
        found: str | None = None
        for scope, stored in self.entries:
            if hmac.compare_digest(digest, stored) and found is None:
                found = scope
        return found

    @staticmethod
    def allows(have: str, need: str) -> bool:
        """Whether a key of scope `have` may do what needs `need` (a write key also reads)."""
        return have == need or (have == "write" and need == "read")


def keys_file(flag: Path | str | None) -> Path | None:
    """The keys file: --api-keys, else SEMSEARCH_API_KEYS, else None (no keys: every request
    is let in, which the service allows only on a loopback address)."""
    if flag:
        return Path(flag)
    named = os.environ.get(KEYS_ENV, "").strip()
    return Path(named) if named else None


def is_loopback(host: str) -> bool:
    """Whether `host` (what --host binds) is reachable only from this machine."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
