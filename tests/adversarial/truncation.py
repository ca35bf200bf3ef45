#!/usr/bin/env python3
"""Every prefix of every example schedule, through `check` and `sim`.

A prefix cut anywhere -- inside a token, a string, a comment, a UTF-8
character -- must be reported as an error, never crash or hang pipec.
usage: truncation.py PIPEC SOURCE_DIR WORK_DIR
"""
import os
import sys

import harness

BATCH = 500  # files per pipec process


def main():
    pipec, source_dir, workdir = harness.main_args()
    suite = harness.Suite("truncation", pipec, workdir)
    paths = []
    for example in harness.examples(source_dir):
        with open(example, "rb") as f:
            text = f.read()
        stem = os.path.basename(example)[:-len(".pipe")]
        for cut in range(len(text)):
            paths.append(harness.write(os.path.join(workdir, f"{stem}-{cut}.pipe"), text[:cut]))
    for i in range(0, len(paths), BATCH):
        suite.check_then_sim(paths[i:i + BATCH])
    return suite.finish()


if __name__ == "__main__":
    sys.exit(main())
