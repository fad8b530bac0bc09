"""One name, one class (issue 31, item 4): a public class name means the same class wherever the
packages export it, so importing it from the "wrong" place gives the same object."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections import defaultdict

from axio_context.state import ExtraUsageRecord
from axio_context.state import RunUsage as StateRunUsage
from axio_context.usage_limits import RunUsage

PACKAGES = (
    "axio_context",
    "axio_context_sqlite",
    "axio_context_postgres",
    "axio_context_openai_agents",
    "axio_context_pydantic_ai",
    "axio_context_mcp",
)

#: Two seeds' different things under one name, kept apart on purpose: ravi's AgentContext (an
#: agent's history and runs) and pai-agent-sdk's (resumable session state). Each lives in the
#: package of its seed (axio_context.agents, axio_context.state); see docs/porting-*.md.
DELIBERATE = {"AgentContext"}


def test_run_usage_is_one_class_with_every_field() -> None:
    assert StateRunUsage is RunUsage
    record = ExtraUsageRecord(uuid="u", agent="search", model_id="m", usage=RunUsage(input_tokens=3))
    assert record.usage.total_tokens == 3  # the field the state's own copy lacked
    assert {"requests", "tool_calls", "details", "cache_write_1h_tokens", "cost"} <= set(
        RunUsage.__struct_fields__
    )


def _package_exports() -> dict[str, dict[int, tuple[type, list[str]]]]:
    """Every class a public module exports (its ``__all__``), by name: a package's and a plain
    module's alike (``axio_context.sql.plan.Row`` and a backend module's ``Row`` would clash)."""
    seen: dict[str, dict[int, tuple[type, list[str]]]] = defaultdict(dict)
    for root in PACKAGES:
        package = importlib.import_module(root)
        names = [root] + [m.name for m in pkgutil.walk_packages(package.__path__, root + ".")]
        for name in names:
            if any(part.startswith("_") for part in name.split(".")):
                continue
            module = importlib.import_module(name)
            for export in getattr(module, "__all__", ()):
                obj = getattr(module, export, None)
                if inspect.isclass(obj):
                    seen[export].setdefault(id(obj), (obj, []))[1].append(name)
    return seen


def test_no_public_class_name_means_two_classes() -> None:
    clashes = {
        name: sorted(f"{obj.__module__} (from {', '.join(where)})" for obj, where in found.values())
        for name, found in _package_exports().items()
        if len(found) > 1 and name not in DELIBERATE
    }
    assert clashes == {}
