"""The nanoGPT example trained through pipec.torch.Pipeline, as a user runs it.

    PIPEC=build/bin/pipec ~/.cache/pipec/torch-venv/bin/python tests/python/test_nanogpt_pipeline.py

Launches examples/nanogpt/train_pipeline.py with torchrun (2 gloo processes)
under DualPipeV and DualPipe for a few AdamW steps, and the same script with
--reference in one process; every step's loss and every final parameter must
equal the reference in fp64 to 1e-10, and the two copies of each DualPipe
stage must be identical bit for bit. Each launch has a deadline. Registered with
ctest (nanogpt-pipeline).
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SCRIPT = os.path.join(ROOT, "examples", "nanogpt", "train_pipeline.py")
STEPS = 3
COMMON = ["--steps", str(STEPS), "--microbatches", "4", "--micro-batch-size", "1",
          "--n-embd", "16", "--seq", "16", "--n-layer", "4"]


def run(args, deadline_s=400):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), OMP_NUM_THREADS="1")
    done = subprocess.run(args, capture_output=True, text=True, timeout=deadline_s, env=env)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout


class NanoGPT(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        path = os.path.join(cls.tmp.name, "reference.json")
        run([sys.executable, SCRIPT, "--reference", "--ranks", "2", "--out", path, *COMMON])
        with open(path) as f:
            cls.reference = json.load(f)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def train(self, schedule):
        out = os.path.join(self.tmp.name, schedule)
        run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
             SCRIPT, "--schedule", schedule, "--out", out, *COMMON])
        records = []
        for rank in range(2):
            with open(f"{out}.{rank}.json") as f:
                records.append(json.load(f))
        return records

    def check_against_reference(self, records, copies):
        # Reference parameter names are "<stage>.<name>" of the reference's
        # split; the pipelined run's are of its own split, so compare the whole
        # model, parameters in stage order (the same sequence in both).
        losses = [r["losses"] for r in records if r["losses"][0] is not None]
        self.assertTrue(losses, "no rank reported a loss")
        for run_losses in losses:
            for step, (got, want) in enumerate(zip(run_losses, self.reference["losses"])):
                self.assertLess(abs(got - want), 1e-10, f"step {step + 1}")
        held = {}
        for r in records:
            for key, values in r["params"].items():
                stage, name = key.split(".", 1)
                held.setdefault((int(stage), name), []).append(values)
        for key, versions in held.items():
            self.assertEqual(len(versions), copies, key)
            for other in versions[1:]:
                self.assertEqual(other, versions[0], f"copies of {key} differ")
        got = [v for _, vs in sorted(held.items(), key=lambda kv: kv[0][0]) for v in vs[0]]
        want = [v for vs in self.reference["params"].values() for v in vs]
        self.assertEqual(len(got), len(want))
        self.assertLess(max(abs(a - b) for a, b in zip(got, want)), 1e-10)

    def test_dualpipev(self):
        self.check_against_reference(self.train("dualpipev"), copies=1)

    def test_dualpipe(self):
        self.check_against_reference(self.train("dualpipe"), copies=2)


if __name__ == "__main__":
    unittest.main()
