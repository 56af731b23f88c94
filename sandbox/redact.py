"""Secrets never leave through a log, prompt, report or store: known secret values are masked.

Defence in depth behind the include screen (a kernel cannot read host files any more): whatever text
kagent stores, prints or sends to a model goes through `redact` first. Secrets are the values of
environment variables whose names say they are secret (`OPENAI_API_KEY`, `HF_TOKEN`, ...), the
passwords inside URLs, and whatever the caller registers (an API key read from a config file).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

MASK = "[redacted]"
MIN_SECRET_LENGTH = 8  # shorter values are too likely to be ordinary words or numbers in a log
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION", re.IGNORECASE)
_NOT_SECRET = re.compile(r"[\d\s.,:;_+-]*|true|false|yes|no|none|null", re.IGNORECASE)  # numbers, flags
# the userinfo runs to the authority's last "@" (a password may hold a raw "@"), never past a "/"
_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s]+)@")
_registered: set[str] = set()


def register_secret(value: str | None) -> None:
    """Mask `value` from now on in everything `redact` sees (in this process)."""
    if value and len(value) >= MIN_SECRET_LENGTH // 2:
        _registered.add(value)


def environment_secrets(env: Mapping[str, str] | None = None) -> set[str]:
    """Values of environment variables named like secrets (keys, tokens, passwords)."""
    env = os.environ if env is None else env
    return {value for name, value in env.items()
            if _SECRET_NAME.search(name) and len(value) >= MIN_SECRET_LENGTH and not _NOT_SECRET.fullmatch(value)}


def known_secrets(env: Mapping[str, str] | None = None) -> set[str]:
    return environment_secrets(env) | _registered


def strip_url_credentials(url: str) -> str:
    """`https://user:key@host/v1` -> `https://host/v1`: the form of a URL that may be stored or shown."""
    return _URL_USERINFO.sub(lambda m: m.group("scheme"), url)


def redact(text: str, extra: Iterable[str] = (), env: Mapping[str, str] | None = None) -> str:
    """`text` with every known secret, and the credentials of every URL in it, masked."""
    if not text:
        return text
    text = _URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@", text)
    for secret in sorted(known_secrets(env) | set(extra), key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    return text
