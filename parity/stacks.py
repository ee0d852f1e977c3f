"""The stacks every per-op parity lane covers: current versions of three systems x three backends."""

from __future__ import annotations

SYSTEMS = ("h200_sxm", "h100_sxm", "b200_sxm")
BACKENDS = ("trtllm", "vllm", "sglang")
STACKS = tuple((system, backend) for system in SYSTEMS for backend in BACKENDS)


def stack_id(stack: tuple[str, str]) -> str:
    return f"{stack[0]}-{stack[1]}"
