"""Conversion to and from pydantic-ai's own RequestUsage, RunUsage and UsageLimits, lossless.

Behind the ``pydantic-ai`` extra; pydantic-ai is imported only when a function here is called.
Every field of pydantic-ai's types maps to ours by name; the ad-hoc counters pydantic-ai keeps
as extra attributes (``web_searches``...) go to our ``extra`` and come back as attributes.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, overload

from .counts import RequestUsage, RunUsage
from .errors import UsageError
from .limits import UsageLimits

if TYPE_CHECKING:
    from pydantic_ai import usage as pai

__all__ = ["from_pydantic_ai", "to_pydantic_ai"]


def _pai() -> Any:
    try:
        from pydantic_ai import usage
    except ImportError as exc:  # pragma: no cover - the extra is part of the dev install
        raise ImportError(
            "converting pydantic-ai usage needs the extra: pip install 'axio-context[pydantic-ai]'"
        ) from exc
    return usage


@overload
def from_pydantic_ai(obj: pai.RunUsage) -> RunUsage: ...
@overload
def from_pydantic_ai(obj: pai.RequestUsage) -> RequestUsage: ...
@overload
def from_pydantic_ai(obj: pai.UsageLimits) -> UsageLimits: ...
def from_pydantic_ai(obj: Any) -> RunUsage | RequestUsage | UsageLimits:
    """Our equivalent of a pydantic-ai ``RunUsage``, ``RequestUsage`` or ``UsageLimits``."""
    usage = _pai()
    if isinstance(obj, usage.UsageLimits):
        names = [f.name for f in dataclasses.fields(obj)]
        return UsageLimits(**{n: getattr(obj, n) for n in names})
    if isinstance(obj, (usage.RunUsage, usage.RequestUsage)):
        ours = RunUsage if isinstance(obj, usage.RunUsage) else RequestUsage
        known = set(ours.__struct_fields__)
        fields: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for name, value in vars(obj).items():
            if name in known:
                fields[name] = dict(value) if name == "details" else value
            else:
                extra[name] = value
        return ours(**fields, extra=extra)
    raise UsageError(f"not a pydantic-ai RunUsage, RequestUsage or UsageLimits: {type(obj).__name__}")


@overload
def to_pydantic_ai(obj: RunUsage) -> pai.RunUsage: ...
@overload
def to_pydantic_ai(obj: RequestUsage) -> pai.RequestUsage: ...
@overload
def to_pydantic_ai(obj: UsageLimits) -> pai.UsageLimits: ...
def to_pydantic_ai(obj: RunUsage | RequestUsage | UsageLimits) -> Any:
    """pydantic-ai's own object equal to ours."""
    usage = _pai()
    if isinstance(obj, UsageLimits):
        return usage.UsageLimits(**{n: getattr(obj, n) for n in obj.__struct_fields__})
    if isinstance(obj, (RunUsage, RequestUsage)):
        theirs = usage.RunUsage if isinstance(obj, RunUsage) else usage.RequestUsage
        names = [n for n in obj.__struct_fields__ if n != "extra"]
        fields = {n: getattr(obj, n) for n in names}
        fields["details"] = dict(obj.details)
        return theirs(**fields, **obj.extra)
    raise UsageError(f"not a RunUsage, RequestUsage or UsageLimits: {type(obj).__name__}")
