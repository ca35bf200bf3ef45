#!/usr/bin/env python3
"""Compares a CUDA program's expert-parallel run (one log per process) with the
CPU program's run of the same schedule, seed and --ep (its step 1 line):
  compare_ep.py TOLERANCE CPU_LOG CUDA_LOG...
The loss is the world's sum every CUDA process prints; the gradient norm is
put together from the processes' "gradient squares of stage" lines as the CPU
runtime counts it: each replicated parameter once, each replica's experts
once. Prints both relative differences and PASS, or FAIL and exits 1."""
import math
import re
import sys


def main():
    tolerance = float(sys.argv[1])
    cpu = open(sys.argv[2]).read()
    m = re.search(r"^step 1: loss \S+ \((\S+)\), .* grad norm (\S+)$", cpu, re.M)
    if not m:
        sys.exit("no step 1 line in the CPU log")
    cpu_loss, cpu_norm = float.fromhex(m.group(1)), float(m.group(2))

    losses, replicated, experts = set(), {}, {}
    for path in sys.argv[3:]:
        text = open(path).read()
        where = re.search(r"pipeline rank (\d+) of expert-parallel replica (\d+) of (\d+)", text)
        loss = re.search(r"^step 1 \(eager\): loss (\S+),", text, re.M)
        if not where or not loss:
            sys.exit(path + ": no expert-parallel header or step 1 line")
        losses.add(float(loss.group(1)))
        replica = int(where.group(2))
        for s, r, e in re.findall(r"^gradient squares of stage (\d+): replicated (\S+), experts (\S+)$",
                                  text, re.M):
            replicated[int(s)] = float(r)
            experts[(int(s), replica)] = float(e)
    if len(losses) != 1:
        sys.exit("the processes print different losses: %s" % sorted(losses))
    cuda_loss = losses.pop()
    cuda_norm = math.sqrt(sum(replicated.values()) + sum(experts.values()))

    ok = True
    for name, want, got in (("loss", cpu_loss, cuda_loss), ("gradient norm", cpu_norm, cuda_norm)):
        error = abs(got - want) / abs(want)
        ok &= error <= tolerance
        print("%s: CPU %.9g, CUDA %.9g, relative difference %.2g" % (name, want, got, error))
    print("stages %s, replicas %d" % (sorted(replicated), len({e for _, e in experts})))
    print("tolerance %g: %s" % (tolerance, "PASS" if ok else "FAIL"))
    sys.exit(0 if ok else 1)


main()
