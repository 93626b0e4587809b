#!/usr/bin/env python3
"""A logging reverse proxy on loopback, for reproductions over Streamable HTTP.

Usage: http_tee.py --upstream http://127.0.0.1:PORT --log FILE [--port-file FILE]

Forwards every request to the upstream server and streams its answer back as it comes (an SSE
stream stays a stream), and appends to FILE one JSON line per request and one per piece of an
answer's body: {"t", "conn", "kind": "request"|"response"|"body"|"end", ...}. Prints
`http_tee: listening on http://127.0.0.1:PORT` once it listens.
"""

import argparse
import http.client
import itertools
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}
LOCK = threading.Lock()
COUNTER = itertools.count(1)
START = time.time()
ARGS = None


def note(entry):
    entry["t"] = round(time.time() - START, 3)
    with LOCK:
        with open(ARGS.log, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def relay(self):
        n = next(COUNTER)
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        note({"conn": n, "kind": "request", "method": self.command, "path": self.path,
              "headers": dict(self.headers.items()), "body": body.decode("utf-8", "replace")})
        up = urlsplit(ARGS.upstream)
        conn = http.client.HTTPConnection(up.hostname, up.port, timeout=600)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        try:
            conn.request(self.command, self.path, body=body or None, headers=headers)
            resp = conn.getresponse()
        except OSError as e:
            note({"conn": n, "kind": "end", "error": repr(e)})
            self.send_error(502)
            return
        rh = [(k, v) for k, v in resp.getheaders() if k.lower() not in HOP]
        note({"conn": n, "kind": "response", "status": resp.status, "headers": dict(rh)})
        self.send_response_only(resp.status, resp.reason)
        fixed = resp.getheader("content-length") is not None
        for k, v in rh:
            self.send_header(k, v)
        if not fixed:
            self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            while True:
                chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(65536)
                if not chunk:
                    break
                note({"conn": n, "kind": "body", "data": chunk.decode("utf-8", "replace")})
                if fixed:
                    self.wfile.write(chunk)
                else:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            if not fixed:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            note({"conn": n, "kind": "end"})
        except OSError as e:
            note({"conn": n, "kind": "end", "error": "client or server went away: %r" % e})
            self.close_connection = True
        finally:
            conn.close()

    do_GET = do_POST = do_DELETE = do_PUT = do_OPTIONS = relay


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--port-file")
    ARGS = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    srv.daemon_threads = True
    port = srv.server_address[1]
    if ARGS.port_file:
        with open(ARGS.port_file + ".tmp", "w") as f:
            f.write(str(port))
        os.replace(ARGS.port_file + ".tmp", ARGS.port_file)
    print("http_tee: listening on http://127.0.0.1:%d" % port, flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
