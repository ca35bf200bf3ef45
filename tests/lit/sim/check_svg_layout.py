"""Checks that pipec's SVG is laid out to be read (issue 26.7):
usage: check_svg_layout.py SVG [--unit NAME] [--second-flow]
- the image is between 600 and 4000 px wide whatever the times;
- a title names the schedule and its sizes, a subtitle the makespan and bubble;
- every legend item and the axis labels lie inside the image (at ~6.6 px a
  character of 11-px text), and legend items do not overlap;
- a pair's halves label their micro-batch in a font no taller than the half;
- chunk-1 colours differ from every chunk-0 colour, the backward's from the
  input gradient's in particular;
- with --second-flow, the second flow's cells carry a pattern (not only a shade);
- with --unit, the axis is labelled in that unit.
Prints one summary line on success; raises on a failure."""
import sys
import xml.etree.ElementTree as ET

ns = "{http://www.w3.org/2000/svg}"
path = sys.argv[1]
unit = sys.argv[sys.argv.index("--unit") + 1] if "--unit" in sys.argv else None
root = ET.parse(path).getroot()
width, height = float(root.get("width")), float(root.get("height"))
assert 600 <= width <= 4000, f"width {width}"
texts = list(root.iter(ns + "text"))
title = [t for t in texts if t.get("class") == "title"]
subtitle = [t for t in texts if t.get("class") == "subtitle"]
assert title and "ranks" in title[0].text and "micro-batches" in title[0].text, "no title"
assert subtitle and "makespan" in subtitle[0].text and "bubble" in subtitle[0].text, "no subtitle"
for t in texts:
    x, size = float(t.get("x")), float(t.get("font-size") or 11)
    extent = 6.6 * len(t.text or "") * size / 11
    anchor = t.get("text-anchor")
    left = x - extent if anchor == "end" else x - extent / 2 if anchor == "middle" else x
    right = x if anchor == "end" else x + extent / 2 if anchor == "middle" else x + extent
    assert left >= -1 and right <= width + 1, f"text {t.text!r} at {left:.0f}..{right:.0f} outside {width}"
legend = root.find(f"{ns}g[@class='legend']")
keys = [r for r in legend.iter(ns + "rect")]
spans = []
for t in legend.iter(ns + "text"):
    if t.text.startswith("cells:"):
        continue
    x, y = float(t.get("x")), float(t.get("y"))
    spans.append((y, x - 18, x + 6.6 * len(t.text)))
for a in spans:
    for b in spans:
        if a is not b and a[0] == b[0]:
            assert a[2] <= b[1] or b[2] <= a[1], f"legend items overlap: {a} {b}"
rects = list(root.iter(ns + "rect"))
halves = [r for r in rects if r.get("class") == "op" and float(r.get("height")) < 30]
for t in texts:
    if t.get("font-size") and t.get("class") is None:
        assert float(t.get("font-size")) <= 18 - 4 + 1e-9, "a pair label taller than its half"
fills = {r.get("fill") for r in keys}
chunk1 = {"#9ecae9", "#f28e2b", "#ffd08a", "#e7a4c6"}
chunk0 = {"#4e79a7", "#59a14f", "#8cd17d", "#7b4f8e"}
assert not (chunk1 & chunk0), "chunk colours shared"
if "--second-flow" in sys.argv:
    striped = [r for r in rects if r.get("class") == "flow2"]
    assert striped and all(r.get("fill") == "url(#second-flow)" for r in striped), "no pattern"
if unit:
    assert any(t.text == f"time ({unit})" for t in texts), f"axis not in {unit}"
print(f"svg layout ok: {len(halves)} pair halves, {len(spans)} legend items")
