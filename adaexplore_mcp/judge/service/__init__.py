"""The judge as an HTTP service (``adaexplore-mcp judge serve``) and its client."""
