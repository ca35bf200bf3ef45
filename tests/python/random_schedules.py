"""Random pipeline schedules for the PyTorch runtime's tests, written as .pipe
source with explicit ``rank N { ... }`` programs and ``mb =`` on every op, in
the manner of tests/unit/ScheduleGenerator.cpp (its valid()): a random
topological order of the data dependencies of every (stage, micro-batch),
F(s-1) -> F(s), F(S-1) -> B(S-1), B(s+1) -> B(s), I -> W, projected onto the
ranks of a random placement (one stage per rank, V, interleaved, or two flows
from both ends with two copies), some backwards split into I ... W and some
adjacent forward/backward ops of different micro-batches joined into overlap
pairs.  Only schedules that `pipec check` accepts are kept (an order can break
the message-order or deadlock checks); the caller runs them.
"""

from __future__ import annotations

import random
import subprocess
from typing import List, Tuple


class Generated:
    def __init__(self, P: int, M: int, placement: str, split_at: int):
        self.P, self.M, self.placement, self.split_at = P, M, placement, split_at
        self.S = 2 * P if placement in ("v", "interleaved") else P
        self.ranks: List[List[List[Tuple[str, int, int]]]] = [[] for _ in range(P)]

    def slot(self, stage: int, mb: int) -> Tuple[int, int]:
        P = self.P
        if self.placement == "v":
            return (stage, 0) if stage < P else (2 * P - 1 - stage, 1)
        if self.placement == "interleaved":
            return stage % P, stage // P
        if self.placement == "two-flows":
            return (stage, 0) if mb < self.split_at else (P - 1 - stage, 1)
        return stage, 0

    def source(self, name: str) -> str:
        P, S, M = self.P, self.S, self.M
        out = [f"// random {self.placement} P={P} S={S} M={M}", f"schedule {name}() {{",
               f"  ranks {P}; stages {S}; microbatches {M};"]
        if self.placement == "v":
            out.append(f"  place stage s -> rank s < {P} ? s : 2 * {P} - 1 - s chunk s < {P} ? 0 : 1;")
        elif self.placement == "interleaved":
            out.append(f"  place stage s -> rank s % {P} chunk s / {P};")
        elif self.placement == "two-flows":
            out.append("  copies 2;")
            out.append(f"  flow down: microbatches 0..{self.split_at} {{ place stage s -> rank s chunk 0; }}")
            out.append(f"  flow up: microbatches {self.split_at}..{M} "
                       f"{{ place stage s -> rank {P} - 1 - s chunk 1; }}")
        else:
            out.append("  place stage s -> rank s chunk 0;")
        for r, steps in enumerate(self.ranks):
            text = " ".join(" & ".join(f"{k}({c}, mb = {mb})" for k, c, mb in step) + ";"
                            for step in steps)
            out.append(f"  rank {r} {{ {text} }}")
        out.append("}")
        return "\n".join(out) + "\n"


def generate(rng: random.Random, P: int, pairs: bool = False) -> Generated:
    M = rng.randint(2, 5)
    placement = rng.choice(["linear", "v", "interleaved", "two-flows"])
    g = Generated(P, M, placement, rng.randint(1, M - 1))
    S = g.S
    p_split = rng.choice([0.0, 0.35, 1.0])
    p_pair = rng.choice([0.3, 0.8] if pairs else [0.0, 0.3, 0.8])
    split = {(s, mb): rng.random() < p_split for s in range(S) for mb in range(M)}
    done = set()

    def ready(kind, s, mb):
        if (kind, s, mb) in done:
            return False
        if kind == 0:
            return s == 0 or (0, s - 1, mb) in done
        if kind == 1:
            return (0, s, mb) in done if s == S - 1 else (1, s + 1, mb) in done
        return split[(s, mb)] and (1, s, mb) in done

    total = sum(3 if split[k] else 2 for k in split)
    sequence = [[] for _ in range(P)]
    for _ in range(total):
        candidates = [(k, s, mb) for k in range(3) for s in range(S) for mb in range(M)
                      if ready(k, s, mb)]
        kind, s, mb = rng.choice(candidates)
        done.add((kind, s, mb))
        rank, chunk = g.slot(s, mb)
        name = "F" if kind == 0 else "W" if kind == 2 else ("I" if split[(s, mb)] else "B")
        sequence[rank].append((name, chunk, mb))
    for r, seq in enumerate(sequence):
        i = 0
        while i < len(seq):
            if i + 1 < len(seq):
                a, b = seq[i], seq[i + 1]
                fb = a[0] == "F" and b[0] in "BI" or a[0] in "BI" and b[0] == "F"
                if fb and a[2] != b[2] and rng.random() < p_pair:
                    g.ranks[r].append([a, b] if a[0] == "F" else [b, a])
                    i += 2
                    continue
            g.ranks[r].append([seq[i]])
            i += 1
    return g


def accepted(pipec: str, path: str) -> bool:
    done = subprocess.run([pipec, "check", path], capture_output=True, text=True, timeout=60)
    return done.returncode == 0


def has_pair(g: Generated) -> bool:
    return any(len(step) == 2 for steps in g.ranks for step in steps)


def write_accepted(pipec: str, directory: str, P: int, count: int, seed: int,
                   pairs: bool = False, max_tries: int = 400) -> List[str]:
    """Writes up to `count` accepted random schedules for P ranks (with `pairs`, each
    with at least one overlap pair); returns their paths."""
    rng = random.Random(seed)
    paths = []
    for attempt in range(max_tries):
        if len(paths) == count:
            break
        g = generate(rng, P, pairs)
        if pairs and not has_pair(g):
            continue
        path = f"{directory}/random_P{P}_{'pairs_' if pairs else ''}{attempt}.pipe"
        with open(path, "w") as f:
            f.write(g.source(f"random_{attempt}"))
        if accepted(pipec, path):
            paths.append(path)
    return paths
