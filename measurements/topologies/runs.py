"""A resolved disaggregated run as it was launched and measured: the config's stages, its
speculative depth, and the benchmark client of its launch path (srt-slurm's sa-bench, or the GB200
launcher's dynamo clients: measurements.topologies.resolver.multinode_client).

``published_run`` returns the measurement with its layouts, mode, client protocol, MTP
settings, decode workers' scheduler receive interval (SGLang recipes), prefill workers' overlap
scheduler (a recipe that turns it off) and MoE backend (TRT-LLM recipes) replaced by the published ones and a note saying what was replaced, or why the run
cannot be priced from its topology (a speculative mode the config leaves open, an acceptance
figure not published). A stage whose batch cap the config does not set takes the engine's
documented default, stated in the note; a prefill batch holds at most the whole prompts of its
token budget per attention-DP rank: the recipe's (TRT-LLM max_num_tokens, SGLang chunked-prefill-size
and max-prefill-tokens: derive.prefill_budget), else the engine's default.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Sequence

from estimator.settings import system_defaults
from measurements.clients import AIC_GAP_ANALYSIS, INFERENCEX
from measurements.recipes.models import DSR1_MODELS, GPTOSS_MODELS, dsr1_mtp_accepted
from measurements.schema import Measurement, Protocol
from measurements.topologies.resolver import MultinodeClient, Topology, corrected_layouts, inferencex_twin, multinode_client

KV_TRANSFER_NOTE = "KV transfer between the stages is not replayed (a term of 0 ms: no published transfer time for these runs)"


def multinode_protocol(client: MultinodeClient, concurrency: int) -> Protocol:
    """A multi-node client's measured pass at concurrency C (its warm-up is discarded before the pass starts)."""
    return Protocol(
        client=client.client, num_prompts=client.prompts_per_concurrency * concurrency, request_rate=client.request_rate,
        random_range_ratio=client.random_range_ratio, ignore_eos=client.ignore_eos,
        client_citation=f"{client.citation}; warm-up ({client.warmup}) discarded",
        num_warmups=None if client.warmups_per_concurrency is None else client.warmups_per_concurrency * concurrency,
        client_seed=client.seed,
    )  # fmt: skip


def published_run(m: Measurement, topology: Topology) -> tuple[Measurement, str] | str:
    """(the run as published, the note of what was replaced), or why it cannot be priced."""
    drafts = _drafts(m, topology)
    if isinstance(drafts, str):
        return drafts
    undecided = [name for name, stage in (("prefill", topology.prefill), ("decode", topology.decode)) if stage.attention_dp is None]
    if undecided:
        where = topology.launch_script or "its launcher script, which is not public"
        return f"the config ({topology.key} @ {topology.commit}) leaves the {' and '.join(undecided)} attention DP and EP undecided: {where}"
    prefill, decode, note = corrected_layouts(m, topology)
    defaults = system_defaults(m.engine, m.system)
    notes = [note]
    budget, whose = (topology.prefill.token_budget, "the recipe's") if topology.prefill.token_budget else (defaults.step_token_budget, "the engine default")
    whole = max(1, budget // m.isl)  # whole prompts one prefill pass holds per attention-DP rank
    if prefill.batch_size is None or prefill.batch_size > whole:
        what = "not in the config" if prefill.batch_size is None else f"{prefill.batch_size} in the config (a running-request cap)"
        notes.append(f"prefill batch {what}: the whole prompts of {whose} budget ({budget} // {m.isl} = {whole})")
        prefill = dataclasses.replace(prefill, batch_size=whole)
    if decode.batch_size is None:
        cap = defaults.max_num_seqs or math.ceil(m.concurrency / decode.workers / (decode.attention_dp or 1))
        decode = dataclasses.replace(decode, batch_size=cap)
        notes.append(f"decode batch not in the config: {'the engine default cap' if defaults.max_num_seqs else 'no engine cap, the clients per rank'} ({cap})")
    nextn, accepted, citation = drafts
    if citation:
        notes.append(citation)
    protocol = multinode_protocol(multinode_client(topology), m.concurrency)
    settings = m.settings.replace(nextn=nextn, nextn_accepted=accepted)
    if topology.decode.recv_interval is not None:  # a disagg row's recv_interval is its decode workers' (EngineSettings.recv_interval)
        settings = settings.cited(f"decode scheduler-recv-interval {topology.decode.recv_interval}: {topology.citation}",
                                  recv_interval=topology.decode.recv_interval)  # fmt: skip
    if topology.prefill.overlap is False:  # and its overlap_scheduler its prefill workers'
        settings = settings.cited(f"prefill overlap scheduler off: {topology.citation}", overlap_scheduler=False)
    if topology.prefill.moe_backend is not None:  # and its moe_backend its prefill workers'
        settings = settings.cited(f"prefill moe_config.backend {topology.prefill.moe_backend}: {topology.citation}",
                                  moe_backend=topology.prefill.moe_backend)  # fmt: skip
    run = dataclasses.replace(m, mode="disagg", agg=None, prefill=prefill, decode=decode, protocol=protocol, settings=settings)
    return run, "; ".join(notes)


def _drafts(m: Measurement, topology: Topology) -> tuple[int, float, str] | str:
    """(MTP drafts, accepted drafts per step, citation of the acceptance) the run decodes with, or why unknown."""
    nextn = topology.nextn
    if nextn is None and m.model in GPTOSS_MODELS:
        nextn = 0  # gpt-oss checkpoints carry no MTP layers (config.json sets no num_nextn_predict_layers)
    if nextn is None:
        return f"the config ({topology.key} @ {topology.commit}) does not decide the speculative mode (MTP or not)"
    if nextn == 0:
        return 0, 0.0, ""
    if m.model not in DSR1_MODELS:
        return f"MTP depth {nextn} ({topology.key}): no published acceptance rate for {m.engine} {m.model} at that depth"
    accepted = dsr1_mtp_accepted(m.engine, nextn)
    if isinstance(accepted, str):
        return f"MTP depth {nextn} ({topology.key}): {accepted}"
    return nextn, *accepted


def with_twin_protocols(sample: Sequence[Measurement]) -> list[Measurement]:
    """The sample with each gap-analysis row that is an InferenceX run (its twin in the sample,
    resolver.inferencex_twin; aiconfigurator PR 738 compared the two) given its twin's client
    protocol and launch settings, citing the twin; every other row as it is."""
    candidates = defaultdict(list)
    for m in sample:
        if m.source == INFERENCEX:
            candidates[_twin_key(m)].append(m)
    out = []
    for m in sample:
        twin_id = inferencex_twin(m, candidates[_twin_key(m)]) if m.source == AIC_GAP_ANALYSIS else None
        if twin_id is not None:
            twin = next(x for x in candidates[_twin_key(m)] if x.id == twin_id)
            citation = f"{twin.protocol.client_citation}; as run by its InferenceX twin {twin_id} (TTFT and TPOT within 0.06%)"
            m = dataclasses.replace(m, protocol=dataclasses.replace(twin.protocol, client_citation=citation), settings=twin.settings,
                                    ttft_statistic=twin.ttft_statistic, tpot_definition=twin.tpot_definition)  # fmt: skip
        out.append(m)
    return out


def _twin_key(m: Measurement) -> tuple:
    """The facts a gap-analysis row shares with its InferenceX twin (resolver.inferencex_twin checks the rest)."""
    return (m.model, m.system, m.engine, m.isl, m.osl, m.concurrency)
