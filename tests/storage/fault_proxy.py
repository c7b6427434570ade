#!/usr/bin/env python3
"""An HTTP proxy with faults, between a sluice reader and a real server (tests/storage, the
remote benchmark). Standard library only.

It forwards each GET (with its Range header) to --upstream over one keep-alive connection per
client connection, and per request, decided by a seeded random generator, may:
  --drop-rate R      close the connection without an answer
  --error-rate R     answer 503 (Retry later)
  --truncate-rate R  send the right headers, then only part of the body, then close
  --delay-ms N       wait N ms before answering every request (latency)
  --flip-file F --flip-offset O
                     flip one bit of byte O of file F (its path ends in /F) in every answer
                     whose body holds that byte: damage that retries cannot repair
  --error-on-flip    answer 503 instead of flipping: a block that never comes
  --flip-count N     flip only the first N answers that hold the byte (default 0: every one):
                     one damaged response that a second request would not see
  --garble-rate R    answer with a few bytes that are no HTTP status line, then close
  --trickle-ms N     send the right headers, then the body one byte every N ms (a server
                     that never falls silent but never finishes)
  --fault-paths S    only requests whose path contains S are faulted (default: all)
It prints the port it listens on, then serves until killed. Stats: GET /__proxy_stats.
"""
import argparse
import http.client
import http.server
import json
import random
import socketserver
import sys
import threading
import time
import urllib.parse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--upstream", required=True, help="host:port of the real server")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--drop-rate", type=float, default=0)
    ap.add_argument("--error-rate", type=float, default=0)
    ap.add_argument("--truncate-rate", type=float, default=0)
    ap.add_argument("--delay-ms", type=float, default=0)
    ap.add_argument("--flip-file", default="")
    ap.add_argument("--flip-offset", type=int, default=-1)
    ap.add_argument("--error-on-flip", action="store_true")
    ap.add_argument("--flip-count", type=int, default=0)
    ap.add_argument("--garble-rate", type=float, default=0)
    ap.add_argument("--trickle-ms", type=float, default=0)
    ap.add_argument("--fault-paths", default="")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    lock = threading.Lock()
    stats = {"requests": 0, "bytes": 0, "dropped": 0, "errors": 0, "truncated": 0,
             "flipped": 0, "garbled": 0, "trickled": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def upstream(self):
            if getattr(self, "_up", None) is None:
                self._up = http.client.HTTPConnection(args.upstream, timeout=30)
            return self._up

        def do_GET(self):
            if self.path == "/__proxy_stats":
                body = json.dumps(stats).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            faultable = args.fault_paths in self.path
            with lock:
                stats["requests"] += 1
                roll = rng.random() if faultable else 1.0
            if args.delay_ms:
                time.sleep(args.delay_ms / 1000)
            if roll < args.drop_rate:
                with lock:
                    stats["dropped"] += 1
                self.close_connection = True
                return
            roll -= args.drop_rate
            if roll < args.error_rate:
                with lock:
                    stats["errors"] += 1
                body = b"injected fault\n"
                self.send_response(503)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            roll -= args.error_rate
            if roll < args.garble_rate:
                with lock:
                    stats["garbled"] += 1
                self.wfile.write(b"xx")
                self.wfile.flush()
                self.close_connection = True
                return
            roll -= args.garble_rate
            truncate = roll < args.truncate_rate
            headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
            try:
                up = self.upstream()
                up.request("GET", self.path, headers=headers)
                resp = up.getresponse()
                body = resp.read()
            except (OSError, http.client.HTTPException):
                self._up = None
                self.close_connection = True
                return
            first = 0
            cr = resp.getheader("Content-Range")
            if cr and cr.startswith("bytes "):
                first = int(cr[6:].split("-")[0])
            path = urllib.parse.urlparse(self.path).path
            if args.flip_file and path.endswith("/" + args.flip_file):
                i = args.flip_offset - first
                if 0 <= i < len(body) and args.error_on_flip:
                    with lock:
                        stats["errors"] += 1
                    msg = b"injected fault\n"
                    self.send_response(503)
                    self.send_header("Content-Length", str(len(msg)))
                    self.end_headers()
                    self.wfile.write(msg)
                    return
                if 0 <= i < len(body):
                    with lock:
                        flip = args.flip_count == 0 or stats["flipped"] < args.flip_count
                        if flip:
                            stats["flipped"] += 1
                    if flip:
                        body = body[:i] + bytes([body[i] ^ 0x10]) + body[i + 1:]
            self.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() not in ("connection", "transfer-encoding", "keep-alive", "server",
                                     "date"):
                    self.send_header(k, v)
            self.end_headers()
            if truncate and len(body) > 1:
                with lock:
                    stats["truncated"] += 1
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            if args.trickle_ms and faultable:
                with lock:
                    stats["trickled"] += 1
                try:
                    for i in range(len(body)):
                        self.wfile.write(body[i:i + 1])
                        self.wfile.flush()
                        time.sleep(args.trickle_ms / 1000)
                except OSError:  # the client gave up on us: what it should do
                    self.close_connection = True
                return
            self.wfile.write(body)
            with lock:
                stats["bytes"] += len(body)

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True

    srv = Server(("127.0.0.1", args.port), Handler)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
