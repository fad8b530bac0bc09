"""A database location as people see it: the one function every error, listing, ``info`` line,
log line and title bar uses, so none of them ever holds a password.

A path is shown as it is. A URL (``postgresql://user:secret@host/db?...``) is split by
:func:`urllib.parse.urlsplit` and shown with its password replaced by ``***``, both the one in
its user info and a ``password=`` parameter (libpq takes either). A password may hold what a
URL should have percent-encoded but people type anyway: ``@`` (drivers take the *last* ``@`` of
the authority, as asyncpg does), ``/``, ``?`` or ``#`` (which end the authority early for a
parser). So when an ``@`` stands after where the parser ended the authority, the user info
runs to that last ``@``: more is hidden rather than any of the password shown.
"""

from __future__ import annotations

import os
import re
from typing import Final
from urllib.parse import urlsplit

__all__ = ["HIDDEN", "shown_location"]

#: What stands in for a password.
HIDDEN: Final = "***"

_SCHEME: Final = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)(.*)$", re.DOTALL)
_PASSWORD_PARAMETER: Final = re.compile(r"(^|[?&;])(password=)[^&;#]*", re.IGNORECASE)


def _without_password(userinfo: str) -> str:
    user, colon, _ = userinfo.partition(":")
    return f"{user}:{HIDDEN}" if colon else user


def shown_location(where: str | os.PathLike[str]) -> str:
    """``where`` (a file path or a database URL) as people may see it: never with a password."""
    text = os.fspath(where)
    m = _SCHEME.match(text)
    if m is None:
        return text
    scheme, rest = m.groups()
    try:
        authority = urlsplit(text).netloc
    except ValueError:  # a bracket left open, say: treat the whole authority as unknown
        authority = rest
    tail = rest[len(authority) :] if rest.startswith(authority) else rest
    if "@" in tail:  # a password holding / ? or #: the user info runs to the last @
        userinfo, _, after = rest.rpartition("@")
        shown = f"{_without_password(userinfo)}@{after}"
    elif "@" in authority:
        userinfo, _, host = authority.rpartition("@")
        shown = f"{_without_password(userinfo)}@{host}{tail}"
    else:
        shown = rest
    return scheme + _PASSWORD_PARAMETER.sub(rf"\1\2{HIDDEN}", shown)
