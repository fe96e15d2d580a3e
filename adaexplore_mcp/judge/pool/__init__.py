"""The judge's side in the caller's process: warm workers per device, queues, baselines."""
