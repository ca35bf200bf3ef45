"""Turns a schedule (a library name or a .pipe path) and sizes into a checked
Program, by running the pipec compiler: ``pipec emit --target json``.

The compiler is found at ``$PIPEC`` (a path to the binary) or as ``pipec`` on
``PATH``.  Library schedules are the ``.pipe`` files of the repository's
``examples/``: an installed package carries a copy (``pipec/schedules/``,
copied at build time by ``setup.py``); a source checkout or editable install
reads ``examples/`` directly.

Compiled programs are cached per (schedule file contents, sizes, compiler) in
memory and on disk (``$PIPEC_CACHE``, default ``~/.cache/pipec/programs``), so
every rank of a job, and every later job, compiles a size once.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Dict, Mapping, Optional, Tuple

from .errors import CompilerNotFound, ScheduleError, ScheduleNotFound
from .program import Program, parse_program

_PACKAGE_DIR = Path(__file__).resolve().parent
_COMPILE_TIMEOUT_S = 300
_memory_cache: Dict[str, Program] = {}


def library_dirs() -> list:
    """Where library schedules are looked up, in order."""
    dirs = [_PACKAGE_DIR / "schedules"]
    repo_examples = _PACKAGE_DIR.parent.parent / "examples"  # source checkout / editable install
    if repo_examples.is_dir():
        dirs.append(repo_examples)
    return dirs


def library_names() -> list:
    names = set()
    for d in library_dirs():
        if d.is_dir():
            names.update(p.stem for p in d.glob("*.pipe"))
    return sorted(names)


def resolve_schedule(schedule: str) -> Path:
    """A library name ("dualpipe") or a path to a .pipe file -> the file."""
    schedule = os.fspath(schedule)
    looks_like_path = schedule.endswith(".pipe") or os.sep in schedule or "/" in schedule
    if looks_like_path:
        path = Path(schedule)
        if not path.is_file():
            raise ScheduleNotFound(f"schedule file '{schedule}' does not exist")
        return path.resolve()
    for d in library_dirs():
        candidate = d / f"{schedule}.pipe"
        if candidate.is_file():
            return candidate
    names = library_names()
    raise ScheduleNotFound(
        f"no library schedule named '{schedule}'; the library has: "
        f"{', '.join(names) if names else '(none found: ' + ', '.join(map(str, library_dirs())) + ')'}"
        "; or give a path to a .pipe file")


def find_compiler() -> str:
    """The pipec binary: $PIPEC, else `pipec` on PATH."""
    explicit = os.environ.get("PIPEC")
    if explicit:
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return explicit
        raise CompilerNotFound(f"$PIPEC is '{explicit}', which is not an executable file")
    found = shutil.which("pipec")
    if found:
        return found
    raise CompilerNotFound(
        "the pipec compiler was not found: set $PIPEC to the pipec binary (for example "
        "build/bin/pipec of a pipec checkout) or put pipec on PATH")


def _cache_dir() -> Path:
    return Path(os.environ.get("PIPEC_CACHE", Path.home() / ".cache" / "pipec" / "programs"))


def _cache_key(source: bytes, sizes: Mapping[str, int], compiler: str) -> str:
    stat = os.stat(compiler)
    h = hashlib.sha256()
    h.update(source)
    h.update(json.dumps(sorted(sizes.items())).encode())
    h.update(f"{os.path.realpath(compiler)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return h.hexdigest()[:32]


def _check_sizes(sizes: Mapping[str, int]) -> Dict[str, int]:
    checked = {}
    for name, value in sizes.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise ScheduleError(f"size name {name!r} is not a schedule parameter name")
        if isinstance(value, bool) or not isinstance(value, int):
            raise ScheduleError(f"size {name} = {value!r} is not an integer")
        checked[name] = int(value)
    return checked


def compile_schedule(schedule: str, sizes: Mapping[str, int],
                     compiler: Optional[str] = None) -> Tuple[Program, Path]:
    """Compiles `schedule` at `sizes` (cached); returns the program and the file."""
    path = resolve_schedule(schedule)
    sizes = _check_sizes(sizes)
    compiler = compiler or find_compiler()
    source = path.read_bytes()
    key = _cache_key(source, sizes, compiler)
    if key in _memory_cache:
        return _memory_cache[key], path
    cached = _cache_dir() / f"{key}.json"
    text = None
    if cached.is_file():
        text = cached.read_text(encoding="utf-8")
    else:
        command = [compiler, "emit", "--target", "json", str(path)]
        for name, value in sizes.items():
            command += ["-D", f"{name}={value}"]
        try:
            done = subprocess.run(command, capture_output=True, text=True,
                                  timeout=_COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ScheduleError(f"pipec did not finish compiling {path} within "
                                f"{_COMPILE_TIMEOUT_S} s") from None
        if done.returncode != 0:
            sizes_text = ", ".join(f"{k} = {v}" for k, v in sizes.items())
            raise ScheduleError(f"pipec rejected {path.name} at {sizes_text}:\n"
                                f"{done.stderr.strip()}")
        text = done.stdout
        try:  # atomic: every rank of a job may compile the same size at once
            cached.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=cached.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, cached)
        except OSError:
            pass  # a read-only cache only costs a recompile
    program = parse_program(json.loads(text))
    _memory_cache[key] = program
    return program, path
