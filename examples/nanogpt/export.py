"""Splits the GPT of model.py into pipeline stages and exports them for a
pipec program (`--model torchscript --model-path OUT`), with config.json for
train_reference.py and plot.py.

    python3 export.py --stages 8 --dtype fp64 --out build/nanogpt/v-fp64     # DualPipeV, P=4: 2P stages
    python3 export.py --stages 4 --dtype fp64 --out build/nanogpt/d-fp64     # DualPipe,  P=4: P stages
    python3 export.py --stages 8 --moe ...                                     # the MoE variant

The model flags (--n-layer, --n-embd, --seq, ...) must be the same for every
split that is compared; --seq must be the program's --seq.
"""
import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "runtime", "torch"))

from model import add_config_arguments, config_from_arguments, make_stages  # noqa: E402
from pipec_torch_export import ExportError, export_stages  # noqa: E402

DTYPES = {"fp32": torch.float32, "fp64": torch.float64}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", type=int, required=True, help="pipeline stages (the program's stage count)")
    parser.add_argument("--dtype", choices=DTYPES, default="fp64")
    parser.add_argument("--out", required=True, help="directory for stage_<s>.pt, manifest.json, config.json")
    add_config_arguments(parser)
    args = parser.parse_args()
    config = config_from_arguments(args)
    dtype = DTYPES[args.dtype]
    try:
        stages = make_stages(config, args.stages, dtype)
        example = torch.randint(0, config.vocab, (1, config.seq))
        manifest = export_stages(stages, args.out, example_input=example, dtype=dtype, token_ids=True)
    except (ValueError, ExportError) as e:
        print(f"export.py: error: {e}", file=sys.stderr)
        return 1
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump({"config": config.to_dict(), "stages": args.stages, "dtype": args.dtype}, f, indent=2)
        f.write("\n")
    params = sum(entry["parameters"] for entry in manifest["stage_files"])
    print(f"{args.out}: {args.stages} stages, {args.dtype}, {params} parameters "
          f"({'MoE, ' + str(config.n_expert) + ' experts top-' + str(config.top_k) if config.moe else 'dense'}, "
          f"{config.n_layer} blocks, n_embd {config.n_embd}, seq {config.seq}, vocab {config.vocab})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
