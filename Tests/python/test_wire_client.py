#!/usr/bin/env python3
"""The Python client from the schema against a real `roomlink serve`: it logs in, heartbeats, sees a Swift-side peer
through the admin API, is kicked, renews tokens (with and without an auth table), hears the server's goodbye on
SIGTERM, and detects a silent server by each dialect's rule (docs/protocol.md, "What each side must send").

Usage: .venv/bin/python Tests/python/test_wire_client.py PATH/TO/roomlink   (needs protoc; scripts/setup makes .venv
with requirements.txt: Python's protobuf 4.21, and prometheus_client, whose parser referees /metrics)
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    sys.exit("test_wire_client: prometheus_client is missing: run scripts/setup, then use .venv/bin/python")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ROOMLINK = None


def generate(directory):
    """roomlink_pb2 from docs/roomlink.proto, generated now: the schema is the only thing shared with Swift."""
    subprocess.run(
        ["protoc", f"--python_out={directory}", "-I", os.path.join(ROOT, "docs"), "roomlink.proto"], check=True
    )
    sys.path.insert(0, directory)
    import roomlink_pb2  # noqa: E402

    return roomlink_pb2


class Server:
    """`roomlink serve` on ephemeral ports, its addresses read from its first lines."""

    def __init__(self, *flags, scale="0.05"):
        self.process = subprocess.Popen(
            [ROOMLINK, "serve", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--time-scale", scale, *flags],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.port = self.admin = None
        self.signalled = False
        deadline = time.monotonic() + 60
        while self.port is None or self.admin is None:
            line = self.process.stdout.readline()
            if not line or time.monotonic() > deadline:
                raise RuntimeError("roomlink serve did not start")
            if "admin API on http://" in line or "admin API on https://" in line:
                self.admin = line.split("://")[1].split()[0]
            elif " on 127.0.0.1:" in line:
                self.port = int(line.split(" on 127.0.0.1:")[1].split()[0])

    def get(self, path):
        with urllib.request.urlopen(f"http://{self.admin}{path}", timeout=20) as response:
            return response.read().decode()

    def post(self, path, body):
        data = b"" if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://{self.admin}{path}", data=data, method="POST")
        with urllib.request.urlopen(request, timeout=20) as response:
            return json.loads(response.read())

    def terminate(self):
        """SIGTERM, once: a second one makes the server exit at once."""
        if not self.signalled and self.process.poll() is None:
            self.signalled = True
            self.process.send_signal(signal.SIGTERM)

    def pause(self):
        """SIGSTOP, and wait until every thread of the server has stopped: the stop takes effect when a thread of the
        process takes the signal, which a loaded machine can delay — meanwhile another thread would still answer."""
        self.process.send_signal(signal.SIGSTOP)
        deadline = time.monotonic() + 30
        tasks = f"/proc/{self.process.pid}/task"
        while time.monotonic() < deadline:
            states = []
            for task in os.listdir(tasks):
                with open(f"{tasks}/{task}/stat") as stat:
                    states.append(stat.read().rsplit(")", 1)[1].split()[0])
            if all(state in ("T", "t") for state in states):
                return
            time.sleep(0.005)
        raise RuntimeError("the server did not stop within 30 s of SIGSTOP")

    def stop(self):
        self.terminate()
        status = self.process.wait(timeout=60)
        self.process.stdout.close()
        return status


class WireClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.directory = tempfile.TemporaryDirectory()
        cls.pb = generate(cls.directory.name)
        from wire_client import WireClient

        cls.WireClient = WireClient

    def test_login_heartbeat_presence_kick_and_goodbye(self):
        pb = self.pb
        server = Server("--dialect", "zego")
        try:
            alice = self.WireClient(pb, "127.0.0.1", server.port)
            ack = alice.hello(pb.DIALECT_ZEGO, "python-alice")
            self.assertEqual(ack.hello_ack.protocol_version, 1)
            self.assertEqual(ack.hello_ack.dialect, pb.DIALECT_ZEGO)
            self.assertEqual(ack.hello_ack.heartbeat_timeout_ms, 90000)

            alice.login("room-py", "alice", 0xA11CE, notify=True, attempt=1)
            accepted = alice.receive_kind("login_accepted")
            self.assertEqual(accepted.login_accepted.room, "room-py")
            self.assertEqual(accepted.login_accepted.session, 0xA11CE)
            self.assertEqual(accepted.login_accepted.attempt, 1)
            self.assertEqual(accepted.login_accepted.heartbeat_interval_ms, 30000)
            self.assertEqual(accepted.login_accepted.heartbeat_timeout_ms, 90000)

            # Heartbeats, each acknowledged, in order.
            for _ in range(3):
                alice.heartbeat("room-py", "alice", 0xA11CE)
                ack = alice.receive_kind("heartbeat_ack")
                self.assertEqual(ack.heartbeat_ack.session, 0xA11CE)

            # A second client: alice hears it join (a user update), and the admin API lists both.
            bob = self.WireClient(pb, "127.0.0.1", server.port)
            bob.hello(pb.DIALECT_ZEGO, "python-bob")
            bob.login("room-py", "bob", 0xB0B)
            self.assertIsNotNone(bob.receive_kind("login_accepted"))
            update = alice.receive_kind("user_update")
            self.assertEqual(update.user_update.change, pb.UserUpdate.CHANGE_ADD)
            self.assertEqual(list(update.user_update.users), ["bob"])
            members = json.loads(server.get("/rooms/room-py/members"))["members"]
            self.assertEqual(members, ["alice", "bob"])

            # The business server kicks bob; alice sees him leave.
            self.assertEqual(server.post("/rooms/room-py/kick", {"users": ["bob"]})["kicked"], ["bob"])
            kicked = bob.receive_kind("kicked")
            self.assertEqual(kicked.kicked.reason, pb.Kicked.REASON_ADMIN)
            left = alice.receive_kind("user_update")
            self.assertEqual(left.user_update.change, pb.UserUpdate.CHANGE_DELETE)

            # /metrics as Prometheus reads it: its own parser takes the whole page, and the counts are the session's.
            samples = {
                (sample.name, tuple(sorted(sample.labels.items()))): sample.value
                for family in text_string_to_metric_families(server.get("/metrics"))
                for sample in family.samples
            }
            self.assertEqual(samples[("roomlink_heartbeats_total", (("dialect", "zego"),))], 3)
            accepted = ("roomlink_logins_total", (("dialect", "zego"), ("outcome", "accepted")))
            self.assertEqual(samples[accepted], 2)
            closed = ("roomlink_connections_closed_total", (("dialect", "zego"), ("reason", "protocolError")))
            self.assertEqual(samples[closed], 0)

            # A client that said hello and has not logged in yet is a client too.
            idle = self.WireClient(pb, "127.0.0.1", server.port)
            self.assertIsNotNone(idle.hello(pb.DIALECT_ZEGO, "idle"))

            # SIGTERM: every client is told why the connection closes, and the server exits 0.
            server.terminate()
            for client in (alice, idle):
                goodbye = client.receive_kind("goodbye")
                self.assertIsNotNone(goodbye)
                self.assertEqual(goodbye.goodbye.reason, pb.Goodbye.REASON_SERVER_SHUTDOWN)
                self.assertIsNone(client.receive())
            alice.close()
            bob.close()
            idle.close()
        finally:
            self.assertEqual(server.stop(), 0)

    def test_each_dialect_gives_a_client_something_to_detect_a_silent_server_by(self):
        """A stopped server (SIGSTOP) is a black hole the client's socket cannot see: it stays open, and nothing
        arrives. By the protocol's rules a client notices — unanswered heartbeats (ZEGO, LiveKit), missing keep-alives
        (Agora) — while a quiet, healthy connection always has something arriving. Counts, not timings, are asserted."""
        pb = self.pb
        for dialect, wire in (("zego", pb.DIALECT_ZEGO), ("livekit", pb.DIALECT_LIVEKIT), ("agora", pb.DIALECT_AGORA)):
            with self.subTest(dialect=dialect):
                server = Server("--dialect", dialect, scale="1")
                try:
                    client = self.WireClient(pb, "127.0.0.1", server.port)
                    ack = client.hello(wire, "python-" + dialect).hello_ack
                    heartbeats = ack.heartbeat_interval_ms > 0
                    # Each dialect has exactly one way to hear the server in the steady state.
                    self.assertNotEqual(heartbeats, ack.media_interval_ms > 0)
                    client.login("room-q", "quiet", 0x51)
                    self.assertIsNotNone(client.receive_kind("login_accepted"))

                    def window():
                        """What arrives in about three of the dialect's intervals, the client doing its part."""
                        if heartbeats:
                            client.heartbeat("room-q", "quiet", 0x51)
                            return client.frames_within(1.5)
                        frames = []
                        for _ in range(3):
                            client.media("room-q")
                            frames += client.frames_within(ack.media_interval_ms / 1000)
                        return frames

                    expected = "heartbeat_ack" if heartbeats else "keep_alive"
                    healthy = [frame.WhichOneof("message") for frame in window()]
                    self.assertIn(expected, healthy)
                    server.pause()
                    try:
                        silent = window()
                    finally:
                        server.process.send_signal(signal.SIGCONT)
                    # Nothing at all: by the rule, the client declares the connection lost.
                    self.assertEqual(silent, [])
                    client.close()
                finally:
                    self.assertEqual(server.stop(), 0)

    def test_the_token_is_checked_at_login(self):
        pb = self.pb
        with tempfile.NamedTemporaryFile("w", suffix=".json") as auth:
            json.dump({"alice": "right"}, auth)
            auth.flush()
            server = Server("--dialect", "zego", "--auth", auth.name)
            try:
                client = self.WireClient(pb, "127.0.0.1", server.port)
                client.hello(pb.DIALECT_ZEGO, "python")
                client.login("r", "alice", 7, token="wrong", attempt=3)
                rejected = client.receive_kind("login_rejected")
                self.assertEqual(rejected.login_rejected.reason, pb.LoginRejected.REASON_TOKEN_INVALID)
                self.assertEqual(rejected.login_rejected.attempt, 3)
                client.login("r", "alice", 7, token="right", attempt=4)
                self.assertEqual(client.receive_kind("login_accepted").login_accepted.attempt, 4)
                client.close()
            finally:
                self.assertEqual(server.stop(), 0)

    def renewal_outcomes(self, server, renewals):
        """Logs each (user, login token, renewal token) in on a connection of its own, expires every user's token
        through the admin API, renews as given once warned, and returns the users kicked for the expiry — read after
        the last kick, in the order the kicks came — and the members left. A kick is the server's answer to a refused
        renewal; an accepted one cancels it."""
        pb = self.pb
        clients = {}
        for number, (user, login_token, _) in enumerate(renewals, start=1):
            client = self.WireClient(pb, "127.0.0.1", server.port)
            client.hello(pb.DIALECT_ZEGO, user)
            client.login("r", user, number, token=login_token)
            self.assertIsNotNone(client.receive_kind("login_accepted"), user)
            clients[user] = (client, number)
        for user in clients:
            server.post(f"/users/{user}/expire-token", None)
        for user, _, renewal in renewals:
            client, session = clients[user]
            warning = client.receive_kind("token_will_expire")
            self.assertIsNotNone(warning, user)
            client.renew_token("r", user, session, renewal)
        kicked = []
        expected_kicks = [user for user, _, _ in renewals if user.startswith("refused")]
        for user in expected_kicks:
            client, _ = clients[user]
            kick = client.receive_kind("kicked")
            self.assertIsNotNone(kick, user)
            self.assertEqual(kick.kicked.reason, pb.Kicked.REASON_TOKEN_EXPIRED)
            kicked.append(user)
        members = json.loads(server.get("/rooms/r/members"))["members"]
        for client, _ in clients.values():
            client.close()
        return kicked, sorted(members)

    def test_a_renewal_is_checked_like_a_login(self):
        """With an auth table a renewal must bring one of the user's own tokens that has not expired; without one,
        any new token. Anything else is refused and the expiry kicks the user at the grace's end."""
        with tempfile.NamedTemporaryFile("w", suffix=".json") as auth:
            json.dump(
                {
                    "accepted": ["a1", "a2"],
                    "refused-other": ["o1"],
                    "refused-empty": "e1",
                    "refused-same": "s1",
                    "refused-unknown": "u1",
                },
                auth,
            )
            auth.flush()
            # Time scale 0.2: the 30 s grace is 6 real seconds, room for a renewal on a loaded machine.
            server = Server("--dialect", "zego", "--auth", auth.name, scale="0.2")
            try:
                kicked, members = self.renewal_outcomes(
                    server,
                    [
                        ("accepted", "a1", "a2"),
                        ("refused-other", "o1", "a2"),
                        ("refused-empty", "e1", ""),
                        ("refused-same", "s1", "s1"),
                        ("refused-unknown", "u1", "forged"),
                    ],
                )
                self.assertEqual(sorted(kicked), ["refused-empty", "refused-other", "refused-same", "refused-unknown"])
                self.assertEqual(members, ["accepted"])
            finally:
                self.assertEqual(server.stop(), 0)
        server = Server("--dialect", "zego", scale="0.2")
        try:
            kicked, members = self.renewal_outcomes(
                server,
                [("accepted", "", "new"), ("refused-empty", "", ""), ("refused-same", "t", "t")],
            )
            self.assertEqual(sorted(kicked), ["refused-empty", "refused-same"])
            self.assertEqual(members, ["accepted"])
        finally:
            self.assertEqual(server.stop(), 0)

    def test_a_malformed_frame_closes_only_its_connection(self):
        pb = self.pb
        server = Server("--dialect", "livekit")
        try:
            good = self.WireClient(pb, "127.0.0.1", server.port)
            good.hello(pb.DIALECT_LIVEKIT, "good")
            good.login("r", "good", 1)
            self.assertIsNotNone(good.receive_kind("login_accepted"))

            bad = self.WireClient(pb, "127.0.0.1", server.port)
            bad.hello(pb.DIALECT_LIVEKIT, "bad")
            bad.sock.sendall(b"\x00\x00\x00\x03\xff\xff\xff")
            goodbye = bad.receive_kind("goodbye")
            self.assertEqual(goodbye.goodbye.reason, pb.Goodbye.REASON_PROTOCOL_ERROR)
            self.assertIsNone(bad.receive())

            good.heartbeat("r", "good", 1)
            self.assertIsNotNone(good.receive_kind("heartbeat_ack"))
            good.close()
            bad.close()
        finally:
            self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    ROOMLINK = os.path.abspath(sys.argv.pop(1))
    sys.path.insert(0, HERE)
    unittest.main(verbosity=2)
