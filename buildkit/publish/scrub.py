"""What ``publish`` never shows: the values of credential variables (twine's, and any
``*TOKEN*``/``*PASSWORD*``/``*SECRET*``/``*API_KEY*`` one) and the userinfo of a URL."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping

SECRET_ENV = ("TWINE_PASSWORD", "TWINE_USERNAME")
SECRET_NAME = re.compile(r"(TOKEN|PASSWORD|SECRET|API_KEY)", re.IGNORECASE)
REDACTED = "***"


def strip_userinfo(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def secrets_from(env: Mapping[str, str]) -> list[str]:
    """Values that must never be echoed: twine credentials and any *TOKEN*/*PASSWORD* variable."""
    values = {env[k] for k in SECRET_ENV if env.get(k)}
    values |= {v for k, v in env.items() if SECRET_NAME.search(k) and v}
    # a username such as __token__ is not secret; short values would redact ordinary words
    return sorted((v for v in values if len(v) >= 6 and v != "__token__"), key=len, reverse=True)


def scrub(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
        quoted = urllib.parse.quote(secret, safe="")
        if quoted != secret:
            text = text.replace(quoted, REDACTED)
    return text
