"""Import speed: one benchmark_serving result of 1,000 per-request records (issue 29's acceptance: under a second).

Run: python -m benchmarks.bench_import
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

from measurements.importers.deployment import load_deployment
from measurements.importers.formats import import_file
from measurements.importers.result import Supplied

RECORDS = 1000
DEPLOYMENT = "model: Qwen/Qwen3-32B\nsystem: h200_sxm\nbackend: vllm\nbackend_version: 0.10.1\nmode: agg\ntp: 1\n"


def result(n: int) -> dict:
    """A detailed vLLM benchmark_serving result of n requests (lengths in tokens, times in seconds)."""
    return {
        "date": "20260101-000000", "backend": "vllm", "model_id": "Qwen/Qwen3-32B", "num_prompts": n, "request_rate": "inf",
        "max_concurrency": 16, "completed": n, "total_input_tokens": 1000 * n, "total_output_tokens": 100 * n,
        "input_lens": [1000] * n, "output_lens": [100] * n, "ttfts": [0.05] * n, "itls": [[0.01] * 99] * n,
        "mean_ttft_ms": 50.0, "median_ttft_ms": 50.0, "p99_ttft_ms": 50.0, "mean_tpot_ms": 10.0, "median_tpot_ms": 10.0,
        "p99_tpot_ms": 10.0, "mean_itl_ms": 10.0, "median_itl_ms": 10.0, "p99_itl_ms": 10.0,
    }  # fmt: skip


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path, deploy = Path(folder) / "big.json", Path(folder) / "deploy.yaml"
        path.write_text(json.dumps(result(RECORDS)))
        deploy.write_text(DEPLOYMENT)
        deployment = load_deployment(deploy)
        times = []
        for _ in range(5):
            start = time.perf_counter()
            import_file(path, "auto", deployment, Supplied.of({}, {}))
            times.append(time.perf_counter() - start)
    print(f"import of {RECORDS} per-request records: median {statistics.median(times) * 1000:.1f} ms over {len(times)} runs")


if __name__ == "__main__":
    main()
