"""List the bundled model configs and which pricer can price each (native or reference only)."""

from __future__ import annotations

import argparse
import json

from estimator.errors import EstimatorError
from estimator.models import native_families, resolve_model_config
from estimator.models.config import bundled_model_configs_dir

EXAMPLE = "python -m estimator models --json"


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument_group("output").add_argument("--json", action="store_true", help="print the list as one JSON object")


def bundled_models() -> list[dict]:
    """One entry per bundled config: model id, architecture and the pricers that support it."""
    out = []
    for path in sorted(bundled_model_configs_dir().glob("*_config.json")):
        if path.name.endswith("_hf_quant_config.json"):
            continue
        model = path.name.removesuffix("_config.json").replace("--", "/", 1)
        arch = json.loads(path.read_text()).get("architectures", ["?"])[0]
        try:
            resolve_model_config(model)
            native = True
        except EstimatorError:
            native = False
        out.append({"model": model, "architecture": arch, "pricers": ["native", "reference"] if native else ["reference"]})
    return out


def run(args: argparse.Namespace) -> int:
    rows = bundled_models()
    if args.json:
        print(json.dumps({"native_architectures": list(native_families()), "models": rows}))
        return 0
    print(f"native architectures: {', '.join(native_families())}")
    for r in rows:
        print(f"{r['model']:<55} {r['architecture']:<45} {'/'.join(r['pricers'])}")
    return 0
