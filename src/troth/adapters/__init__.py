"""Adapters: the CLI, the HTTP API, the MCP server and the review page. They parse,
authenticate and translate errors; they call only the ``Memory`` facade."""
