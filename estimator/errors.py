"""Error types. Every user-facing failure is an EstimatorError with a one-line message naming the bad value."""


class EstimatorError(ValueError):
    """Base class: bad input or missing data. The CLI prints the message and exits 2."""


class UnknownModelError(EstimatorError):
    """The model id or path does not resolve to a config.json."""


class UnknownSystemError(EstimatorError):
    """The GPU system has no spec yaml / no perf data."""


class UnknownBackendError(EstimatorError):
    """The serving backend is not one of trtllm, vllm, sglang (or has no data on the system)."""


class UnknownVersionError(EstimatorError):
    """The backend version is not a queryable slot for (system, backend)."""


class InvalidInputError(EstimatorError):
    """A size is non-positive, prefix >= isl, or another argument is out of its domain."""


class UnwritableOutputError(InvalidInputError, OSError):
    """The file system refused an output path (a missing or read-only folder, a full disk). An OSError
    too, so a best-effort write (a cache) that skips on OSError keeps skipping."""


class PerfDataMissingError(EstimatorError):
    """A query fell outside every table that could answer it (a MISS). The message names the key."""


class UnsupportedModelError(EstimatorError):
    """The model family has no native op builder (use --pricer reference)."""


class UnsafeCacheDirError(EstimatorError):
    """A cache folder others can write (or another user owns): its files could run code as this user."""


def is_interrupt(exc: BaseException) -> bool:
    """Ctrl-C: a KeyboardInterrupt, or the SystemError it surfaces as when it lands inside a Numba kernel."""
    return isinstance(exc, KeyboardInterrupt) or (isinstance(exc, SystemError) and isinstance(exc.__cause__ or exc.__context__, KeyboardInterrupt))
