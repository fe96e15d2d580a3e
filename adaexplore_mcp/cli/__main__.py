from adaexplore_mcp.cli import app

app()
