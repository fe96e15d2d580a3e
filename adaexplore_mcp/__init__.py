"""adaexplore-mcp: optimize GPU kernels with the AdaExplore method, over MCP or unattended."""

__version__ = "0.1.0"
