"""Reads per-step losses from a program's or train_reference.py's output:
lines `step N: loss X (HEX), ...`; the exact hex value is used when present."""
import re

STEP = re.compile(r"^step (\d+): loss (\S+)(?: \((0x[0-9a-fA-Fp.+-]+|[-+]?inf|nan)\))?")


def read_losses(path):
    """{step: loss} from the lines of `path` that report a step."""
    losses = {}
    with open(path) as f:
        for line in f:
            m = STEP.match(line)
            if m:
                hexvalue = m.group(3)
                losses[int(m.group(1))] = float.fromhex(hexvalue) if hexvalue else float(m.group(2))
    return losses
