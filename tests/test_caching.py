"""The in-process caches: bounded, and emptied together by estimator.clear_caches."""

from estimator import clear_caches
from estimator.closedloop.cases import MEMO
from estimator.perf import load_system_spec


def test_clear_caches_empties_every_registered_memo_and_the_replay_memo():
    load_system_spec("h200_sxm")
    MEMO.items["probe"] = "value"
    info = load_system_spec.cache_info()
    assert info.currsize > 0 and info.maxsize is not None  # bounded
    clear_caches()
    assert load_system_spec.cache_info().currsize == 0 and "probe" not in MEMO.items
