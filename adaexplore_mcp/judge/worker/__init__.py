"""The warm worker (trusted): forks each job's processes and supervises them."""
