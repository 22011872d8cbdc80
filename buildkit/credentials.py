"""What in a URL is a credential, and the URL without it: a password in the user part, a user name
that is a known token, a query parameter named as a token, password, key or signature. Used by the
recipe (no URL of a recipe holds one), the index client's messages and the publish log. Written
without ``urllib`` so that the recipe layer, which the gate imports, stays off the network modules."""

from __future__ import annotations

import re

#: query parameters that carry a credential: an access token, a password, a signed URL's signature
SECRET_QUERY = re.compile(
    r"(?i)^(.*token.*|.*passw(or)?d.*|pwd|.*secret.*|api[-_]?key|key|auth|authorization|sig|signature"
    r"|x-(amz|goog)-(signature|credential|security-token)|credential|access[-_]?key(-id)?)$"
)
#: a user name that is a token of a well-known forge or index (GitHub, GitLab, PyPI, Hugging Face)
_TOKEN_USER = re.compile(r"^(gh[oprsu]_|github_pat_|glpat-|pypi-|hf_)[A-Za-z0-9_-]{8,}")
REDACTED = "***"
#: a value that only names a variable (``${TOKEN}``, ``$TOKEN``): no secret in itself
_REFERENCE = re.compile(r"^\$(\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)$")
_URL = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)([^/?#]*)([^?#]*)(\?[^#]*)?(#.*)?$")
_URL_IN_TEXT = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>`]+")


def _unquote(text: str) -> str:
    return re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), text)


def url_secrets(url: str) -> list[str]:
    """What in ``url`` is a credential, each described (none: [])."""
    match = _URL.match(url)
    if match is None:
        return []
    netloc, query = match.group(2), (match.group(4) or "")[1:]
    found = []
    if "@" in netloc:
        user, _, password = netloc.rpartition("@")[0].partition(":")
        if password and not _REFERENCE.match(_unquote(password)):
            found.append("a password in its user part")
        if _TOKEN_USER.match(_unquote(user)):
            found.append("a token as its user name")
    for pair in query.split("&") if query else ():
        name, eq, value = pair.partition("=")
        if eq and value and SECRET_QUERY.match(_unquote(name)) and not _REFERENCE.match(_unquote(value)):
            found.append(f"a credential in its query string ({_unquote(name)}=)")
    return found


def redact(url: str) -> str:
    """``url`` with its user part's password (or the user part itself when it is a token, or holds
    no user name) shown as ``***``, and the value of each credential query parameter too."""
    match = _URL.match(url)
    if match is None:
        return url
    scheme, netloc, path, query, fragment = (g or "" for g in match.groups())
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user = userinfo.partition(":")[0]
        shown = user if user and not _TOKEN_USER.match(_unquote(user)) else ""
        netloc = f"{shown}:{REDACTED}@{host}" if shown else f"{REDACTED}@{host}"
    if query:
        pairs = [pair.partition("=") for pair in query[1:].split("&")]
        query = "?" + "&".join(
            f"{k}={REDACTED if v and SECRET_QUERY.match(_unquote(k)) else v}" if eq else k
            for k, eq, v in pairs
        )
    return f"{scheme}{netloc}{path}{query}{fragment}"


def redact_text(text: str) -> str:
    """``text`` with every URL in it :func:`redact`-ed (a log line, a tool's output)."""

    def one(match: re.Match[str]) -> str:
        url = match.group(0)
        trail = len(url) - len(url.rstrip(".,:;)]}"))  # the sentence's, not the URL's
        return redact(url[: len(url) - trail]) + url[len(url) - trail :]

    return _URL_IN_TEXT.sub(one, text)
