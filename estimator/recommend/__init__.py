"""Recommend a deployment: agg against disagg within a GPU budget, the frontier, the launch files.

estimator.recommend is also the API function: calling it, estimator.recommend(...), runs
estimator.api.recommend (estimator.entry); recommend_task(task) is the search of one RecommendTask.
"""

from estimator.entry import make_callable
from estimator.recommend.search import AUTO, CLOSED_FORM, CLOSED_LOOP, ModeResult, Recommendation, RecommendTask, recommend_task

__all__ = ["AUTO", "CLOSED_FORM", "CLOSED_LOOP", "ModeResult", "Recommendation", "RecommendTask", "recommend_task"]

make_callable(__name__, "recommend")
