"""A local HTTP server of a dataset directory that can hold requests back: remote data that does
not come, for the tests of what a wait on it does (Ctrl-C). Standard library only.

It answers GETs as the loader's remote storage expects (docs/remote.md): 200 with the whole file,
or 206 with exactly the "Range: bytes=a-b" asked and its Content-Range. While `stall` is set,
every request whose path contains it is held until release() (or 120 s) before it is answered,
and `stalled` is set as soon as one is held.
"""
import http.server
import os
import re
import socketserver
import threading


class StallServer:
    def __init__(self, root):
        self.root = root
        self.stall = None
        self.stalled = threading.Event()
        self._release = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                stall = server.stall
                if stall is not None and stall in self.path:
                    server.stalled.set()
                    server._release.wait(120)
                path = os.path.join(server.root, self.path.lstrip("/"))
                try:
                    with open(path, "rb") as f:
                        data = f.read()
                except OSError:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                m = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
                if m:
                    first, last = int(m.group(1)), min(int(m.group(2)), len(data) - 1)
                    body = data[first:last + 1]
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {first}-{last}/{len(data)}")
                else:
                    body = data
                    self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self._httpd = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def release(self):
        """Answers the requests held back, and every later one at once."""
        self.stall = None
        self._release.set()

    def close(self):
        self.release()
        self._httpd.shutdown()
        self._httpd.server_close()
