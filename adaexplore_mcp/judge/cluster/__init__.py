"""The judge on a Ray cluster (``--judge ray``): one actor per GPU, each holding a local judge's
warm pool, behind the same interface as the local judge. Importing this package does not
import Ray; starting a ``RayJudge`` does."""

from adaexplore_mcp.judge.cluster.judge import RayJudge

__all__ = ["RayJudge"]
