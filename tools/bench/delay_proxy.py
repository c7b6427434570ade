#!/usr/bin/env python3
"""A TCP proxy that holds every byte going to the server for --delay-ms: a request reaches the
server that much later, as over a link with that one-way delay (netem's job, where the kernel
has it). Answers flow back untouched, so the proxy costs little CPU and bandwidth and the
benchmark measures latency, not the proxy. Standard library only (asyncio).

  delay_proxy.py --upstream 127.0.0.1:8080 --delay-ms 30     # prints the port it listens on
"""
import argparse
import asyncio
import sys


class Pipe(asyncio.Protocol):
    """One direction of one connection: writes what it receives to `peer`, after `delay` s."""

    def __init__(self, loop, delay):
        self.loop, self.delay, self.peer = loop, delay, None
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        if self.delay > 0:
            self.loop.call_later(self.delay, self._forward, data)
        else:
            self._forward(data)

    def _forward(self, data):
        if self.peer is not None and not self.peer.is_closing():
            self.peer.write(data)

    def connection_lost(self, exc):
        if self.peer is not None:
            # A close also waits out the delay, so it does not overtake the data before it.
            self.loop.call_later(self.delay, self.peer.close)


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--upstream", required=True, help="host:port")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--delay-ms", type=float, default=30)
    a = ap.parse_args()
    host, port = a.upstream.rsplit(":", 1)
    loop = asyncio.get_running_loop()

    class Client(Pipe):
        def connection_made(self, transport):
            super().connection_made(transport)
            transport.pause_reading()
            loop.create_task(self._connect())

        async def _connect(self):
            try:
                up_t, up_p = await loop.create_connection(lambda: Pipe(loop, 0), host, int(port))
            except OSError:
                self.transport.close()
                return
            self.peer = up_t
            up_p.peer = self.transport
            self.transport.resume_reading()

    server = await loop.create_server(lambda: Client(loop, a.delay_ms / 1000), "127.0.0.1",
                                      a.port)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
