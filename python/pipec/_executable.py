"""The `pipec` command of a wheel that carries the compiler (scripts/build_wheel.py).

Such a wheel holds the executable as pipec/bin/pipec, with the shared libraries
it needs that a CI runner may lack (libfmt) beside it; this entry point runs it
with that directory on the library path, so `pip install pipec-*.whl` puts a
working `pipec` on PATH (what pipec.compiler.find_compiler looks for). A wheel
built from python/ alone (pip install ./python) has no bin/ and says so.
"""
import os
import sys

BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin")


def main() -> None:
    exe = os.path.join(BIN, "pipec")
    if not os.path.isfile(exe):
        sys.exit("pipec: this installation carries no compiler executable (it was installed "
                 "from python/, not from a wheel built by scripts/build_wheel.py); build pipec "
                 "(./build.sh) and set $PIPEC, or install such a wheel")
    if not os.access(exe, os.X_OK):  # an installer that dropped the mode bits
        try:
            os.chmod(exe, 0o755)
        except OSError as error:
            sys.exit(f"pipec: {exe} is not executable and cannot be made so: {error}")
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = BIN + (os.pathsep + env["LD_LIBRARY_PATH"]
                                    if env.get("LD_LIBRARY_PATH") else "")
    os.execve(exe, [exe] + sys.argv[1:], env)


if __name__ == "__main__":
    main()
