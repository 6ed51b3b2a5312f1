"""A RoomLink client written from docs/roomlink.proto alone: framing, hello, login, heartbeats, logout.

It knows nothing of the Swift code; `protoc --python_out` generates `roomlink_pb2` from the schema, and the framing
is the one the schema's header describes (a 4-byte big-endian length, then one encoded frame).
"""

import socket
import struct
import time


class WireClient:
    """One connection to `roomlink serve`, speaking frames of `roomlink_pb2`."""

    def __init__(self, pb, host, port, timeout=20.0, tls=None, server_hostname=None):
        """`tls`: an `ssl.SSLContext` to speak TLS with (`roomlink serve --tls-cert`), checking the certificate
        against `server_hostname` (default: `host`)."""
        self.pb = pb
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if tls is not None:
            self.sock = tls.wrap_socket(self.sock, server_hostname=server_hostname or host)
        self.buffer = b""

    def close(self):
        self.sock.close()

    def send(self, frame):
        body = frame.SerializeToString()
        self.sock.sendall(struct.pack(">I", len(body)) + body)

    def receive(self):
        """The next ServerFrame, or None when the server closed the connection."""
        while True:
            if len(self.buffer) >= 4:
                (length,) = struct.unpack(">I", self.buffer[:4])
                if length > 65536:
                    raise ValueError(f"frame of {length} bytes from the server")
                if len(self.buffer) >= 4 + length:
                    body, self.buffer = self.buffer[4 : 4 + length], self.buffer[4 + length :]
                    frame = self.pb.ServerFrame()
                    frame.ParseFromString(body)
                    return frame
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buffer += chunk

    def receive_kind(self, kind):
        """The next frame holding `kind` (skipping others, e.g. user updates); None at the end of the stream."""
        while True:
            frame = self.receive()
            if frame is None or frame.WhichOneof("message") == kind:
                return frame

    def hello(self, dialect, client_id):
        frame = self.pb.ClientFrame()
        frame.hello.protocol_version = 1
        frame.hello.dialect = dialect
        frame.hello.client_id = client_id
        self.send(frame)
        return self.receive_kind("hello_ack")

    def login(self, room, user, session, token="", notify=False, attempt=1):
        frame = self.pb.ClientFrame()
        frame.login.room = room
        frame.login.user_id = user
        frame.login.session = session
        frame.login.token = token
        frame.login.user_status_notify = notify
        frame.login.kind = self.pb.Login.KIND_JOIN
        frame.login.attempt = attempt
        frame.login.answer_within_ms = 10000
        self.send(frame)

    def heartbeat(self, room, user, session):
        frame = self.pb.ClientFrame()
        frame.heartbeat.room = room
        frame.heartbeat.user_id = user
        frame.heartbeat.session = session
        self.send(frame)

    def logout(self, room, user, session):
        frame = self.pb.ClientFrame()
        frame.logout.room = room
        frame.logout.user_id = user
        frame.logout.session = session
        self.send(frame)

    def media(self, room):
        frame = self.pb.ClientFrame()
        frame.media.room = room
        self.send(frame)

    def frames_within(self, seconds):
        """Every frame that arrives within `seconds` (the connection's own timeout set aside meanwhile)."""
        frames = []
        deadline = time.monotonic() + seconds
        previous = self.sock.gettimeout()
        try:
            while (left := deadline - time.monotonic()) > 0:
                self.sock.settimeout(left)
                try:
                    frame = self.receive()
                except socket.timeout:
                    break
                if frame is None:
                    break
                frames.append(frame)
        finally:
            self.sock.settimeout(previous)
        return frames

    def renew_token(self, room, user, session, token):
        frame = self.pb.ClientFrame()
        frame.renew_token.room = room
        frame.renew_token.user_id = user
        frame.renew_token.session = session
        frame.renew_token.token = token
        self.send(frame)
