"""The accuracy report: prediction methods, batch predictions, metrics and the HTML renderer.

Kept import-light: the CLI registers the report command without loading the estimator.
"""

METHOD_NAMES = ("legacy", "uncached", "closed_loop_steady", "closed_loop")  # the keys of methods.METHODS, in order
KV_CAP_NOTE = "running requests capped at"  # how a closed-loop point's note says the KV-cache pool capped its running requests
# how a closed-loop point's note says its SGLang piecewise CUDA graphs hold every pass that prefills (no eager floor)
GRAPHED_PREFILL_NOTE = "passes that prefill replay SGLang's piecewise CUDA graphs: no eager prefill floor"
