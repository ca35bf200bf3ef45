#!/usr/bin/env python3
"""Opens files in `pipec lsp` and prints the diagnostics it publishes, one line
each, as `pipec check` prints them ("FILE:LINE:COL: warning: MESSAGE [Code]"),
so that lit tests can check the language server's own diagnostics with FileCheck.

usage: lsp_diagnostics.py PIPEC FILE... [-- LSP_ARGUMENTS...]
"""
import json
import os
import select
import subprocess
import sys

DEADLINE = 60  # seconds an answer may take before the server counts as hung


def main():
    args = sys.argv[1:]
    extra = []
    if "--" in args:
        extra = args[args.index("--") + 1:]
        args = args[:args.index("--")]
    pipec, files = args[0], args[1:]
    proc = subprocess.Popen([pipec, "lsp", *extra], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    buffer = b""

    def send(message):
        body = json.dumps(message).encode()
        proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        proc.stdin.flush()

    def receive():
        nonlocal buffer
        while True:
            if b"\r\n\r\n" in buffer:
                head, rest = buffer.split(b"\r\n\r\n", 1)
                length = int(head.decode().split("Content-Length:")[1].strip())
                if len(rest) >= length:
                    buffer = rest[length:]
                    return json.loads(rest[:length])
            ready, _, _ = select.select([proc.stdout], [], [], DEADLINE)
            if not ready:
                sys.exit("lsp_diagnostics: the server did not answer (hung?)")
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                sys.exit("lsp_diagnostics: the server closed its output early")
            buffer += chunk

    send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
    while "id" not in receive():
        pass
    for path in files:
        uri = "file://" + os.path.abspath(path)
        with open(path) as f:
            text = f.read()
        send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "pipe", "version": 1, "text": text}}})
        while True:
            message = receive()
            if (message.get("method") == "textDocument/publishDiagnostics" and
                    message["params"]["uri"] == uri):
                break
        for d in message["params"]["diagnostics"]:
            start = d["range"]["start"]
            severity = {1: "error", 2: "warning"}.get(d["severity"], "note")
            print(f"{os.path.basename(path)}:{start['line'] + 1}:{start['character'] + 1}: "
                  f"{severity}: {d['message']} [{d['code']}]")
    send({"jsonrpc": "2.0", "id": 1, "method": "shutdown", "params": {}})
    send({"jsonrpc": "2.0", "method": "exit", "params": {}})
    proc.stdin.close()
    return proc.wait(DEADLINE)


if __name__ == "__main__":
    sys.exit(main())
