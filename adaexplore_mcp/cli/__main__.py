from adaexplore_mcp.cli import main

main()
