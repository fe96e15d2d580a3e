"""The trusted process of a job: it imports neither the task nor the candidate, draws every
seed, holds the reference's outputs, keeps the clock, compares, and writes the verdict."""
