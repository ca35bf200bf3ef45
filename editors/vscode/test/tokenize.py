#!/usr/bin/env python3
"""Checks the TextMate grammar against real files: tokenises each file given and
fails on any non-blank character that no rule of the grammar gives a scope.

Implements the part of TextMate matching the grammar uses: `match` rules (with
`name` or named `captures`), `begin`/`end` rules (with inner `patterns`) that may
span lines, and `include` of `#repository` entries. The regexes are written in
the common subset of Oniguruma and Python's `re`.

Usage: tokenize.py GRAMMAR FILE...   (exit 1 on the first uncovered character)
"""
import json
import re
import sys


class Rule:
    def __init__(self, spec, repository):
        self.name = spec.get("name")
        self.match = re.compile(spec["match"]) if "match" in spec else None
        self.begin = re.compile(spec["begin"]) if "begin" in spec else None
        self.end = re.compile(spec["end"]) if "end" in spec else None
        self.captures = {int(k): v.get("name") for k, v in spec.get("captures", {}).items()}
        self.patterns = flatten(spec.get("patterns", []), repository)


def flatten(patterns, repository, seen=()):
    rules = []
    for spec in patterns:
        if "include" in spec:
            key = spec["include"]
            if not key.startswith("#"):
                raise SystemExit(f"unsupported include {key!r}")
            if key in seen:
                continue
            rules += flatten(repository[key[1:]].get("patterns", [repository[key[1:]]]),
                             repository, seen + (key,))
        else:
            rules.append(Rule(spec, repository))
    return rules


def earliest(rules, line, pos):
    """The rule whose regex matches first at or after pos, and its match."""
    best = None
    for rule in rules:
        regex = rule.match or rule.begin
        m = regex.search(line, pos)
        if m and (best is None or m.start() < best[1].start()):
            best = (rule, m)
    return best


def uncovered_in_match(rule, m):
    """Offsets of non-blank characters a match rule leaves without a scope."""
    if rule.name:
        return []
    covered = set()
    for group, name in rule.captures.items():
        if name and m.start(group) >= 0:
            covered.update(range(m.start(group), m.end(group)))
    return [i for i in range(m.start(), m.end()) if i not in covered and not m.string[i].isspace()]


def tokenize(rules, text):
    """Yields (line, column, char) for every character no rule covers."""
    stack = []  # open begin/end rules
    for number, line in enumerate(text.split("\n"), 1):
        line = line.rstrip("\r")
        pos = 0
        while pos <= len(line):
            if stack:
                inner = stack[-1]
                end = inner.end.search(line, pos)
                found = earliest(inner.patterns, line, pos)
                if found and (end is None or found[1].start() < end.start()):
                    pos = max(found[1].end(), pos + 1)
                    continue
                if end is None:
                    break  # the region goes on past this line; all of it is covered
                stack.pop()
                pos = max(end.end(), pos + (1 if end.end() == pos and pos < len(line) else 0))
                if end.end() == len(line) and end.start() == end.end():
                    break
                continue
            found = earliest(rules, line, pos)
            stop = found[1].start() if found else len(line)
            for i in range(pos, stop):
                if not line[i].isspace():
                    yield number, i + 1, line[i]
            if not found:
                break
            rule, m = found
            if rule.match:
                for i in uncovered_in_match(rule, m):
                    yield number, i + 1, line[i]
                pos = max(m.end(), pos + 1) if m.end() == m.start() else m.end()
            else:
                stack.append(rule)
                pos = m.end()
            if pos >= len(line):
                break


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        grammar = json.load(f)
    rules = flatten(grammar["patterns"], grammar.get("repository", {}))
    failed = False
    for path in sys.argv[2:]:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for line, column, char in tokenize(rules, text):
            print(f"{path}:{line}:{column}: no scope for {char!r}")
            failed = True
            break
    if not failed:
        print(f"{len(sys.argv) - 2} file(s) tokenised completely")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
