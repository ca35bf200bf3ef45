# Copies the schedule library (../examples/*.pipe) into the package as it is
# built, so an installed pipec resolves Pipeline("dualpipe", ...) without the
# repository. The folders beside the library go with it, in place: a schedule's
# `import` is relative to its own file (vhalf.pipe imports include/vshape.pipe),
# and examples/ep_overlap/ holds the overlap forms pipec plan runs. Only the
# top-level files are library names (pipec/compiler.py). Everything else is in
# pyproject.toml.
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithSchedules(build_py):
    def run(self):
        super().run()
        examples = Path(__file__).resolve().parent.parent / "examples"
        target = Path(self.build_lib) / "pipec" / "schedules"
        target.mkdir(parents=True, exist_ok=True)
        for pipe in sorted(examples.rglob("*.pipe")):
            copy = target / pipe.relative_to(examples)
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(pipe, copy)


setup(cmdclass={"build_py": BuildWithSchedules})
