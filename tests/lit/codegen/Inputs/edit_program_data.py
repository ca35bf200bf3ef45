#!/usr/bin/env python3
"""Damages the encoded tables of an emitted program (its kProgramData string,
base64 of the bytes pipert/ProgramEncoding.h lays out) for the tests that show
the runtime refusing them: `--set OFFSET=VALUE` replaces a byte, `--truncate N`
keeps the first N bytes. Writes the edited source to standard output."""
import argparse
import base64
import re
import sys

parser = argparse.ArgumentParser()
parser.add_argument("source")
parser.add_argument("--set", action="append", default=[], metavar="OFFSET=VALUE")
parser.add_argument("--truncate", type=int)
args = parser.parse_args()

text = open(args.source).read()
match = re.search(r'(static const char kProgramData\[\] =)((?:\s*"[^"]*")+);', text)
if not match:
    sys.exit("no kProgramData string in " + args.source)
data = bytearray(base64.b64decode("".join(re.findall(r'"([^"]*)"', match.group(2)))))
for edit in args.set:
    offset, value = (int(x, 0) for x in edit.split("="))
    data[offset] = value
if args.truncate is not None:
    data = data[: args.truncate]
encoded = base64.b64encode(bytes(data)).decode()
sys.stdout.write(text[: match.start()] + match.group(1) + '\n    "' + encoded + '";' + text[match.end():])
