#!/usr/bin/env python3
"""LiveKit's own client SDK (`livekit` on PyPI: the Rust SDK through its FFI) against `roomlink serve --protocol
livekit` with the peer helper (scripts/livekit-peer): it reaches Connected, sees its peers — SDK clients and
signalling-only ones alike — and, faced with the same faults as RoomLink's own LiveKit-dialect client speaking
LiveKit's protocol to the same server (a socket reset, dials refused, a silent path past the ping timeout, a
reconnect request, a removal), does what the table in docs/livekit.md shows, side by side with RoomLink's client.

Usage: .venv/bin/python Tests/python/test_livekit_sdk.py PATH/TO/roomlink [--table]
       (--table prints the comparison as the docs show it; scripts/setup makes .venv)
"""

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request
import warnings

try:
    import aiohttp
    from livekit import api, rtc
except ImportError:
    sys.exit("test_livekit_sdk: livekit is missing: run scripts/setup, then use .venv/bin/python")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import test_wire_client as base  # noqa: E402
from fault_proxy import FaultProxy  # noqa: E402
from test_livekit import KEY, SECRET, Participant, token  # noqa: E402

WAIT = 30
TABLE = []
CLIENT_TIMINGS = {"pingInterval": "2s", "pingTimeout": "6s"}


class Process:
    """A child process whose first line matching `ready` says where it listens."""

    def __init__(self, command, ready):
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        deadline = time.monotonic() + 60
        self.lines = []
        while True:
            line = self.process.stdout.readline()
            if not line or time.monotonic() > deadline:
                raise RuntimeError(f"{command[0]} did not start")
            self.lines.append(line)
            if ready(self.lines):
                break

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait(timeout=30)
        self.process.stdout.close()


def address(lines, marker):
    for line in lines:
        if marker in line:
            return line.split(marker)[1].split()[0]
    return None


def serve(*flags):
    """`roomlink serve` on ephemeral ports with an admin API; returns (process, port, admin address)."""
    process = Process(
        [base.ROOMLINK, "serve", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--log-level", "error", *flags],
        lambda lines: address(lines, "http://") and address(lines, " on 127.0.0.1:"),
    )
    port = int(address(process.lines, " on 127.0.0.1:"))
    return process, port, address(process.lines, "http://")


def admin(where, path, users):
    request = urllib.request.Request(
        f"http://{where}{path}", data=json.dumps({"users": users}).encode(), method="POST"
    )
    with urllib.request.urlopen(request, timeout=20) as response:
        return json.loads(response.read())


class SDKClient:
    """One LiveKit SDK room, its events timed from `origin`."""

    def __init__(self):
        self.room = rtc.Room()
        self.events = []
        self.origin = time.monotonic()
        for name in ("reconnecting", "reconnected", "disconnected", "participant_connected",
                     "participant_disconnected"):
            self.room.on(name, lambda *args, name=name: self.events.append((time.monotonic(), name, args)))

    async def connect(self, port, identity, room="r1"):
        await asyncio.wait_for(self.room.connect(f"ws://127.0.0.1:{port}", token(identity, room=room)), WAIT)

    def since(self, origin):
        """(seconds after `origin`, event, detail) for the events after it."""
        timed = []
        for at, name, args in self.events:
            if at < origin:
                continue
            detail = ""
            if name == "disconnected" and args:
                detail = rtc.DisconnectReason.Name(args[0]) if isinstance(args[0], int) else str(args[0])
            timed.append((round(at - origin, 2), name, detail))
        return timed


class RoomLinkClient:
    """RoomLink's own LiveKit-dialect client speaking LiveKit's protocol (`roomlink run --server ws://… --protocol
    livekit`), through its own proxy to the same server as the SDK, on the real clock; its event log read as it is
    written."""

    def __init__(self, proxy, duration="3m", timings=None, room="r2"):
        self.proxy = proxy
        self.directory = tempfile.mkdtemp()
        # A seed of its own: sessions are the seed's, and the server remembers the sessions it removed.
        scenario = {
            "dialect": "livekit", "seed": int.from_bytes(os.urandom(4), "big"), "users": [{"id": "alice"}],
            "timeline": [{"at": "0s", "user": "alice", "action": "login", "room": room}], "end": duration,
            "timings": timings or {},
            # The Rust SDK's reconnect policy (the dialect's default is the JS SDK's, which the seeds describe).
            "retry": {"preset": "liveKitRust"},
        }
        self.scenario = os.path.join(self.directory, "scenario.json")
        self.log = os.path.join(self.directory, "events.jsonl")
        with open(self.scenario, "w") as file:
            json.dump(scenario, file)
        self.process = subprocess.Popen(
            [base.ROOMLINK, "run", self.scenario, "--server", f"ws://127.0.0.1:{proxy.port}", "--protocol", "livekit",
             "--keys", f"{KEY}:{SECRET}", "--clock", "real", "--events", self.log, "--report", os.devnull],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        self.seen = []
        self.offset = None  # monotonic time of the run's t = 0

    def poll(self):
        if not os.path.exists(self.log):
            return
        with open(self.log) as file:
            lines = file.read().splitlines()
        for line in lines[len(self.seen):]:
            event = json.loads(line)
            # The run's clock against this one: its first dial is the proxy's first connection (the log is written
            # in blocks, so when a line is read says little).
            if self.offset is None and event.get("state") == "connecting" and self.proxy.accepted_at:
                self.offset = self.proxy.accepted_at[0] - event["t_ms"] / 1000
            self.seen.append(event)

    async def until(self, predicate):
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            self.poll()
            if any(predicate(event) for event in self.seen):
                return
            await asyncio.sleep(0.01)
        raise AssertionError("RoomLink's client did not get there")

    def since(self, origin):
        self.poll()
        timed = []
        for event in self.seen:
            at = self.offset + event["t_ms"] / 1000
            if at < origin - 0.05:
                continue
            name = {"reconnectStarted": "reconnecting", "reconnectCompleted": "reconnected"}.get(event["type"])
            if event["type"] == "disconnected":
                timed.append((round(at - origin, 2), "disconnected", event.get("reason", "")))
            elif name:
                timed.append((round(at - origin, 2), name, event.get("mode", "")))
        return timed

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait(timeout=30)


def first(events, name):
    return next((at for at, event, _ in events if event == name), None)


class LiveKitSDKTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        warnings.simplefilter("ignore")
        cls.peer = Process(
            [os.path.join(ROOT, ".venv", "bin", "python"), os.path.join(ROOT, "scripts", "livekit-peer"),
             "--listen", "127.0.0.1:0"],
            lambda lines: "listening on" in lines[-1],
        )
        helper = cls.peer.lines[-1].split("listening on ")[1].strip()
        # LiveKit's ping interval and timeout, shortened (2 s and 6 s) so that a silent path times out in seconds: the
        # SDK takes them from the join response, RoomLink's client from its scenario (CLIENT_TIMINGS).
        timings = ["--timing", "pingInterval=2s", "--timing", "pingTimeout=6s"]
        # Refreshed tokens every 2 s (LiveKit's are every 5 min): the SDK keeps the latest and dials its later
        # reconnections with it, so each fault below also checks that serve's refreshed tokens are ones it takes.
        cls.livekit, cls.livekit_port, cls.livekit_admin = serve(
            "--protocol", "livekit", "--keys", f"{KEY}:{SECRET}", "--peer-helper", helper, "--token-refresh", "2s",
            *timings
        )

    @classmethod
    def tearDownClass(cls):
        for process in (cls.livekit, cls.peer):
            process.stop()

    def test_the_sdk_connects_and_sees_its_peers(self):
        async def body():
            alice, bob = SDKClient(), SDKClient()
            await alice.connect(self.livekit_port, "alice", room="peers")
            self.assertEqual(alice.room.connection_state, rtc.ConnectionState.CONN_CONNECTED)
            async with aiohttp.ClientSession() as session:
                server = type("S", (), {"url": f"127.0.0.1:{self.livekit_port}"})
                carol = await Participant.join(session, server, "carol", room="peers")
                carol_join = await carol.expect("join")
                self.assertEqual([p.identity for p in carol_join.other_participants], ["alice"])
                await bob.connect(self.livekit_port, "bob", room="peers")
                self.assertEqual(sorted(p.identity for p in bob.room.remote_participants.values()), ["alice", "carol"])
                await carol.until("bob", 2)
                deadline = time.monotonic() + WAIT
                while sorted(p.identity for p in alice.room.remote_participants.values()) != ["bob", "carol"]:
                    self.assertLess(time.monotonic(), deadline, "alice did not see bob and carol")
                    await asyncio.sleep(0.05)
                await bob.room.disconnect()
                await carol.until("bob", 3)
                while "bob" in [p.identity for p in alice.room.remote_participants.values()]:
                    self.assertLess(time.monotonic(), deadline, "alice did not see bob go")
                    await asyncio.sleep(0.05)
            await alice.room.disconnect()

        asyncio.run(asyncio.wait_for(body(), 120))

    def compare(self, name, fault, expect, settle=6.0):
        """Plays `fault(proxies)` to a connected SDK client and a connected RoomLink client, each through its own
        proxy to the one server (the SDK in room r1, RoomLink's client in r2), and returns both sides' events after
        it; `expect` checks them."""

        async def body():
            sdk_proxy = await FaultProxy(self.livekit_port).start()
            roomlink_proxy = await FaultProxy(self.livekit_port).start()
            sdk = SDKClient()
            roomlink = RoomLinkClient(roomlink_proxy, timings=CLIENT_TIMINGS)
            try:
                await sdk.connect(sdk_proxy.port, "alice")
                await roomlink.until(lambda event: event.get("state") == "connected")
                await asyncio.sleep(1.0)
                origin = time.monotonic()
                await fault([sdk_proxy, roomlink_proxy])
                await asyncio.sleep(settle)
                return sdk.since(origin), roomlink.since(origin)
            finally:
                roomlink.stop()
                await sdk.room.disconnect()
                await sdk_proxy.stop()
                await roomlink_proxy.stop()

        sdk, roomlink = asyncio.run(asyncio.wait_for(body(), 180))
        TABLE.append((name, sdk, roomlink))
        expect(sdk, roomlink)

    def test_a_reset_socket_is_resumed_by_both(self):
        async def fault(proxies):
            for proxy in proxies:
                proxy.abort()

        def expect(sdk, roomlink):
            for side in (sdk, roomlink):
                self.assertLess(first(side, "reconnecting"), 2.0, side)
                self.assertIsNotNone(first(side, "reconnected"), side)
                self.assertNotIn("disconnected", [event for _, event, _ in side])

        self.compare("socket reset", fault, expect)

    def test_dials_refused_for_five_seconds(self):
        async def fault(proxies):
            for proxy in proxies:
                proxy.refusing = True
                proxy.abort()
            await asyncio.sleep(5)
            for proxy in proxies:
                proxy.refusing = False

        def expect(sdk, roomlink):
            for side in (sdk, roomlink):
                self.assertLess(first(side, "reconnecting"), 2.0, side)
                # Back after the dials are taken again, never before, and within the policy's longest wait (7 s) and an
                # attempt's time after that.
                self.assertGreaterEqual(first(side, "reconnected"), 5.0, side)
                self.assertLess(first(side, "reconnected"), 5.0 + 7.0 + 3.0, side)
                self.assertNotIn("disconnected", [event for _, event, _ in side])

        self.compare("dials refused for 5 s", fault, expect, settle=16.0)

    def test_a_silent_path_past_the_ping_timeout(self):
        async def fault(proxies):
            for proxy in proxies:
                proxy.black_hole(True)
            await asyncio.sleep(10)
            for proxy in proxies:
                proxy.abort()
                proxy.black_hole(False)

        def expect(sdk, roomlink):
            for side in (sdk, roomlink):
                # Noticed by the pings going unanswered: not before the ping timeout, within two intervals after it.
                self.assertGreaterEqual(first(side, "reconnecting"), 6.0 - 2.0, side)
                self.assertLess(first(side, "reconnecting"), 6.0 + 2 * 2.0, side)
                self.assertIsNotNone(first(side, "reconnected"), side)
                self.assertGreaterEqual(first(side, "reconnected"), 10.0, side)

        self.compare("silent path for 10 s (ping timeout 6 s)", fault, expect, settle=20.0)

    def test_a_reconnect_request_is_a_full_reconnection(self):
        async def fault(proxies):
            admin(self.livekit_admin, "/rooms/r1/reconnect", ["alice"])
            admin(self.livekit_admin, "/rooms/r2/reconnect", ["alice"])

        def expect(sdk, roomlink):
            for side in (sdk, roomlink):
                self.assertLess(first(side, "reconnecting"), 2.0, side)
                self.assertLess(first(side, "reconnected"), 5.0, side)

        self.compare("leave RECONNECT (reconnect request)", fault, expect)

    def test_the_sdk_connects_over_wss_trusting_the_test_authority_only(self):
        """`serve --protocol livekit --tls-cert --tls-key`: LiveKit's SDK dials wss:// and reaches Connected when it
        trusts the test authority (SSL_CERT_FILE, which its TLS stack reads), and fails when it trusts another."""
        fixtures = os.path.join(ROOT, "Tests", "Fixtures", "tls")
        helper = self.peer.lines[-1].split("listening on ")[1].strip()
        secure = Process(
            [base.ROOMLINK, "serve", "--listen", "127.0.0.1:0", "--log-level", "error", "--protocol", "livekit",
             "--keys", f"{KEY}:{SECRET}", "--peer-helper", helper, "--tls-cert", os.path.join(fixtures, "server.pem"),
             "--tls-key", os.path.join(fixtures, "server-key.pem")],
            lambda lines: address(lines, " on 127.0.0.1:"),
        )
        port = int(address(secure.lines, " on 127.0.0.1:"))
        script = (
            "import asyncio, sys\n"
            "from livekit import rtc\n"
            "async def main():\n"
            "    room = rtc.Room()\n"
            "    try:\n"
            "        await asyncio.wait_for(room.connect(sys.argv[1], sys.argv[2]), 20)\n"
            "    except Exception as error:\n"
            "        print('failed', type(error).__name__)\n"
            "        return\n"
            "    print('state', room.connection_state == rtc.ConnectionState.CONN_CONNECTED)\n"
            "    await room.disconnect()\n"
            "asyncio.run(main())\n"
        )
        try:
            outcomes = {}
            for authority in ("ca.pem", "other-ca.pem"):
                environment = dict(os.environ, SSL_CERT_FILE=os.path.join(fixtures, authority))
                result = subprocess.run(
                    [sys.executable, "-c", script, f"wss://localhost:{port}", token("tls-" + authority, room="tls")],
                    capture_output=True, text=True, timeout=90, env=environment,
                )
                outcomes[authority] = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
            self.assertEqual(outcomes["ca.pem"], "state True", outcomes)
            self.assertTrue(outcomes["other-ca.pem"].startswith("failed"), outcomes)
        finally:
            secure.stop()

    def test_a_removal_ends_the_session_without_a_retry(self):
        async def fault(proxies):
            admin(self.livekit_admin, "/rooms/r1/kick", ["alice"])
            admin(self.livekit_admin, "/rooms/r2/kick", ["alice"])

        def expect(sdk, roomlink):
            self.assertEqual([(event, detail) for _, event, detail in sdk], [("disconnected", "PARTICIPANT_REMOVED")])
            self.assertEqual([(event, detail) for _, event, detail in roomlink], [("disconnected", "participantRemoved")])

        self.compare("leave DISCONNECT (removal)", fault, expect, settle=3.0)


class MixedLoadTests(unittest.TestCase):
    def test_sdk_clients_among_roomlink_clients_see_each_other_and_come_back_from_a_restart(self):
        """scripts/livekit-mixed-load, small: LiveKit SDK clients in the rooms of RoomLink's LiveKit-protocol
        clients; the server restarts under both, and every client of both kinds is back (docs/livekit.md)."""
        result = subprocess.run(
            [os.path.join(ROOT, ".venv", "bin", "python"), os.path.join(ROOT, "scripts", "livekit-mixed-load"),
             base.ROOMLINK, "--sdk", "4", "--clients", "100", "--rooms", "4", "--down", "2", "--restart-at", "20",
             "--after", "25", "--json"],
            capture_output=True, text=True, timeout=300,
        )
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr[-2000:])
        report = json.loads(result.stdout)
        self.assertEqual(report["sdk"]["reconnected"], 4)
        self.assertEqual(report["roomlink"]["reconnected"], 100)
        # Each SDK client saw every RoomLink client of its room before the storm.
        self.assertEqual(report["sdk"]["roomlinkPeersSeen"]["min"], 25)

def print_table():
    print("| fault | LiveKit's SDK (s after the fault) | RoomLink's livekit client |")
    print("| --- | --- | --- |")
    for name, sdk, roomlink in TABLE:
        def cell(events):
            return ", ".join(f"{event}{f' ({detail})' if detail else ''} {at:.2f}" for at, event, detail in events)
        print(f"| {name} | {cell(sdk)} | {cell(roomlink)} |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    base.ROOMLINK = os.path.abspath(sys.argv.pop(1))
    table = "--table" in sys.argv
    if table:
        sys.argv.remove("--table")
    program = unittest.main(verbosity=2, exit=False)
    if table:
        print_table()
    sys.exit(not program.result.wasSuccessful())
