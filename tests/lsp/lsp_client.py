#!/usr/bin/env python3
"""A scripted editor session against `pipec lsp` (Python stdlib only).

Usage: lsp_client.py PIPEC EXAMPLES_DIR

Drives the server through what an editor does (initialize, open, change, hover,
go to definition, format, close, shutdown, exit) and through what a broken
client might send (requests before initialize, unknown methods, malformed JSON,
bad headers, an oversized message, input that ends early), checking every
answer. The server must never crash or hang: every read has a deadline (a hang
fails the test; no speed is asserted).
"""
import json
import os
import select
import subprocess
import sys

DEADLINE = 60  # seconds a single answer may take before the server counts as hung
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


class Server:
    def __init__(self, pipec, extra=()):
        self.proc = subprocess.Popen([pipec, "lsp", *extra], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.buffer = b""
        self.next_id = 0
        self.notifications = []  # received while waiting for a response

    def send_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message):
        body = json.dumps(message).encode()
        self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def _fill(self):
        ready, _, _ = select.select([self.proc.stdout], [], [], DEADLINE)
        if not ready:
            raise SystemExit("FAIL: the server did not answer within %d s (hung?)" % DEADLINE)
        chunk = os.read(self.proc.stdout.fileno(), 65536)
        if not chunk:
            raise SystemExit("FAIL: the server closed its output early; stderr:\n" +
                             self.proc.stderr.read().decode(errors="replace"))
        self.buffer += chunk

    def receive(self):
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        length = int(head.decode().split("Content-Length:")[1].strip())
        while len(self.buffer) < length:
            self._fill()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return json.loads(body)

    def request(self, method, params=None):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}})
        return self.answer(self.next_id)

    def answer(self, id):
        """The response to request `id`; notifications before it are kept."""
        while True:
            message = self.receive()
            if "method" in message:
                self.notifications.append(message)
                continue
            check(message.get("id") == id, "responses come in order: %r" % message)
            return message

    def notify(self, method, params=None):
        self.send({"jsonrpc": "2.0", "method": method, "params": params or {}})

    def diagnostics(self, uri, with_version=False):
        """The next diagnostics published for `uri` (and the version they are of)."""
        while True:
            for i, message in enumerate(self.notifications):
                if (message["method"] == "textDocument/publishDiagnostics" and
                        message["params"]["uri"] == uri):
                    del self.notifications[i]
                    params = message["params"]
                    if with_version:
                        return params["diagnostics"], params.get("version")
                    return params["diagnostics"]
            message = self.receive()
            check("method" in message, "no response without a request: %r" % message)
            self.notifications.append(message)

    def finish(self):
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            code = self.proc.wait(DEADLINE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise SystemExit("FAIL: the server did not exit at the end of its input")
        return code, self.proc.stderr.read().decode(errors="replace")


def position_of(text, needle, nth=0, offset=0):
    """The LSP position of the nth occurrence of needle (+ offset characters)."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    at += offset
    line = text.count("\n", 0, at)
    return {"line": line, "character": at - (text.rfind("\n", 0, at) + 1)}


def hover_text(server, uri, position):
    result = server.request("textDocument/hover",
                            {"textDocument": {"uri": uri}, "position": position})
    return (result.get("result") or {}).get("contents", {}).get("value", "")


def budget_session(pipec, source):
    """The analyses kept fit --memory-budget: with room for one 1F1B analysis,
    opening a second releases the first (its diagnostics stay published); a
    request on a released document answers null and asks for it again, and once
    its diagnostics come again the request is answered in full."""
    s = Server(pipec, ["--memory-budget=60000"])
    s.request("initialize", {})
    a, b = "file:///work/a.pipe", "file:///work/b.pipe"
    at = position_of(source, "require P", offset=8)
    s.notify("textDocument/didOpen", {"textDocument": {
        "uri": a, "languageId": "pipe", "version": 1, "text": source}})
    check(s.diagnostics(a) == [], "budget: the first document is analysed")
    check("parameter `P`" in hover_text(s, a, at), "budget: the first document answers")
    s.notify("textDocument/didOpen", {"textDocument": {
        "uri": b, "languageId": "pipe", "version": 1, "text": source}})
    check(s.diagnostics(b) == [], "budget: the second document is analysed")
    check(hover_text(s, a, at) == "", "budget: the first document's analysis was released")
    check(s.diagnostics(a) == [], "budget: the released document is analysed again on request")
    check("parameter `P`" in hover_text(s, a, at), "budget: ... and answers again")
    check(hover_text(s, b, at) == "", "budget: now the second one was released")
    s.request("shutdown")
    s.notify("exit")
    code, stderr = s.finish()
    check(code == 0, "budget session exits cleanly: %d %r" % (code, stderr))


def burst_session(pipec, source):
    """Ten full-text edits sent at once: every request is answered, and the
    diagnostics published for the document are of ever newer versions, ending
    with the newest (queued edits are analysed as one, never out of order)."""
    s = Server(pipec)
    s.request("initialize", {})
    uri = "file:///work/burst.pipe"
    s.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "pipe", "version": 1, "text": source}})
    burst = b""
    for version in range(2, 12):
        text = source + "// edit %d\n" % version
        body = json.dumps({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"text": text}]}}).encode()
        burst += b"Content-Length: %d\r\n\r\n" % len(body) + body
    s.send_raw(burst)
    hovered = s.request("textDocument/hover", {"textDocument": {"uri": uri},
                                               "position": {"line": 0, "character": 0}})
    check("result" in hovered, "burst: a request during the edits is answered: %r" % hovered)
    versions = []
    while not versions or versions[-1] != 11:
        diagnostics, version = s.diagnostics(uri, with_version=True)
        check(diagnostics == [], "burst: every version is clean: %r" % diagnostics)
        versions.append(version)
    check(versions == sorted(set(versions)) and len(versions) <= 11,
          "burst: diagnostics of ever newer versions: %r" % versions)
    s.request("shutdown")
    s.notify("exit")
    code, stderr = s.finish()
    check(code == 0, "burst session exits cleanly: %d %r" % (code, stderr))


def main():
    pipec, examples = sys.argv[1], sys.argv[2]
    with open(os.path.join(examples, "1f1b.pipe")) as f:
        one_f_one_b = f.read()

    # --- a normal session ------------------------------------------------------
    s = Server(pipec)
    early = s.request("textDocument/hover", {})
    check(early.get("error", {}).get("code") == -32002, "a request before initialize is refused")
    init = s.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    caps = init["result"]["capabilities"]
    check(caps.get("hoverProvider") and caps.get("definitionProvider") and
          caps.get("documentFormattingProvider"), "capabilities: hover, definition, formatting")
    check(caps["textDocumentSync"]["change"] == 1, "full document sync")
    s.notify("initialized")

    uri = "file:///work/1f1b.pipe"
    s.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "pipe", "version": 1, "text": one_f_one_b}})
    check(s.diagnostics(uri) == [], "the library's 1F1B has no diagnostics")

    text = hover_text(s, uri, position_of(one_f_one_b, "require P", offset=8))
    check("parameter `P` = 4" in text, "hover on a parameter shows its value: %r" % text)
    text = hover_text(s, uri, position_of(one_f_one_b, "warmup", nth=1))
    check("let `warmup`" in text and "rank 0: 3" in text and "rank 3: 0" in text,
          "hover on a rank's let shows its value on each rank: %r" % text)
    text = hover_text(s, uri, position_of(one_f_one_b, "{ F; B; }", offset=2))
    check("rank 2:" in text and "F0.1, stage 2, micro-batch 1 (i = 0)" in text,
          "hover on an op lists the ops it elaborated to: %r" % text)
    check(hover_text(s, uri, {"line": 0, "character": 0}) == "", "no hover in a comment")
    check(hover_text(s, uri, {"line": 9999, "character": 9999}) == "",
          "a position past the end is no error")

    definition = s.request("textDocument/definition", {
        "textDocument": {"uri": uri}, "position": position_of(one_f_one_b, "warmup", nth=2)})
    let_line = position_of(one_f_one_b, "let warmup")["line"]
    check(definition["result"]["range"]["start"]["line"] == let_line,
          "go to definition of a let: %r" % definition)
    definition = s.request("textDocument/definition", {
        "textDocument": {"uri": uri}, "position": position_of(one_f_one_b, "ranks P", offset=6)})
    check(definition["result"]["range"]["start"] == position_of(one_f_one_b, "P = 4"),
          "go to definition of a parameter: %r" % definition)

    formatted = s.request("textDocument/formatting", {
        "textDocument": {"uri": uri}, "options": {"tabSize": 2, "insertSpaces": True}})
    check(formatted.get("result") == [], "the library needs no formatting")

    # An edit with an error: diagnostics with a code, a range and a severity.
    broken = one_f_one_b.replace("for i in 0..warmup { B; }", "for i in 0..warmup + 1 { W; }")
    s.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                        "contentChanges": [{"text": broken}]})
    diagnostics = s.diagnostics(uri)
    check(len(diagnostics) >= 1 and diagnostics[0]["severity"] == 1 and
          diagnostics[0]["code"].isidentifier() and diagnostics[0]["source"] == "pipec",
          "a check failure is published as an error with its kind: %r" % diagnostics)
    unmatched = [d for d in diagnostics if d["code"] == "UnmatchedW"]
    check(unmatched and "\nnote: every W completes an earlier I" in unmatched[0]["message"],
          "a note without a place is appended to the message: %r" % diagnostics)
    check(unmatched and any("on rank" in r["message"] and r["location"]["uri"] == uri
                            for r in unmatched[0].get("relatedInformation", [])),
          "a note with a place is related information: %r" % diagnostics)
    check(unmatched and unmatched[0]["range"]["start"] == position_of(broken, "W; }"),
          "the diagnostic is at the W: %r" % diagnostics)

    # A syntax error, then a messy layout that formats.
    s.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3},
                                        "contentChanges": [{"text": "schedule s( {"}]})
    diagnostics = s.diagnostics(uri)
    check(diagnostics and diagnostics[0]["code"] == "SyntaxError", "syntax errors: %r" % diagnostics)
    refused = s.request("textDocument/formatting", {"textDocument": {"uri": uri}, "options": {}})
    check(refused.get("error", {}).get("code") == -32803, "a file that does not parse is not formatted")
    messy = one_f_one_b.replace("  ranks P;", "ranks   P ;")
    s.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 4},
                                        "contentChanges": [{"text": messy}]})
    check(s.diagnostics(uri) == [], "back to a clean file")
    edits = s.request("textDocument/formatting", {"textDocument": {"uri": uri}, "options": {}})
    check(len(edits["result"]) == 1 and edits["result"][0]["newText"] == one_f_one_b,
          "formatting returns the formatted text: %r" % edits)

    # An incremental change is accepted too.
    start = position_of(messy, "ranks   P ;")
    s.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 5},
                                        "contentChanges": [{"range": {
                                            "start": start,
                                            "end": {"line": start["line"], "character": 11}},
                                            "text": "  ranks P;"}]})
    check(s.diagnostics(uri) == [], "an incremental change")
    edits = s.request("textDocument/formatting", {"textDocument": {"uri": uri}, "options": {}})
    check(edits.get("result") == [], "the incremental change restored the formatted text")

    # Positions count UTF-16 code units: an emoji is two, an accented letter one.
    uri2 = "file:///work/unicode%20name.pipe"
    unicode_text = one_f_one_b.replace("    let warmup = P - r - 1;",
                                       "    /* \U0001F600 \u00e9 */ let warmup = P - r - 1;")
    s.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri2, "languageId": "pipe", "version": 1, "text": unicode_text}})
    check(s.diagnostics(uri2) == [], "a document with non-ASCII comments")
    line_start = unicode_text.rfind("\n", 0, unicode_text.index("let warmup")) + 1
    column = len(unicode_text[line_start:unicode_text.index("let warmup") + 4].encode("utf-16-le")) // 2
    line = unicode_text.count("\n", 0, line_start)
    text = hover_text(s, uri2, {"line": line, "character": column})
    check("let `warmup`" in text, "hover after an emoji, at a UTF-16 position: %r" % text)
    definition = s.request("textDocument/definition", {
        "textDocument": {"uri": uri2}, "position": {"line": line, "character": column}})
    check(definition["result"]["range"]["start"] == {"line": line, "character": column},
          "ranges are in UTF-16 code units too: %r" % definition)
    s.notify("textDocument/didClose", {"textDocument": {"uri": uri2}})
    check(s.diagnostics(uri2) == [], "closing the second document")

    # What a broken client might send.
    unknown = s.request("textDocument/semanticTokens/full", {"textDocument": {"uri": uri}})
    check(unknown.get("error", {}).get("code") == -32601, "an unknown request: MethodNotFound")
    s.notify("workspace/unknownNotification", {"x": 1})
    s.send_raw(b"Content-Length: 9\r\n\r\n{not json")
    parse_error = s.receive()
    check(parse_error.get("error", {}).get("code") == -32700 and parse_error.get("id") is None,
          "malformed JSON: a ParseError with a null id: %r" % parse_error)
    deep = b"[" * 100000 + b"]" * 100000
    s.send_raw(b"Content-Length: %d\r\n\r\n" % len(deep) + deep)
    check(s.receive().get("error", {}).get("code") == -32600, "deeply nested JSON is refused")
    s.send_raw(b"X-Nonsense\r\n\r\n")  # a header block without Content-Length
    s.send_raw(b"Content-Length: 2\r\nno colon here\r\n\r\n{}")  # a bad header; body skipped
    closed = s.request("textDocument/hover", {"textDocument": {"uri": "file:///nope.pipe"},
                                              "position": {"line": 0, "character": 0}})
    check(closed.get("error", {}).get("code") == -32602, "a document that is not open")

    s.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    check(s.diagnostics(uri) == [], "closing clears the diagnostics")
    check(s.request("shutdown").get("result", "missing") is None, "shutdown answers null")
    after = s.request("textDocument/hover", {})
    check(after.get("error", {}).get("code") == -32600, "requests after shutdown are refused")
    s.notify("exit")
    code, stderr = s.finish()
    check(code == 0, "exit after shutdown: status 0 (got %d)" % code)
    check("not JSON" in stderr and "X-Nonsense" in stderr and "no colon here" in stderr,
          "the bad messages were reported on stderr: %r" % stderr)

    # --- the input ends without shutdown: status 1, a message, no hang ----------------
    s = Server(pipec)
    s.request("initialize", {})
    code, stderr = s.finish()
    check(code == 1 and "ended" in stderr, "end of input without shutdown: %d %r" % (code, stderr))

    # --- shutdown, then the input ends without exit: status 0 --------------------------
    s = Server(pipec)
    s.request("initialize", {})
    s.request("shutdown")
    code, stderr = s.finish()
    check(code == 0 and stderr == "", "end of input after shutdown: %d %r" % (code, stderr))

    # --- an oversized message is skipped, not read into memory ----------------------------
    s = Server(pipec)
    s.send_raw(b"Content-Length: 999999999999999\r\n\r\n" + b" " * 1000)
    code, stderr = s.finish()
    check(code == 1 and "ended" in stderr, "an oversized message at the end of input: %r" % stderr)
    s = Server(pipec)
    big = (64 << 20) + 1
    s.send_raw(b"Content-Length: %d\r\n\r\n" % big)
    chunk = b" " * (1 << 20)
    for _ in range(big // len(chunk)):
        s.send_raw(chunk)
    s.send_raw(b" " * (big % len(chunk)))
    init = s.request("initialize", {})
    check("result" in init, "after an oversized message the next one is read")
    code, stderr = s.finish()
    check("over the limit" in stderr, "the oversized message is reported: %r" % stderr)

    budget_session(pipec, one_f_one_b)
    burst_session(pipec, one_f_one_b)

    if failures:
        print("%d check(s) failed" % len(failures), file=sys.stderr)
        return 1
    print("lsp session: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
