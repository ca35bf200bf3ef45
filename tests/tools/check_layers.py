#!/usr/bin/env python3
"""Fails when a compiler folder includes a folder on a higher layer.

The README's Layout section names the layers; this is the same table, so the
rule the README states is the rule the build keeps. A folder may include its
own layer and the ones below; nothing outside driver/ includes driver/, and
folders on one layer may not include each other in a cycle.
"""
import pathlib
import re
import sys

LAYERS = {
    "support": 0, "diag": 0,
    "syntax": 1, "sema": 2, "elab": 3,
    "comm": 4, "cost": 4,
    "check": 5, "sim": 5,
    "frontend": 6,
    "codegen": 7, "interop": 7, "formatter": 7, "plan": 7, "synth": 7, "lsp": 7,
    "driver": 8,
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/', re.M)


def main(compiler_dir: pathlib.Path) -> int:
    problems = []
    edges = {}
    folders = sorted(p for p in compiler_dir.iterdir() if p.is_dir())
    for folder in folders:
        name = folder.name
        if name not in LAYERS:
            problems.append(f"{name}/: not in the layer table (tests/tools/check_layers.py, README Layout)")
            continue
        for source in sorted(folder.rglob("*")):
            if source.suffix not in (".h", ".cpp", ".def", ".inc"):
                continue
            for target in INCLUDE.findall(source.read_text(errors="replace")):
                if target == name or target not in LAYERS:
                    continue  # own folder, or a library (llvm/, pipert/, fmt/)
                edges.setdefault(name, set()).add(target)
                if LAYERS[target] > LAYERS[name]:
                    problems.append(f"{source.relative_to(compiler_dir)}: includes {target}/ "
                                    f"(layer {LAYERS[target]}) from layer {LAYERS[name]}")
    # Same-layer includes must not form a cycle.
    for a, targets in edges.items():
        for b in targets:
            if LAYERS[a] == LAYERS[b] and a in edges.get(b, set()):
                problems.append(f"{a}/ and {b}/ include each other")
    for problem in problems:
        print(problem)
    print(f"{len(folders)} folders, {sum(len(t) for t in edges.values())} folder edges, "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1])))
