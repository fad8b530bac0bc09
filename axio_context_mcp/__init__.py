"""``axio-context mcp``: an MCP server over stdio on any database the registry opens, built on the
official ``mcp`` SDK (the ``mcp`` extra: ``pip install 'axio-context[mcp]'``).

:mod:`.tools` holds the tools (written against the backend protocol, no SDK import),
:mod:`.arguments` their arguments, :mod:`.server` the SDK's server around them. Importing this
package imports nothing of the SDK; :mod:`.server` does.
"""

from __future__ import annotations

__all__ = ["EXTRA_MISSING"]

#: What a command says when the ``mcp`` extra is not installed.
EXTRA_MISSING = "the MCP server needs the mcp extra: pip install 'axio-context[mcp]'"
