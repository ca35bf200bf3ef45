"""`pip install ./python` works and the installed package stands alone: it is
installed (no dependencies, no build isolation: offline) into a temporary
directory, every schedule it carries compiles from that copy (`pipec check`),
then a fresh interpreter that sees only that copy resolves a
library schedule from the package's own copy of the library and runs a
2-process gloo step of the README's quick start shape, ending as the README
does (destroy_process_group with a pipeline still referenced: without the
package's exit hook, gloo aborted one rank in about three runs here).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

QUICK = r"""
import os, sys, torch, torch.distributed as dist
import pipec.torch
from pipec.compiler import resolve_schedule
assert os.path.realpath(pipec.torch.__file__).startswith(os.path.realpath(sys.argv[1])), pipec.torch.__file__
path = resolve_schedule("dualpipev")
assert os.path.realpath(str(path)).startswith(os.path.realpath(sys.argv[1])), path
dist.init_process_group("gloo")
def stage_fn(s):
    torch.manual_seed(s)
    return torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Tanh())
pipe = pipec.torch.Pipeline("dualpipev", {"P": 2, "M": 4}, stage_fn, torch.nn.functional.mse_loss)
opt = torch.optim.SGD([p for _, m in pipe.modules() for p in m.parameters()], lr=0.1)
torch.manual_seed(0)
x, y = torch.randn(8, 16), torch.randn(8, 16)
for step in range(2):
    opt.zero_grad()
    loss = pipe.step(x, target=y)
    opt.step()
# Two copies: the copies' set-up gathers across the ranks holding a stage, which
# must not need numpy (hidden below): torch does not depend on it, nor do we.
assert "numpy" not in sys.modules or sys.modules["numpy"] is None or not hasattr(sys.modules["numpy"], "ndarray")
two = pipec.torch.Pipeline("dualpipe", {"P": 2, "M": 4}, stage_fn, torch.nn.functional.mse_loss)
two.step(x, target=y)
two.close()  # its groups go now; `pipe` stays open and drops its groups at exit
try:
    two.step(x, target=y)
    raise SystemExit("a closed pipeline stepped")
except pipec.torch.PipelineError as error:
    assert "closed" in str(error), error
print("PASS installed package: rank", dist.get_rank(), "loss", None if loss is None else float(loss))
dist.destroy_process_group()
"""


def main() -> int:
    sys.path.insert(0, HERE)
    import launcher
    with tempfile.TemporaryDirectory(prefix="pipec-pip-") as target:
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                               "--no-build-isolation", "--target", target,
                               os.path.join(ROOT, "python")], capture_output=True, text=True,
                              cwd=target)
        if done.returncode != 0:
            print("pip install ./python failed:\n" + done.stdout + done.stderr)
            return 1
        schedules = os.path.join(target, "pipec", "schedules")
        names = sorted(os.listdir(schedules)) if os.path.isdir(schedules) else []
        print("installed schedules:", " ".join(names))
        if "dualpipe.pipe" not in names:
            print("the installed package lacks the schedule library")
            return 1
        # Every installed schedule compiles from the installed copy alone: a
        # library file that imports a neighbour (vhalf.pipe: include/vshape.pipe)
        # needs that folder installed beside it, and so do the overlap forms.
        installed = [os.path.join(schedules, name) for name in names if name.endswith(".pipe")]
        installed += [os.path.join(schedules, "ep_overlap", name) for name in ("1f1b.pipe", "interleaved_1f1b.pipe")]
        for path in installed:
            if not os.path.isfile(path):
                print("the installed package lacks", os.path.relpath(path, schedules))
                return 1
            checked = subprocess.run([os.environ["PIPEC"], "check", path], capture_output=True, text=True)
            if checked.returncode != 0:
                print(f"pipec check {os.path.relpath(path, schedules)} (installed copy) failed:\n"
                      + checked.stdout + checked.stderr)
                return 1
        print("installed schedules compile:", len(installed))
        script = os.path.join(target, "quick.py")
        with open(script, "w") as f:
            f.write(QUICK)
        # Only the installed copy, and no numpy: a stub that refuses to import
        # stands first on the path, as on a machine with torch alone.
        hidden = os.path.join(target, "no-numpy", "numpy")
        os.makedirs(hidden)
        with open(os.path.join(hidden, "__init__.py"), "w") as f:
            f.write("raise ModuleNotFoundError('numpy is hidden by test_package.py', name='numpy')\n")
        os.environ["PYTHONPATH"] = os.path.join(target, "no-numpy") + os.pathsep + target
        results = launcher.launch(2, 120, [script, target])
        ok = all(code == 0 for code, _ in results)
        for rank, (code, out) in enumerate(results):
            print(f"[rank {rank}] exit {code}: " + (out.strip() if not ok else
                                                     out.strip().splitlines()[-1]))
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
