"""A TCP proxy in front of a server, to play faults to clients that know nothing of it — LiveKit's SDK, RoomLink's
clients — the same way: every connection reset at once, dials refused, or a path that carries nothing while both
sockets stay open."""

import asyncio
import socket
import struct
import time


class FaultProxy:
    """Forwards 127.0.0.1:`port` to 127.0.0.1:`target` (its `port` is ephemeral)."""

    def __init__(self, target):
        self.target, self.pairs = target, []
        # When each connection arrived (time.monotonic()): a client's dial, as the server's side sees it.
        self.accepted_at = []
        self.refusing = False
        self.carrying = asyncio.Event()
        self.carrying.set()

    async def start(self):
        self.server = await asyncio.start_server(self.accept, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def stop(self):
        self.abort()
        self.server.close()

    @staticmethod
    def reset(writer):
        """Closes with a reset (RST), as a dead path or a crashed peer looks to the other end."""
        sock = writer.get_extra_info("socket")
        try:
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass  # already closed by its peer's side of the pipe: nothing to reset
        writer.transport.abort()

    async def accept(self, reader, writer):
        self.accepted_at.append(time.monotonic())
        if self.refusing:
            return self.reset(writer)
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            return self.reset(writer)
        pair = (writer, upstream_writer)
        self.pairs.append(pair)

        async def pipe(source, destination):
            try:
                while data := await source.read(65536):
                    await self.carrying.wait()
                    destination.write(data)
                    await destination.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                try:
                    self.reset(destination)
                except (ConnectionError, OSError, AttributeError):
                    pass

        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))
        if pair in self.pairs:
            self.pairs.remove(pair)

    def abort(self):
        """Resets every connection through the proxy."""
        for client, upstream in list(self.pairs):
            self.reset(client)
            self.reset(upstream)
        self.pairs.clear()

    def black_hole(self, on):
        """While on, nothing is carried either way, and no socket closes (bytes wait, then are lost with the path
        when it is aborted, or delivered late when it carries again)."""
        if on:
            self.carrying.clear()
        else:
            self.carrying.set()
