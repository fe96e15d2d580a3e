"""The candidate's process (user code, sandboxed): loads ``kernel.py`` and runs ``ModelNew``
when the trusted process asks, with the first signals it can see of its own calls."""
