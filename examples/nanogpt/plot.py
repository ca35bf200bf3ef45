"""Draws per-step loss curves (a program's output, train_reference.py's) as
one SVG, written by hand so that nothing beyond Python is needed.

    python3 plot.py -o loss.svg --title "nanoGPT, DualPipeV P=4" \\
        dualpipev.log:DualPipeV dualpipe.log:DualPipe reference.log:PyTorch
"""
import argparse
import sys

from losses import read_losses

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]
DASHES = ["", "6,4", "2,3", "8,3,2,3", "1,2"]
W, H = 720, 420
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 40, 50


def nice_ticks(lo, hi, count=6):
    span = hi - lo if hi > lo else 1.0
    raw = span / count
    scale = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 1.0
    while raw < scale:
        scale /= 10
    step = min((m * scale for m in (1, 2, 5, 10) if m * scale >= raw), default=scale * 10)
    first = (lo // step) * step
    ticks = []
    t = first
    while t <= hi + 1e-12:
        if t >= lo - 1e-12:
            ticks.append(t)
        t += step
    return ticks


def svg(curves, title):
    steps = [s for _, losses in curves for s in losses]
    values = [v for _, losses in curves for v in losses.values()]
    x0, x1 = min(steps), max(steps)
    y0, y1 = min(values), max(values)
    pad = 0.05 * (y1 - y0 or 1)
    y0, y1 = y0 - pad, y1 + pad
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM
    X = lambda s: LEFT + (s - x0) / ((x1 - x0) or 1) * pw  # noqa: E731
    Y = lambda v: TOP + (y1 - v) / ((y1 - y0) or 1) * ph  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="15">{title}</text>']
    for t in nice_ticks(y0, y1):
        out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{Y(t):.1f}" y2="{Y(t):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{Y(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
    for t in nice_ticks(x0, x1):
        out.append(f'<text x="{X(t):.1f}" y="{H - BOTTOM + 18}" text-anchor="middle">{t:g}</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>')
    out.append(f'<text x="{LEFT + pw / 2}" y="{H - 12}" text-anchor="middle">step</text>')
    out.append(f'<text x="16" y="{TOP + ph / 2}" text-anchor="middle" '
               f'transform="rotate(-90 16 {TOP + ph / 2})">loss (sum over micro-batches)</text>')
    for i, (label, losses) in enumerate(curves):
        color, dash = COLORS[i % len(COLORS)], DASHES[i % len(DASHES)]
        points = " ".join(f"{X(s):.1f},{Y(losses[s]):.1f}" for s in sorted(losses))
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="1.6"{dashed}/>')
        ly = TOP + 16 + 18 * i
        out.append(f'<line x1="{W - RIGHT - 190}" x2="{W - RIGHT - 160}" y1="{ly - 4}" y2="{ly - 4}" '
                   f'stroke="{color}" stroke-width="2"{dashed}/>')
        out.append(f'<text x="{W - RIGHT - 152}" y="{ly}">{label}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="LOG[:LABEL]")
    parser.add_argument("-o", "--output", default="loss.svg")
    parser.add_argument("--title", default="nanoGPT loss")
    args = parser.parse_args()
    curves = []
    for run in args.runs:
        path, _, label = run.partition(":")
        losses = read_losses(path)
        if not losses:
            print(f"plot: no step losses in {path}", file=sys.stderr)
            return 1
        curves.append((label or path, losses))
    with open(args.output, "w") as f:
        f.write(svg(curves, args.title))
    print(f"plot: {args.output}: {len(curves)} curves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
