"""Validates pipec's SVG and Chrome trace: usage: check_pictures.py SVG TRACE RANKS"""
import json
import sys
import xml.etree.ElementTree as ET

svg, trace, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(svg).getroot()  # raises on malformed XML
classes = [r.get("class") for r in root.iter(ns + "rect")]
legend = root.find(f"{ns}g[@class='legend']")
print(f"svg: {classes.count('op')} op shapes, {classes.count('pair')} pair frames, "
      f"legend {'present' if legend is not None else 'missing'}, {classes.count('idle')} rank rows")
events = json.load(open(trace))["traceEvents"]
slices = [e for e in events if e["ph"] == "X" and e.get("cat") == "compute"]
starts = {e["id"] for e in events if e["ph"] == "s"}
ends = {e["id"] for e in events if e["ph"] == "f"}
assert starts == ends, "every flow arrow must start and end"
pids = {e["pid"] for e in slices}
# One shape per op: every step is a slice, and a pair's step holds two ops.
assert classes.count("op") == len(slices) + classes.count("pair"), "one shape per op"
print(f"trace: {len(slices)} compute slices, {len(starts)} messages with flow arrows, {len(pids)} ranks")
