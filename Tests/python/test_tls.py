#!/usr/bin/env python3
"""TLS refereed by code that is not RoomLink's: `roomlink serve --tls-cert --tls-key` answered by Python's `ssl` (the
wire client from the schema over TLS, with hostname checking), LiveKit's server SDK (`livekit-api`'s room service
over https) and aiohttp's WebSocket client (LiveKit's signalling over wss://); and `roomlink run --server tls://`
against that server, with the test authority and with one that does not sign its certificate.

The certificates are Tests/Fixtures/tls (scripts/make-test-certificates).

Usage: .venv/bin/python Tests/python/test_tls.py PATH/TO/roomlink   (scripts/setup makes .venv)
"""

import asyncio
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import unittest
import urllib.request

try:
    import aiohttp
    import aiohttp.web
    from livekit import api
    from livekit.protocol import rtc
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    sys.exit("test_tls: livekit-api or prometheus_client is missing: run scripts/setup, then use .venv/bin/python")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_livekit  # noqa: E402  (its webhook receiver)
import test_wire_client as base  # noqa: E402  (its Server starts and stops `roomlink serve`)

FIXTURES = os.path.join(os.path.dirname(HERE), "Fixtures", "tls")
CERT, KEY_FILE = os.path.join(FIXTURES, "server.pem"), os.path.join(FIXTURES, "server-key.pem")
CA, OTHER_CA = os.path.join(FIXTURES, "ca.pem"), os.path.join(FIXTURES, "other-ca.pem")
TLS_FLAGS = ("--tls-cert", CERT, "--tls-key", KEY_FILE)
KEY, SECRET = test_livekit.KEY, test_livekit.SECRET
WAIT = 20


def trusting(ca=CA):
    context = ssl.create_default_context(cafile=ca)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


class SecureWebhookReceiver(test_livekit.WebhookReceiver):
    """test_livekit's receiver (livekit-api's WebhookReceiver behind aiohttp), on https:// with the test server
    certificate."""

    async def start(self):
        app = aiohttp.web.Application()
        app.router.add_post("/hook", self.take)
        self.runner = aiohttp.web.AppRunner(app)
        await self.runner.setup()
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(CERT, KEY_FILE)
        site = aiohttp.web.TCPSite(self.runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        self.url = f"https://localhost:{self.runner.addresses[0][1]}/hook"
        return self


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 120))


class TLSTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.directory = tempfile.TemporaryDirectory()
        cls.pb = base.generate(cls.directory.name)
        from wire_client import WireClient

        cls.WireClient = WireClient

    def https(self, server, path, context=None):
        with urllib.request.urlopen(f"https://{server.admin}{path}", timeout=WAIT, context=context or trusting()) as r:
            return r.read().decode()

    def test_a_standard_client_logs_in_and_the_admin_api_answers_https(self):
        server = base.Server("--dialect", "zego", *TLS_FLAGS)
        try:
            client = self.WireClient(self.pb, "127.0.0.1", server.port, tls=trusting(), server_hostname="localhost")
            self.assertIn(client.sock.version(), ("TLSv1.2", "TLSv1.3"))
            names = [value for kind, value in client.sock.getpeercert()["subjectAltName"]]
            self.assertIn("localhost", names)
            self.assertIsNotNone(client.hello(self.pb.DIALECT_ZEGO, "py-alice"))
            client.login("room-tls", "alice", 7)
            self.assertIsNotNone(client.receive_kind("login_accepted"))
            client.close()
            # The same certificate serves the admin API: https, verified; plain HTTP gets no answer.
            self.assertEqual(self.https(server, "/healthz").strip(), "ok")
            with self.assertRaises(Exception):
                urllib.request.urlopen(f"http://{server.admin}/healthz", timeout=5).read()
            # Python checks the name too: the certificate is localhost's and 127.0.0.1's, not another host's.
            with self.assertRaises(ssl.SSLCertVerificationError):
                self.WireClient(self.pb, "127.0.0.1", server.port, tls=trusting(), server_hostname="elsewhere.example")
            with self.assertRaises(ssl.SSLCertVerificationError):
                self.WireClient(self.pb, "127.0.0.1", server.port, tls=trusting(OTHER_CA))
        finally:
            self.assertEqual(server.stop(), 0)

    def test_a_plain_client_is_dropped_and_counted_and_the_others_are_served(self):
        server = base.Server("--dialect", "zego", *TLS_FLAGS)
        try:
            plain = self.WireClient(self.pb, "127.0.0.1", server.port, timeout=10)
            try:
                plain.hello(self.pb.DIALECT_ZEGO, "py-plain")
                answer = plain.receive()
            except (ConnectionError, socket.timeout, ValueError):
                answer = None
            self.assertIsNone(answer, "a plain hello gets no RoomLink answer from a TLS listener")
            plain.close()
            client = self.WireClient(self.pb, "127.0.0.1", server.port, tls=trusting(), server_hostname="localhost")
            self.assertIsNotNone(client.hello(self.pb.DIALECT_ZEGO, "py-bob"))
            client.login("room-tls", "bob", 9)
            self.assertIsNotNone(client.receive_kind("login_accepted"))
            client.close()
            metrics = {
                sample.name: sample.value
                for family in text_string_to_metric_families(self.https(server, "/metrics"))
                for sample in family.samples
            }
            self.assertGreaterEqual(metrics["roomlink_tls_handshake_failures_total"], 1)
        finally:
            self.assertEqual(server.stop(), 0)

    def test_roomlink_run_verifies_the_server_and_counts_a_certificate_it_cannot(self):
        server = base.Server("--dialect", "zego", *TLS_FLAGS)
        scenario = {
            "dialect": "zego",
            "users": [{"id": "A"}, {"id": "B"}],
            "timeline": [
                {"at": "0s", "user": "A", "action": "login", "room": "r1"},
                {"at": "0s", "user": "B", "action": "login", "room": "r1"},
            ],
            "end": "20s",
        }
        try:
            with tempfile.TemporaryDirectory() as directory:
                path = os.path.join(directory, "s.json")
                with open(path, "w") as file:
                    json.dump(scenario, file)
                for ca, logged_in in ((CA, 2), (OTHER_CA, 0)):
                    report = os.path.join(directory, "r.json")
                    subprocess.run(
                        [base.ROOMLINK, "run", path, "--server", f"tls://127.0.0.1:{server.port}", "--ca", ca,
                         "--clock", "real", "--time-scale", "0.05", "--report", report],
                        timeout=120, capture_output=True,
                    )
                    with open(report) as file:
                        connections = json.load(file)["connections"]
                    self.assertEqual(connections["loggedIn"], logged_in, connections)
                    if logged_in == 0:
                        self.assertGreaterEqual(connections["failures"].get("certificate", 0), 1, connections)
                        self.assertEqual(connections["opened"], 0)
                # A plain address is refused by the CLI with --ca, and tls:// names the cause when nothing verifies.
                refused = subprocess.run(
                    [base.ROOMLINK, "run", path, "--server", f"127.0.0.1:{server.port}", "--ca", CA, "--clock", "real"],
                    timeout=60, capture_output=True, text=True,
                )
                self.assertNotEqual(refused.returncode, 0)
                self.assertIn("--ca", refused.stderr)
        finally:
            self.assertEqual(server.stop(), 0)

    def test_livekit_over_wss_its_room_service_and_its_webhooks_over_https(self):
        server = None

        async def body():
            nonlocal server
            # The webhooks go to an https:// receiver whose certificate `serve --ca` trusts; livekit-api's
            # WebhookReceiver checks each as a LiveKit user's backend does.
            receiver = await SecureWebhookReceiver().start()
            server = base.Server(
                "--protocol", "livekit", "--keys", f"{KEY}:{SECRET}", *TLS_FLAGS, "--webhook", receiver.url, "--ca", CA
            )
            connector = aiohttp.TCPConnector(ssl=trusting())
            async with aiohttp.ClientSession(connector=connector) as session:
                access = api.AccessToken(KEY, SECRET).with_identity("alice")
                jwt = access.with_grants(api.VideoGrants(room_join=True, room="r1")).to_jwt()
                socket_ = await session.ws_connect(f"wss://localhost:{server.port}/rtc?access_token={jwt}")
                message = await asyncio.wait_for(socket_.receive(), WAIT)
                response = rtc.SignalResponse()
                response.ParseFromString(message.data)
                self.assertEqual(response.WhichOneof("message"), "join")
                self.assertEqual(response.join.participant.identity, "alice")
                lk = api.LiveKitAPI(f"https://localhost:{server.port}", KEY, SECRET, session=session)
                rooms = await lk.room.list_rooms(api.ListRoomsRequest())
                self.assertEqual([(r.name, r.num_participants) for r in rooms.rooms], [("r1", 1)])
                # Both arrive (over several connections, so in either order: ordered delivery is issue 59's).
                events = await receiver.until(2)
                self.assertEqual(sorted(events[:2]), [("participant_joined", "alice"), ("room_started", "")])
                self.assertEqual(receiver.refused, [])
                await socket_.close()
            await receiver.stop()
            # An SDK that does not trust the authority never gets that far.
            async with aiohttp.ClientSession() as session:
                with self.assertRaises(aiohttp.ClientConnectorCertificateError):
                    await session.ws_connect(f"wss://localhost:{server.port}/rtc?access_token=x")

        try:
            run(body())
            self.assertIsNotNone(server)
            # RoomLink's own LiveKit client over wss://, verifying the certificate by its name (localhost).
            scenario = {
                "dialect": "livekit",
                "users": [{"id": "A"}, {"id": "B"}],
                "timeline": [
                    {"at": "0s", "user": "A", "action": "login", "room": "r1"},
                    {"at": "0s", "user": "B", "action": "login", "room": "r1"},
                ],
                "end": "20s",
            }
            with tempfile.TemporaryDirectory() as directory:
                path, report = os.path.join(directory, "s.json"), os.path.join(directory, "r.json")
                with open(path, "w") as file:
                    json.dump(scenario, file)
                subprocess.run(
                    [base.ROOMLINK, "run", path, "--protocol", "livekit", "--keys", f"{KEY}:{SECRET}",
                     "--server", f"wss://localhost:{server.port}", "--ca", CA, "--clock", "real",
                     "--time-scale", "0.05", "--report", report],
                    timeout=120, capture_output=True,
                )
                with open(report) as file:
                    connections = json.load(file)["connections"]
                self.assertEqual(connections["loggedIn"], 2, connections)
        finally:
            if server is not None:
                self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    base.ROOMLINK = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
