#!/usr/bin/env python3
"""Rewrites a checkpoint's step count and seals it with a valid checksum
(runtime/include/pipert/Checkpoint.h: the i64 after magic, version and element
size; FNV-1a of every byte before the last eight), so a test can hand the
runtime a well-formed file with a value out of range.

usage: checkpoint_edit.py IN OUT --steps N
"""
import argparse
import os
import struct

STEPS_AT = 8 + 4 + 4  # "PIPECKPT", u32 version, u32 element bytes


def fnv1a(data):
    h = 1469598103934665603
    for byte in data:
        h = ((h ^ byte) * 1099511628211) % (1 << 64)
    return h


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--steps", type=int, required=True)
    args = ap.parse_args()
    body = bytearray(open(args.src, "rb").read()[:-8])
    body[STEPS_AT:STEPS_AT + 8] = struct.pack("<q", args.steps)
    os.makedirs(os.path.dirname(args.dst), exist_ok=True)
    with open(args.dst, "wb") as out:
        out.write(body + struct.pack("<Q", fnv1a(body)))


if __name__ == "__main__":
    main()
