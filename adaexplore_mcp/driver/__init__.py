"""Autonomous runs: strategies that drive the MCP tools through an in-process MCP client."""
