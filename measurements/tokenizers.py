"""Prompts the server saw: InferenceX's client/server tokenizer mismatch on transformers 5.

InferenceX's benchmark client builds each random prompt as token ids, decodes them to text with
its own tokenizer and sends the text; the server tokenizes it again. The client runs in the serving
image, and with transformers 5 its AutoTokenizer loads DeepSeek's ByteLevel-BPE tokenizer as a
broken LlamaTokenizer, so the server receives about 5x the tokens the client counted (InferenceX
PR 937: a 7,140-token prompt reached the SGLang server as 35,921 tokens; 100 random tokens re-encode
to 531). PR 937 (2026-03-27) repaired the client's tokenizer only for a local model directory; the
InferenceX recipes pass a Hugging Face repo id, so the repair took effect with PR 1381 (2026-05-15:
"For HF Hub repo ids ... the path lookup silently no-ops ... a ~5x client/server tokenizer mismatch").

A run on such an image before that date is priced at the prompt length the server computed: the
recorded length x the published 35,921 / 7,140. Output lengths are unaffected (ignore-eos with the
client's max_tokens).
"""

from __future__ import annotations

import dataclasses

from measurements.clients import INFERENCEX
from measurements.provenance import provenance_fields
from measurements.recipes.models import DSR1_MODELS
from measurements.schema import Measurement

SERVED_TOKENS_PER_CLIENT_TOKEN = 35921 / 7140  # InferenceX PR 937 description: "7140 token prompt: 7140 tokens (client) / 35921 tokens (server)"
# Serving images whose Python environment pins transformers 5 (the wheel's Requires-Dist), as image tag prefixes.
TRANSFORMERS_5_IMAGES = ("lmsysorg/sglang:v0.5.10",)  # sglang 0.5.10 and 0.5.10.post1: Requires-Dist transformers==5.3.0 (0.5.9: 4.57.1)
REPAIRED_AT = "2026-05-15T17:01:52Z"  # InferenceX 5fe6d56ee (PR 1381): the client's tokenizer repair reaches HF repo ids
AFFECTED_MODELS = DSR1_MODELS  # ByteLevel-BPE tokenizers declared LlamaTokenizerFast (the ones PR 937 names)
CITATION = (
    "SemiAnalysisAI/InferenceX PR 937 (ef01c2205, 2026-03-27: '7140 token prompt -> 35921 tokens' server-side with transformers "
    "5.3.0) and PR 1381 (5fe6d56ee, 2026-05-15: the repair no-ops for HF repo ids, '~5x client/server tokenizer mismatch'); "
    "sglang 0.5.10 / 0.5.10.post1 wheels: Requires-Dist transformers==5.3.0"
)


def served_prompt(m: Measurement) -> tuple[Measurement, str] | None:
    """(the run with the prompt length the server computed, the note saying so), or None for a run
    the mismatch did not touch."""
    if m.source != INFERENCEX or m.model not in AFFECTED_MODELS or not (m.image or "").startswith(TRANSFORMERS_5_IMAGES):
        return None
    measured = provenance_fields(m.provenance).get("measured") or ""
    if not measured or measured >= REPAIRED_AT:
        return None
    served = round(m.isl * SERVED_TOKENS_PER_CLIENT_TOKEN)
    note = f"transformers-5 tokenizer mismatch: the server computed {served} prompt tokens for the client's {m.isl} ({CITATION})"
    return dataclasses.replace(m, isl=served), note
