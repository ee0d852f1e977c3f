"""Import speed per format: results of 1,000 per-request records (issue 29's acceptance: under a second),
beside the time to parse the same file with the standard library alone (json / csv: the floor any importer
pays), in one run.

Run: python -m benchmarks.bench_import
"""

from __future__ import annotations

import csv
import io
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from measurements.importers.deployment import load_deployment
from measurements.importers.formats import import_file
from measurements.importers.result import Supplied

RECORDS = 1000
REPEATS = 5
FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "import"
DEPLOYMENT = "model: Qwen/Qwen3-32B\nsystem: h200_sxm\nbackend: vllm\nbackend_version: 0.10.1\nmode: agg\ntp: 1\n"


def detailed(n: int, **extra) -> dict:
    """A --save-detailed benchmark_serving result of n requests (lengths in tokens, times in seconds)."""
    return {
        "date": "20260101-000000", "backend": "vllm", "model_id": "Qwen/Qwen3-32B", "num_prompts": n, "request_rate": "inf",
        "max_concurrency": 16, "completed": n, "total_input_tokens": 1000 * n, "total_output_tokens": 100 * n,
        "input_lens": [1000] * n, "output_lens": [100] * n, "ttfts": [0.05] * n, "itls": [[0.01] * 99] * n,
        "mean_ttft_ms": 50.0, "median_ttft_ms": 50.0, "p99_ttft_ms": 50.0, "mean_tpot_ms": 10.0, "median_tpot_ms": 10.0,
        "p99_tpot_ms": 10.0, "mean_itl_ms": 10.0, "median_itl_ms": 10.0, "p99_itl_ms": 10.0,
    } | extra  # fmt: skip


def cases(n: int) -> dict[str, tuple[str, str]]:
    """Case name -> (file name, content): the family's clients with n per-request records, the summaries as their fixtures hold them."""
    arrays = detailed(n)
    inferencex = {k: v for k, v in arrays.items() if k not in ("ttfts", "itls")} | {"benchmark_start_time_unix": 1.7e9}
    return {
        "vLLM benchmark_serving, per-request": ("vllm.json", json.dumps(arrays)),
        "TensorRT-LLM benchmark_serving, per-request": ("trtllm.json", json.dumps(arrays | {"user_throughput": 10.0, "avg_decoded_tokens_per_iter": 1.0})),
        "InferenceX, per-request lengths": ("inferencex.json", json.dumps(inferencex)),
        "SGLang bench_serving line, per-request": ("sglang.jsonl", json.dumps(arrays | {"total_output_tokens_retokenized": 100 * n}) + "\n"),
        "aiperf JSON (summary)": ("aiperf.json", (FIXTURES / "profile_export_aiperf.json").read_text()),
        "aiperf CSV (summary)": ("aiperf.csv", (FIXTURES / "profile_export_aiperf.csv").read_text()),
        "genai-perf JSON (summary)": ("genai.json", (FIXTURES / "profile_export_genai_perf.json").read_text()),
    }


def parse(file_name: str, content: str) -> object:
    """The reference: the file parsed by the standard library alone (JSON, JSON lines or CSV)."""
    if file_name.endswith(".csv"):
        return list(csv.reader(io.StringIO(content)))
    if file_name.endswith(".jsonl"):
        return [json.loads(line) for line in content.splitlines() if line.strip()]
    return json.loads(content)


def median_ms(call: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        deploy = Path(folder) / "deploy.yaml"
        deploy.write_text(DEPLOYMENT)
        deployment, supplied = load_deployment(deploy), Supplied.of({"concurrency": 4}, {})  # the CSV keeps no concurrency
        print(f"{'format':<46} {'import ms':>10} {'parse ms':>14} {'ratio':>6}")
        for name, (file_name, content) in cases(RECORDS).items():
            path = Path(folder) / file_name
            path.write_text(content)
            imported = median_ms(lambda path=path: import_file(path, "auto", deployment, supplied))
            parsed = median_ms(lambda file_name=file_name, content=content: parse(file_name, content))
            print(f"{name:<46} {imported:>10.1f} {parsed:>14.1f} {imported / parsed:>6.2f}")
    print(f"median of {REPEATS} runs; per-request cases hold {RECORDS} requests of 99 token gaps each")


if __name__ == "__main__":
    main()
