#!/usr/bin/env python3
"""Fails when a diagnostic kind in the registry has no golden test.

A kind counts as tested when some lit test has a FileCheck line (any prefix:
CHECK:, DEEP:, ...) that expects "error: ... [Name]" or "warning: ... [Name]".
"""
import pathlib
import re
import sys


def main(registry: str, lit_dir: str) -> int:
    kinds = re.findall(r"^(?:DIAG|WARNING)\((\w+),", pathlib.Path(registry).read_text(), re.M)
    checked = set()
    for path in pathlib.Path(lit_dir).rglob("*"):
        if path.suffix in (".pipe", ".test") and path.is_file():
            for line in path.read_text(errors="replace").splitlines():
                if re.match(r"\s*//\s*[\w-]+:.*(error|warning):", line):
                    checked.update(re.findall(r"\[(\w+)\]", line))
    missing = [k for k in kinds if k not in checked]
    for kind in missing:
        print(f"no golden test checks diagnostic [{kind}]")
    print(f"{len(kinds) - len(missing)} of {len(kinds)} diagnostic kinds have a golden test")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
