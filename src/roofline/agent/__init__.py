"""roofline for agents: the MCP server (``roofline mcp``: :mod:`roofline.agent.server`) and its tools as plain
functions (:mod:`roofline.agent.tools`). See docs/agents.md."""
