"""The task's process (user code, sandboxed): builds inputs from seeds it is given, computes
the reference, and runs ``Model`` for the baselines."""
