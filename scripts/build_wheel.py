#!/usr/bin/env python3
"""Builds a wheel of the pipec package that carries a working `pipec` executable,
so a CI runner gets the compiler with one `pip install` (issue 25 item 22).

    python3 scripts/build_wheel.py [--pipec build/bin/pipec] [--out dist/]

The wheel holds python/pipec (the package), the schedule library
(examples/*.pipe, as pipec/schedules/, where pipec.compiler looks), the
executable as pipec/bin/pipec, stripped, and every shared library it links that
is not part of a base Linux system (`ldd`: libfmt here; LLVM Support and the
ANTLR runtime are linked statically already), and a `pipec` console script
(pipec/_executable.py) that runs it with bin/ on the library path.

The wheel is written directly (a zip with the .dist-info files the wheel format
asks for), not through setuptools, so python/pyproject.toml stays the plain
package's. Its tag is py3-none-manylinux_<glibc>_<arch>: the glibc the
executable was linked against, so pip refuses it on an older system instead of
installing a binary that cannot start. No auditwheel run: the libraries kept
out (libc, libm, libstdc++, libgcc_s, libtinfo) are on every glibc system of
that age.
"""
import argparse
import base64
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Present on every glibc Linux (and the runners' images): not bundled.
SYSTEM = ("linux-vdso", "libc.so", "libm.so", "libstdc++.so", "libgcc_s.so", "ld-linux",
          "libtinfo.so", "libpthread.so", "libdl.so", "librt.so")


def package_version():
    text = open(os.path.join(ROOT, "python", "pyproject.toml")).read()
    return re.search(r'^version\s*=\s*"([^"]+)"', text, re.M).group(1)


def bundled_libraries(exe):
    libs = []
    for line in subprocess.run(["ldd", exe], capture_output=True, text=True, check=True).stdout.splitlines():
        m = re.match(r"\s*(\S+)\s*=>\s*(\S+)", line)
        if m and not m.group(1).startswith(SYSTEM):
            if m.group(2) == "not":
                sys.exit(f"build_wheel: {exe} needs {m.group(1)}, which is not installed")
            libs.append(m.group(2))
    return libs


def glibc_tag():
    major, minor = (int(x) for x in platform.libc_ver()[1].split(".")[:2])
    return f"manylinux_{major}_{minor}_{platform.machine()}"


def record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipec", default=os.path.join(ROOT, "build", "bin", "pipec"))
    parser.add_argument("--out", default=os.path.join(ROOT, "dist"))
    args = parser.parse_args()
    if not os.access(args.pipec, os.X_OK):
        sys.exit(f"build_wheel: no pipec executable at {args.pipec} (./build.sh first)")
    version, tag = package_version(), glibc_tag()
    name = f"pipec-{version}-py3-none-{tag}.whl"
    files = []  # (arcname, bytes, executable)
    package = os.path.join(ROOT, "python", "pipec")
    for dirpath, _, filenames in os.walk(package):
        for f in sorted(filenames):
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                files.append((os.path.relpath(path, os.path.dirname(package)), open(path, "rb").read(), False))
    for f in sorted(os.listdir(os.path.join(ROOT, "examples"))):
        if f.endswith(".pipe"):
            files.append((f"pipec/schedules/{f}", open(os.path.join(ROOT, "examples", f), "rb").read(), False))
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "pipec")
        shutil.copy2(args.pipec, exe)
        subprocess.run(["strip", "--strip-unneeded", exe], check=True)
        files.append(("pipec/bin/pipec", open(exe, "rb").read(), True))
        for lib in bundled_libraries(args.pipec):
            files.append((f"pipec/bin/{os.path.basename(lib)}", open(lib, "rb").read(), False))
    info = f"pipec-{version}.dist-info"
    readme = open(os.path.join(ROOT, "python", "README.md")).read() \
        if os.path.exists(os.path.join(ROOT, "python", "README.md")) else ""
    files += [
        (f"{info}/METADATA", (f"Metadata-Version: 2.1\nName: pipec\nVersion: {version}\n"
                              "Summary: pipec, the pipeline-schedule compiler, with its PyTorch runtime\n"
                              "Requires-Python: >=3.9\nProvides-Extra: torch\n"
                              "Requires-Dist: torch>=2.2; extra == \"torch\"\n"
                              "Description-Content-Type: text/markdown\n\n" + readme).encode(), False),
        (f"{info}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: pipec scripts/build_wheel.py\n"
                           f"Root-Is-Purelib: false\nTag: py3-none-{tag}\n").encode(), False),
        (f"{info}/entry_points.txt", b"[console_scripts]\npipec = pipec._executable:main\n", False),
    ]
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, name)
    records = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as whl:
        for arcname, data, executable in files:
            entry = zipfile.ZipInfo(arcname, date_time=(2024, 1, 1, 0, 0, 0))
            entry.external_attr = (0o100755 if executable else 0o100644) << 16  # regular file, mode
            entry.compress_type = zipfile.ZIP_DEFLATED
            whl.writestr(entry, data)
            records.append(record_line(arcname, data))
        records.append(f"{info}/RECORD,,")
        whl.writestr(f"{info}/RECORD", "\n".join(records) + "\n")
    print(f"{path}: {os.path.getsize(path) / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
