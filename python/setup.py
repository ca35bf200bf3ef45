# Copies the schedule library (../examples/*.pipe) into the package as it is
# built, so an installed pipec resolves Pipeline("dualpipe", ...) without the
# repository. Everything else is in pyproject.toml.
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
        for pipe in sorted(examples.glob("*.pipe")):
            shutil.copyfile(pipe, target / pipe.name)


setup(cmdclass={"build_py": BuildWithSchedules})
