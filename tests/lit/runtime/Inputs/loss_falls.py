"""Reads a program's log on stdin; says whether the last step's loss is below the first's."""
import re
import sys

losses = [float.fromhex(m.group(1)) for m in re.finditer(r"^step \d+: loss \S+ \((\S+)\)", sys.stdin.read(), re.M)]
assert len(losses) >= 2, "fewer than two steps logged"
print("loss at step %d %s loss at step 1" % (len(losses), "<" if losses[-1] < losses[0] else ">="))
