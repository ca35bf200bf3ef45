#!/usr/bin/env python3
"""Exports a user's PyTorch model, one nn.Module per pipeline stage, for pipec.

    from pipec_torch_export import export_stages
    export_stages([Block(), Block(), Block(), Block()], "model/",
                  example_input=torch.randn(2, 8, 16), dtype=torch.float64)

writes model/stage_<s>.pt (TorchScript) and model/manifest.json, which a
program built with `pipec build ... --stages torchscript` runs with
`--model torchscript --model-path model/`.

The runtime hands a stage a 2-D tensor, tokens x width. Each module keeps its
own shapes: the first stage's input is reshaped to example_input's shape with
the batch dimension free ([2, 8, 16] -> [-1, 8, 16]), and each stage's output
is flattened back to rows x its last dimension. Rows must be preserved.
With token_ids=True the first stage takes integer ids (example_input of dtype
long, e.g. [batch, seq]); the runtime's one column of ids is cast to int64.

A stage may instead be a dict of four parts, {"attention", "dispatch", "mlp",
"combine"} (an MoE layer whose all-to-alls the runtime overlaps): each part is
exported alone as stage_<s>.<part>.pt; a part's tuple result is passed to the
next part as separate arguments.

Each file carries a small record (pipec.txt: stage, stage count, part, dtype,
input shape and widths) that the runtime checks at load. TorchScript is
deprecated in torch 2.15: only this file and the runtime's ModuleLoader know
the format, so a torch.export-based export can replace it.

CLI: python3 pipec_torch_export.py MODULE:FUNCTION OUT_DIR [--dtype float32|float64] [--arg NAME=VALUE]...
where MODULE is a module name or a .py file and FUNCTION(**args) returns
(modules, example_input) or (modules, example_input, token_ids).
"""
import argparse
import copy
import importlib
import json
import os
import sys
import warnings

import torch

PARTS = ("attention", "dispatch", "mlp", "combine")
FORMAT = 1


class ExportError(Exception):
    """A stage that cannot be exported; the message names the stage and why."""


def _as_tuple(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _script(module, what):
    try:
        return torch.jit.script(module)
    except Exception as e:  # TorchScript raises several types; all mean "cannot script"
        first = str(e).strip().splitlines()
        reason = "\n    ".join(first[:12]) if first else type(e).__name__
        raise ExportError("%s cannot be scripted with TorchScript:\n    %s" % (what, reason)) from None


def _record(**fields):
    return "".join("%s=%s\n" % (k, v) for k, v in fields.items())


def _check_tensors(values, what):
    for v in values:
        if not isinstance(v, torch.Tensor):
            raise ExportError("%s returned a %s; stages and parts pass tensors (or tuples of tensors)"
                              % (what, type(v).__name__))


def export_stages(modules, out_dir, example_input, dtype=torch.float64, token_ids=False):
    """Scripts each stage (or its four parts) and writes them with manifest.json.

    Returns the manifest as a dict. Raises ExportError naming the stage."""
    with warnings.catch_warnings():
        # torch.jit's deprecation notices, once per call: known, see the module's docstring.
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"torch\.jit")
        return _export(modules, out_dir, example_input, dtype, token_ids)


def _export(modules, out_dir, example_input, dtype, token_ids):
    if dtype not in (torch.float32, torch.float64):
        raise ExportError("dtype must be torch.float32 or torch.float64, got %s" % dtype)
    modules = list(modules)
    if not modules:
        raise ExportError("no stages: pass one module (or dict of parts) per pipeline stage")
    if not isinstance(example_input, torch.Tensor) or example_input.dim() < 2:
        raise ExportError("example_input must be a tensor [batch, ..., width] (at least 2-D)")
    if token_ids and example_input.is_floating_point():
        raise ExportError("token_ids=True needs an integer example_input, e.g. torch.randint(...)")
    x = example_input if token_ids else example_input.to(dtype)
    width = 1 if token_ids else int(x.shape[-1])
    rows = x.numel() // width
    os.makedirs(out_dir, exist_ok=True)
    dtype_name = str(dtype).replace("torch.", "")
    manifest = {"format": FORMAT, "stages": len(modules), "dtype": dtype_name,
                "torch": torch.__version__, "loader": "torchscript", "stage_files": []}
    for s, stage in enumerate(modules):
        if isinstance(stage, torch.nn.Module):
            parts = [("whole", stage)]
        elif isinstance(stage, dict) and set(stage) == set(PARTS):
            parts = [(p, stage[p]) for p in PARTS]
        else:
            raise ExportError("stage %d: expected an nn.Module or a dict with exactly the parts %s"
                              % (s, ", ".join(PARTS)))
        entry = {"stage": s, "input_width": width, "input_shape": [-1] + list(x.shape[1:]),
                 "parts": [p for p, _ in parts] if len(parts) > 1 else [], "files": []}
        values = (x,)
        for i, (part, module) in enumerate(parts):
            what = "stage %d" % s + ("" if part == "whole" else " (%s)" % part)
            if not isinstance(module, torch.nn.Module):
                raise ExportError("%s is a %s, not an nn.Module" % (what, type(module).__name__))
            module = copy.deepcopy(module).to(dtype)
            scripted = _script(module, what)
            with torch.no_grad():
                try:
                    values = _as_tuple(scripted(*values))
                except Exception as e:
                    raise ExportError("%s fails on the example input: %s" % (what, e)) from None
            _check_tensors(values, what)
            fields = dict(format=FORMAT, stage=s, stages=len(modules), part=part, dtype=dtype_name)
            if i == 0:
                fields.update(input_shape=",".join(str(d) for d in entry["input_shape"]),
                              input_kind="token_ids" if (token_ids and s == 0) else "values",
                              input_width=width)
            if i == len(parts) - 1:
                if len(values) != 1:
                    raise ExportError("%s returns %d tensors; a stage's output is one tensor" % (what, len(values)))
                y = values[0]
                if y.dtype != dtype or y.dim() < 1 or y.numel() != rows * int(y.shape[-1]):
                    raise ExportError("%s returns %s %s; a stage must return %s with %d rows of its last "
                                      "dimension (as many as its input)" % (what, y.dtype, list(y.shape), dtype, rows))
                fields["output_width"] = int(y.shape[-1])
                entry["output_width"] = int(y.shape[-1])
            name = "stage_%d%s.pt" % (s, "" if part == "whole" else "." + part)
            torch.jit.save(scripted, os.path.join(out_dir, name), _extra_files={"pipec.txt": _record(**fields)})
            entry["files"].append(name)
            entry.setdefault("parameters", 0)
            entry["parameters"] += sum(p.numel() for p in module.parameters() if p.requires_grad)
        manifest["stage_files"].append(entry)
        x = values[0]
        width = int(x.shape[-1])
        token_ids = False
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    return manifest


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("factory", help="MODULE:FUNCTION returning (modules, example_input[, token_ids])")
    parser.add_argument("out_dir")
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float64")
    parser.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE",
                        help="keyword argument of FUNCTION (an integer where it parses as one)")
    args = parser.parse_args(argv)
    module_name, _, function = args.factory.rpartition(":")
    if not module_name or not function:
        parser.error("expected MODULE:FUNCTION, got %r" % args.factory)
    kwargs = {}
    for item in args.arg:
        name, eq, value = item.partition("=")
        if not eq:
            parser.error("--arg expects NAME=VALUE, got %r" % item)
        kwargs[name] = int(value) if value.lstrip("-").isdigit() else value
    if module_name.endswith(".py"):
        sys.path.insert(0, os.path.dirname(os.path.abspath(module_name)))
        module_name = os.path.splitext(os.path.basename(module_name))[0]
    else:
        sys.path.insert(0, os.getcwd())
    try:
        made = getattr(importlib.import_module(module_name), function)(**kwargs)
        manifest = export_stages(made[0], args.out_dir, made[1], dtype=getattr(torch, args.dtype),
                                 token_ids=bool(made[2]) if len(made) > 2 else False)
    except ExportError as e:
        print("pipec_torch_export: error: %s" % e, file=sys.stderr)
        return 1
    print("pipec_torch_export: %d stages (%s) in %s" % (manifest["stages"], manifest["dtype"], args.out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
