#!/usr/bin/env python3
"""Compares the pipeline time two `pipec sim --model` reports print.

usage: same_pipeline.py MEASURED REPRODUCED
Both reports' "(pipeline X s + ...)" must agree to 1e-6 relative; prints both.
"""
import re
import sys


def pipeline(path):
    text = open(path).read()
    match = re.search(r"\(pipeline ([0-9.e+-]+) s", text)
    if not match:
        raise SystemExit(f"{path}: no 'pipeline ... s' in the report")
    return float(match.group(1))


measured, reproduced = pipeline(sys.argv[1]), pipeline(sys.argv[2])
print(f"measured {measured} s, reproduced {reproduced} s")
if abs(measured - reproduced) > 1e-6 * measured:
    raise SystemExit("the calibrated cluster does not reproduce the trace's pipeline time")
