#!/usr/bin/env python3
"""The recommended step times of two `pipec plan --format json` documents differ.

usage: differ.py BEFORE.json AFTER.json
"""
import json
import sys

before, after = (json.load(open(p)) for p in sys.argv[1:3])
step = [d["candidates"][d["recommended"]]["step_time_s"] for d in (before, after)]
print(f"step time {step[0]} s -> {step[1]} s")
if step[0] == step[1]:
    raise SystemExit("calibrating did not change the prediction")
