"""Recommend a deployment: agg against disagg within a GPU budget, the frontier, the launch files."""

from estimator.recommend.search import AUTO, CLOSED_FORM, CLOSED_LOOP, ModeResult, Recommendation, RecommendTask, recommend

__all__ = ["AUTO", "CLOSED_FORM", "CLOSED_LOOP", "ModeResult", "Recommendation", "RecommendTask", "recommend"]
