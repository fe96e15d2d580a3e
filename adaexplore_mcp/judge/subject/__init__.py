"""What every process that runs user code shares: loading a file, the request loop, and the
gated calls the trusted process times."""
