#!/usr/bin/env python3
"""`roomlink serve --protocol livekit` refereed by LiveKit's own code: access tokens minted by `livekit-api`'s
AccessToken, and signalling messages of `livekit-protocol` (the schema LiveKit's SDKs speak) over a WebSocket —
join, participant updates, pings, leave, resume, kicks, a duplicate identity, a ping timeout, hostile input and the
server's shutdown (docs/livekit.md).

Usage: .venv/bin/python Tests/python/test_livekit.py PATH/TO/roomlink   (scripts/setup makes .venv)
"""

import asyncio
import contextlib
import datetime
import json
import os
import random
import subprocess
import sys
import tempfile
import unittest
import warnings

try:
    import aiohttp
    import aiohttp.web
    from livekit import api
    from livekit.protocol import rtc
except ImportError:
    sys.exit("test_livekit: livekit-api is missing: run scripts/setup, then use .venv/bin/python")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_wire_client as base  # noqa: E402  (its Server starts and stops `roomlink serve`)

KEY, SECRET = "devkey", "a-secret-of-thirty-two-bytes-or-more!"
# Every wait is bounded: a server that does not answer fails the test, it does not hang it.
WAIT = 20


def token(identity, room="r1", secret=SECRET, ttl=None, **grants):
    access = api.AccessToken(KEY, secret).with_identity(identity)
    if ttl is not None:
        access = access.with_ttl(ttl)
    return access.with_grants(api.VideoGrants(room_join=True, room=room, **grants)).to_jwt()


class LiveKitServer(base.Server):
    def __init__(self, *flags, scale="0.05"):
        super().__init__("--protocol", "livekit", "--keys", f"{KEY}:{SECRET}", *flags, scale=scale)
        self.url = f"127.0.0.1:{self.port}"


class WebhookReceiver:
    """An HTTP server that takes LiveKit's webhooks as a LiveKit user's backend does: through livekit-api's
    WebhookReceiver, which checks the signature and the body's hash. A receiver made `held` answers nothing until
    `release()`."""

    def __init__(self, held=False):
        self.events, self.refused = [], []
        self.gate = asyncio.Event()
        if not held:
            self.gate.set()
        self.receiver = api.WebhookReceiver(api.TokenVerifier(KEY, SECRET))
        self.arrived = asyncio.Event()

    async def start(self):
        app = aiohttp.web.Application()
        app.router.add_post("/hook", self.take)
        self.runner = aiohttp.web.AppRunner(app)
        await self.runner.setup()
        site = aiohttp.web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self.runner.addresses[0][1]}/hook"
        return self

    async def take(self, request):
        body = await request.text()
        try:
            event = self.receiver.receive(body, request.headers.get("Authorization", ""))
        except Exception as error:  # noqa: BLE001 — a refused event is the finding
            self.refused.append(str(error))
            return aiohttp.web.Response(status=401)
        if request.content_type != "application/webhook+json":
            self.refused.append(f"content type {request.content_type}")
        self.events.append(event)
        self.arrived.set()
        await self.gate.wait()
        return aiohttp.web.Response(text="ok")

    async def until(self, count):
        while len(self.events) < count:
            self.arrived.clear()
            await asyncio.wait_for(self.arrived.wait(), WAIT)
        return [(e.event, e.participant.identity) for e in self.events]

    async def stop(self):
        self.gate.set()
        await self.runner.cleanup()


class Participant:
    """One signalling connection, as LiveKit's SDKs open it."""

    def __init__(self, session, socket):
        self.session, self.socket = session, socket

    @classmethod
    async def join(cls, session, server, identity, query="", **grants):
        socket = await session.ws_connect(
            f"ws://{server.url}/rtc?access_token={token(identity, **grants)}{query}", timeout=WAIT
        )
        return cls(session, socket)

    async def next(self):
        """The next SignalResponse; None when the connection closed."""
        message = await asyncio.wait_for(self.socket.receive(), WAIT)
        if message.type != aiohttp.WSMsgType.BINARY:
            return None
        response = rtc.SignalResponse()
        response.ParseFromString(message.data)
        return response

    async def expect(self, kind):
        """Skips to the next response of `kind` (pongs and updates may come between)."""
        while True:
            response = await self.next()
            if response is None:
                raise AssertionError(f"closed while waiting for {kind}")
            if response.WhichOneof("message") == kind:
                return getattr(response, kind)

    async def until(self, identity, state):
        """Skips updates until one says `identity` is in `state` (ACTIVE 2, DISCONNECTED 3); returns that info."""
        while True:
            for info in (await self.expect("update")).participants:
                if info.identity == identity and info.state == state:
                    return info

    async def send(self, **request):
        await self.socket.send_bytes(rtc.SignalRequest(**request).SerializeToString())

    async def closed(self):
        """Reads until the server closes the connection; returns the leave it sent first, if any."""
        leave = None
        while True:
            message = await asyncio.wait_for(self.socket.receive(), WAIT)
            if message.type != aiohttp.WSMsgType.BINARY:
                return leave
            response = rtc.SignalResponse()
            response.ParseFromString(message.data)
            if response.WhichOneof("message") == "leave":
                leave = response.leave


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 120))


class LiveKitTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Secrets this short are LiveKit's examples' (devkey/secret); the tests use a long one anyway.
        warnings.simplefilter("ignore")

    def setUp(self):
        self.server = LiveKitServer()

    def tearDown(self):
        self.assertEqual(self.server.stop(), 0)

    def test_tokens_from_livekit_api_are_checked_as_livekit_checks_them(self):
        async def body():
            async with aiohttp.ClientSession() as session:

                async def validate(text):
                    async with session.get(f"http://{self.server.url}/rtc/validate?access_token={text}") as answer:
                        return answer.status, await answer.text()

                self.assertEqual(await validate(token("alice")), (200, "success"))
                status, text = await validate(token("alice", secret="not-the-secret-of-this-key-at-all!"))
                self.assertEqual((status, text), (401, "invalid token signature"))
                status, text = await validate(token("alice", ttl=datetime.timedelta(minutes=-5)))
                self.assertEqual((status, text), (401, "token is expired"))
                status, _ = await validate(token("alice") + "&room=another")
                self.assertEqual(status, 401)
                # The SDK tries /rtc/v1 first and falls back to /rtc on a 404.
                async with session.get(f"http://{self.server.url}/rtc/v1?access_token={token('a')}") as answer:
                    self.assertEqual(answer.status, 404)
                # A refused token is refused before the upgrade, with LiveKit's status.
                refused_token = token("alice", secret="x" * 40)
                with self.assertRaises(aiohttp.WSServerHandshakeError) as refused:
                    await session.ws_connect(f"ws://{self.server.url}/rtc?access_token={refused_token}")
                self.assertEqual(refused.exception.status, 401)

        run(body())

    def test_join_updates_pings_and_leave(self):
        async def body():
            async with aiohttp.ClientSession() as session:
                alice = await Participant.join(session, self.server, "alice")
                joined = await alice.expect("join")
                self.assertEqual(joined.participant.identity, "alice")
                self.assertEqual(joined.room.name, "r1")
                # LiveKit's 5 s and 20 s as they run at --time-scale 0.05, in whole seconds (the protocol's unit), 1 at
                # least: a client counts in real time.
                self.assertEqual((joined.ping_interval, joined.ping_timeout), (1, 1))
                self.assertEqual(list(joined.other_participants), [])

                bob = await Participant.join(session, self.server, "bob")
                bob_joined = await bob.expect("join")
                # Bob is told of Alice by the sid she was given.
                self.assertEqual(
                    [(p.identity, p.sid) for p in bob_joined.other_participants], [("alice", joined.participant.sid)]
                )
                update = await alice.expect("update")
                self.assertEqual([(p.identity, p.sid) for p in update.participants],
                                 [("bob", bob_joined.participant.sid)])
                self.assertEqual(update.participants[0].state, 2)  # ACTIVE

                await alice.send(ping_req=rtc.Ping(timestamp=1234, rtt=5))
                pong = await alice.expect("pong_resp")
                self.assertEqual(pong.last_ping_timestamp, 1234)
                await alice.send(ping=99)  # the legacy ping
                self.assertEqual(await alice.expect("pong"), 99)

                await bob.send(leave=rtc.LeaveRequest(reason=1))
                self.assertIsNone(await bob.closed())
                update = await alice.expect("update")
                left = update.participants[0]
                self.assertEqual((left.identity, left.sid, left.state), ("bob", bob_joined.participant.sid, 3))
                self.assertEqual(left.disconnect_reason, 1)  # CLIENT_INITIATED

        run(body())

    def test_resume_after_a_lost_connection_and_a_resume_the_server_cannot_take(self):
        async def body():
            async with aiohttp.ClientSession() as session:
                alice = await Participant.join(session, self.server, "alice")
                sid = (await alice.expect("join")).participant.sid
                # The socket drops without a goodbye (the SDK then resumes with reconnect=1&sid=…).
                alice.socket._response.connection.transport.abort()
                resumed = await Participant.join(session, self.server, "alice", query=f"&reconnect=1&sid={sid}")
                await resumed.expect("reconnect")
                await resumed.send(ping_req=rtc.Ping(timestamp=7))
                self.assertEqual((await resumed.expect("pong_resp")).last_ping_timestamp, 7)
                # A session the server never had: leave{STATE_MISMATCH, RECONNECT}, and the SDK joins anew.
                stranger = await Participant.join(session, self.server, "carol", query="&reconnect=1&sid=PA_ffff")
                leave = await stranger.closed()
                self.assertIsNotNone(leave)
                self.assertEqual((leave.reason, leave.action), (6, 2))  # STATE_MISMATCH, RECONNECT

        run(body())

    def test_kicks_a_duplicate_identity_and_the_ping_timeout(self):
        async def body():
            async with aiohttp.ClientSession() as session:
                alice = await Participant.join(session, self.server, "alice")
                await alice.expect("join")
                watcher = await Participant.join(session, self.server, "watcher")
                await watcher.expect("join")
                # The same identity joins again: the first connection is told why it goes.
                second = await Participant.join(session, self.server, "alice")
                await second.expect("join")
                leave = await alice.closed()
                self.assertEqual((leave.reason, leave.action), (2, 0))  # DUPLICATE_IDENTITY, DISCONNECT
                # Removed by the server's admin API.
                self.server.post("/rooms/r1/kick", {"users": ["alice"]})
                leave = await second.closed()
                self.assertEqual((leave.reason, leave.action), (4, 0))  # PARTICIPANT_REMOVED, DISCONNECT
                # A participant that stops pinging is dropped after its ping timeout: the others — the watcher, which
                # pings at its interval as an SDK does — see it go.
                quiet = await Participant.join(session, self.server, "quiet")
                await quiet.expect("join")
                interval = 5 * 0.05  # LiveKit's ping interval at the server's --time-scale (advertised: 1 s at least)

                async def keep_pinging():
                    while True:
                        await watcher.send(ping_req=rtc.Ping(timestamp=1))
                        await asyncio.sleep(interval)

                pinging = asyncio.ensure_future(keep_pinging())
                try:
                    await watcher.until("quiet", 3)  # DISCONNECTED
                finally:
                    pinging.cancel()

        run(body())

    def test_the_room_service_answers_livekit_apis_client(self):
        async def body():
            async with aiohttp.ClientSession() as session:
                alice = await Participant.join(session, self.server, "alice")
                alice_joined = await alice.expect("join")
                alice_sid = alice_joined.participant.sid
                bob = await Participant.join(session, self.server, "bob")
                await bob.expect("join")
                carol = await Participant.join(session, self.server, "carol", room="r2")
                await carol.expect("join")
                lk = api.LiveKitAPI(f"http://{self.server.url}", KEY, SECRET, session=session)
                rooms = await lk.room.list_rooms(api.ListRoomsRequest())
                self.assertEqual(sorted((r.name, r.num_participants) for r in rooms.rooms), [("r1", 2), ("r2", 1)])
                # One room, one sid: the room service's is the one the join response gave.
                self.assertIn(alice_joined.room.sid, [r.sid for r in rooms.rooms])
                named = await lk.room.list_rooms(api.ListRoomsRequest(names=["r2"]))
                self.assertEqual([r.name for r in named.rooms], ["r2"])
                listed = await lk.room.list_participants(api.ListParticipantsRequest(room="r1"))
                self.assertEqual([(p.identity, p.state) for p in listed.participants], [("alice", 2), ("bob", 2)])
                one = await lk.room.get_participant(api.RoomParticipantIdentity(room="r1", identity="alice"))
                self.assertEqual(one.sid, alice_sid)
                with self.assertRaises(api.TwirpError) as missing:
                    await lk.room.get_participant(api.RoomParticipantIdentity(room="r1", identity="nobody"))
                self.assertEqual((missing.exception.code, missing.exception.status), ("not_found", 404))

                await lk.room.remove_participant(api.RoomParticipantIdentity(room="r1", identity="bob"))
                leave = await bob.closed()
                self.assertEqual((leave.reason, leave.action), (4, 0))  # PARTICIPANT_REMOVED, DISCONNECT
                await alice.until("bob", 3)

                await lk.room.delete_room(api.DeleteRoomRequest(room="r1"))
                leave = await alice.closed()
                self.assertEqual((leave.reason, leave.action), (5, 0))  # ROOM_DELETED, DISCONNECT
                listed = await lk.room.list_participants(api.ListParticipantsRequest(room="r1"))
                self.assertEqual(list(listed.participants), [])

                # A client signing with another secret is refused as Twirp refuses: unauthenticated, 401.
                stranger = api.LiveKitAPI(f"http://{self.server.url}", KEY, "x" * 40, session=session)
                with self.assertRaises(api.TwirpError) as refused:
                    await stranger.room.list_rooms(api.ListRoomsRequest())
                self.assertEqual((refused.exception.code, refused.exception.status), ("unauthenticated", 401))
                # A participant's token administers nothing.
                async with session.post(
                    f"http://{self.server.url}/twirp/livekit.RoomService/ListParticipants",
                    data=api.ListParticipantsRequest(room="r2").SerializeToString(),
                    headers={"Authorization": f"Bearer {token('carol', room='r2')}",
                             "Content-Type": "application/protobuf"},
                ) as answer:
                    self.assertEqual(answer.status, 403)
                    self.assertEqual((await answer.json())["code"], "permission_denied")

        run(body())

    def test_webhooks_reach_a_backend_that_checks_them_with_livekit_api(self):
        self.server.stop()

        async def body():
            receiver = await WebhookReceiver().start()
            self.server = LiveKitServer("--webhook", receiver.url)
            try:
                async with aiohttp.ClientSession() as session:
                    alice = await Participant.join(session, self.server, "alice", room="hooks")
                    alice_sid = (await alice.expect("join")).participant.sid
                    self.assertEqual(await receiver.until(2), [("room_started", ""), ("participant_joined", "alice")])
                    bob = await Participant.join(session, self.server, "bob", room="hooks")
                    await bob.expect("join")
                    await receiver.until(3)
                    await bob.send(leave=rtc.LeaveRequest())
                    await bob.closed()
                    await receiver.until(4)
                    lk = api.LiveKitAPI(f"http://{self.server.url}", KEY, SECRET, session=session)
                    await lk.room.remove_participant(api.RoomParticipantIdentity(room="hooks", identity="alice"))
                    events = await receiver.until(6)
                    self.assertEqual(events, [
                        ("room_started", ""), ("participant_joined", "alice"), ("participant_joined", "bob"),
                        ("participant_left", "bob"), ("participant_left", "alice"), ("room_finished", ""),
                    ])
                    self.assertEqual(receiver.refused, [])
                    self.assertEqual(receiver.events[1].participant.sid, alice_sid)
                    self.assertEqual({e.room.name for e in receiver.events}, {"hooks"})
                    self.assertEqual(len({e.room.sid for e in receiver.events}), 1)
                    self.assertEqual(len({e.id for e in receiver.events}), 6)
                    left = {e.participant.identity: e.participant.disconnect_reason for e in receiver.events[3:5]}
                    self.assertEqual(left, {"bob": 1, "alice": 4})  # CLIENT_INITIATED, PARTICIPANT_REMOVED
            finally:
                await receiver.stop()

        run(body())

    def test_a_webhook_storm_is_bounded_and_what_it_drops_is_counted(self):
        self.server.stop()

        async def body():
            # A backend that answers nothing yet, and room for one event in flight: the rest of a burst is dropped.
            receiver = await WebhookReceiver(held=True).start()
            self.server = LiveKitServer("--webhook", receiver.url, "--webhook-queue", "1")
            try:
                async with aiohttp.ClientSession() as session:
                    for index in range(5):
                        participant = await Participant.join(session, self.server, f"p{index}", room="storm")
                        await participant.expect("join")
                    await receiver.until(1)

                    def webhooks():
                        families = base.text_string_to_metric_families(self.server.get("/metrics"))
                        return {
                            sample.labels["outcome"]: sample.value
                            for family in families if family.name == "roomlink_webhooks"
                            for sample in family.samples if sample.name == "roomlink_webhooks_total"
                        }

                    # Six events (the room's start, five joins), the first one in flight: five dropped, counted as
                    # each is (the count is read until it is whole, however loaded the machine).
                    for _ in range(200):
                        if webhooks()["dropped"] >= 5:
                            break
                        await asyncio.sleep(0.05)
                    self.assertEqual(webhooks(), {"delivered": 0, "failed": 0, "dropped": 5})
                    receiver.gate.set()
                    for _ in range(200):
                        if webhooks()["delivered"] == 1:
                            break
                        await asyncio.sleep(0.05)
                    self.assertEqual(webhooks(), {"delivered": 1, "failed": 0, "dropped": 5})
                    self.assertEqual(len(receiver.events), 1)
            finally:
                await receiver.stop()

        run(body())

    def test_hostile_input_closes_only_the_offending_connection(self):
        async def body():
            async with aiohttp.ClientSession() as session:
                alice = await Participant.join(session, self.server, "alice")
                await alice.expect("join")
                rogue = await Participant.join(session, self.server, "rogue")
                await rogue.expect("join")
                await rogue.socket.send_bytes(b"\xff\xfe not a protobuf \x00")
                self.assertIsNone(await rogue.closed())
                # Not HTTP at all.
                reader, writer = await asyncio.open_connection("127.0.0.1", self.server.port)
                writer.write(b"\x16\x03\x01 hello?\r\n\r\n")
                self.assertIn(b"400", await asyncio.wait_for(reader.read(), WAIT))
                writer.close()
                await alice.send(ping_req=rtc.Ping(timestamp=5))
                self.assertEqual((await alice.expect("pong_resp")).last_ping_timestamp, 5)

        run(body())

    def test_random_requests_and_frames_are_refused_and_the_server_serves_on(self):
        """Seeded random bytes as HTTP, and random WebSocket frames (masked as a client must, or not) after a real
        upgrade: each connection is answered or closed, none crashes or hangs the server."""

        async def body():
            generator = random.Random(28)
            prefixes = [b"", b"GET /rtc HTTP/1.1\r\n", b"POST /twirp/livekit.RoomService/ListRooms HTTP/1.1\r\n",
                        b"GET /rtc/validate?access_token=", b"GET / HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n"]
            for _ in range(60):
                reader, writer = await asyncio.open_connection("127.0.0.1", self.server.port)
                junk = bytes(generator.randrange(256) for _ in range(generator.randrange(400)))
                writer.write(generator.choice(prefixes) + junk + b"\r\n\r\n")
                with contextlib.suppress(ConnectionError):
                    await writer.drain()
                    # Answered (and closed), or closed when the server has seen enough: never left hanging.
                    await asyncio.wait_for(reader.read(), WAIT)
                writer.close()
            async with aiohttp.ClientSession() as session:
                for index in range(30):
                    participant = await Participant.join(session, self.server, f"fuzz{index}")
                    await participant.expect("join")
                    transport = participant.socket._response.connection.transport
                    # A frame header with random opcode, flags and length, then random bytes.
                    frame = bytes([generator.randrange(256), generator.randrange(256)])
                    frame += bytes(generator.randrange(256) for _ in range(generator.randrange(200)))
                    transport.write(frame)
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(participant.socket.receive(), 2)
                    await participant.socket.close()
                alice = await Participant.join(session, self.server, "alice")
                await alice.expect("join")
                await alice.send(ping_req=rtc.Ping(timestamp=3))
                self.assertEqual((await alice.expect("pong_resp")).last_ping_timestamp, 3)

        run(body())

    def test_participants_are_sent_refreshed_tokens_that_livekit_api_verifies(self):
        # Every 20 s of scenario time (1 s at --time-scale 0.05), as livekit-server sends one every five minutes.
        server = LiveKitServer("--token-refresh", "20s")
        try:
            async def body():
                async with aiohttp.ClientSession() as session:
                    alice = await Participant.join(session, server, "alice", room="r1")
                    await alice.expect("join")
                    refreshed = await alice.expect("refresh_token")
                    claims = api.TokenVerifier(KEY, SECRET).verify(refreshed)
                    self.assertEqual((claims.identity, claims.video.room, claims.video.room_join), ("alice", "r1", True))
                    # The server takes it as it took the original (the SDKs reconnect with the latest one).
                    async with session.get(f"http://{server.url}/rtc/validate?access_token={refreshed}") as answer:
                        self.assertEqual(answer.status, 200)

            run(body())
        finally:
            self.assertEqual(server.stop(), 0)

    def test_shutdown_tells_participants_to_reconnect(self):
        async def body():
            async with aiohttp.ClientSession() as session:
                alice = await Participant.join(session, self.server, "alice")
                await alice.expect("join")
                self.server.terminate()
                leave = await alice.closed()
                self.assertEqual((leave.reason, leave.action), (3, 2))  # SERVER_SHUTDOWN, RECONNECT

        run(body())


class RoomLinkClientsSpeakLiveKitTests(unittest.TestCase):
    """RoomLink's own clients speaking LiveKit's protocol (`roomlink run --server ws://… --protocol livekit`): the
    same scenario over LiveKit's signalling tells every user the same things, in the same order, as in virtual time."""

    SCENARIO = {
        "dialect": "livekit", "seed": 11, "network": {"latency": "50ms"},
        "users": [{"id": "A"}, {"id": "B"}, {"id": "C"}],
        "timeline": [
            {"at": "0s", "user": "B", "action": "login", "room": "r1"},
            {"at": "1s", "user": "A", "action": "login", "room": "r1"},
            {"at": "2s", "user": "C", "action": "login", "room": "r1"},
            # A short outage: a resume (reconnect=1&sid=…) the others never see.
            {"at": "5s", "user": "A", "action": "networkDown"},
            {"at": "8s", "user": "A", "action": "networkUp"},
            # Removed by the server (the admin API): leave{DISCONNECT, PARTICIPANT_REMOVED}.
            {"at": "15s", "user": "C", "action": "kick", "room": "r1"},
            # A reconnect request: leave{RECONNECT}, a full reconnection.
            {"at": "20s", "user": "B", "action": "requestReconnect", "room": "r1"},
            {"at": "30s", "user": "A", "action": "logout", "room": "r1"},
        ],
        "end": "35s",
    }

    def setUp(self):
        warnings.simplefilter("ignore")
        self.server = LiveKitServer(scale="0.2")
        self.directory = tempfile.mkdtemp()
        self.scenario = os.path.join(self.directory, "scenario.json")
        with open(self.scenario, "w") as file:
            json.dump(self.SCENARIO, file)

    def tearDown(self):
        self.assertEqual(self.server.stop(), 0)

    def run_roomlink(self, *flags, events=None):
        command = [base.ROOMLINK, "run", self.scenario, "--report", os.devnull, *flags]
        if events:
            command += ["--events", events]
        return subprocess.run(command, capture_output=True, text=True, timeout=300)

    @staticmethod
    def sequences(path):
        """Each user's events, in order, without their times (what a loaded machine cannot shift): (time, event)."""
        users = {}
        with open(path) as file:
            for line in file:
                event = json.loads(line)
                detail = tuple(event.get(key) for key in ("state", "reason", "peer", "mode"))
                users.setdefault(event["user"], []).append((event["t_ms"], (event["type"], *detail)))
        return users

    def assertSameStory(self, real, virtual):
        """Each user told the same things in the same order, except that what virtual time tells a user at one
        instant may come in any order (a join's list of peers, for one)."""
        self.assertEqual(sorted(real), sorted(virtual))
        for user, expected in virtual.items():
            told = [event for _, event in real[user]]
            self.assertEqual(len(told), len(expected), user)
            start = 0
            while start < len(expected):
                end = start
                while end < len(expected) and expected[end][0] == expected[start][0]:
                    end += 1
                self.assertEqual(sorted(told[start:end]), sorted(event for _, event in expected[start:end]), user)
                start = end

    def test_the_scenario_over_livekits_protocol_tells_every_user_what_virtual_time_does(self):
        real, virtual = os.path.join(self.directory, "real.jsonl"), os.path.join(self.directory, "virtual.jsonl")
        played = self.run_roomlink(
            "--server", f"ws://{self.server.url}", "--protocol", "livekit", "--keys", f"{KEY}:{SECRET}",
            "--server-admin", self.server.admin, "--clock", "real", "--time-scale", "0.2", events=real,
        )
        self.assertEqual(played.returncode, 0, played.stderr)
        self.assertEqual(self.run_roomlink(events=virtual).returncode, 0)
        self.assertSameStory(self.sequences(real), self.sequences(virtual))
        got = {user: [event for _, event in events] for user, events in self.sequences(real).items()}
        # What the scenario is about happened at all: C removed, A's outage resumed, B reconnected in full.
        self.assertIn(("disconnected", None, "participantRemoved", None, None), got["C"])
        self.assertIn(("reconnectCompleted", None, None, None, "quick"), got["A"])
        self.assertIn(("reconnectCompleted", None, None, None, "full"), got["B"])
        # The server saw them as LiveKit participants: the room service lists who is left.
        self.assertIn("r1", self.server.get("/rooms"))

    def test_a_wrong_secret_is_a_refused_login_and_bad_flags_are_named(self):
        played = self.run_roomlink(
            "--server", f"ws://{self.server.url}", "--protocol", "livekit", "--keys", f"{KEY}:not-the-secret",
            "--server-admin", self.server.admin, "--clock", "real", "--time-scale", "0.2",
            events=os.path.join(self.directory, "refused.jsonl"),
        )
        refused = self.sequences(os.path.join(self.directory, "refused.jsonl"))
        # Every login is refused by the server (HTTP 401): no one ever connects.
        for user in ("A", "B", "C"):
            told = [event for _, event in refused[user]]
            self.assertNotIn(("connectionState", "connected", None, None, None), told, played.stderr)
            self.assertIn("disconnected", [event[0] for event in told], played.stderr)
        for flags, named in [
            (["--server", f"ws://{self.server.url}"], "--protocol livekit"),
            (["--server", self.server.url, "--protocol", "livekit"], "--keys"),
            (["--server", self.server.url, "--keys", f"{KEY}:{SECRET}"], "--keys needs --protocol livekit"),
            (["--server", f"tls://{self.server.url}", "--protocol", "livekit", "--keys", "k:s"], "ws://"),
            (["--protocol", "livekit"], "--protocol needs --server"),
            (["--route", "room"], "--route needs --server"),
            (["--server", self.server.url, "--protocol", "livekit", "--keys", "no-colon"], "--keys"),
        ]:
            bad = self.run_roomlink(*flags, "--clock", "real")
            self.assertEqual(bad.returncode, 2, (flags, bad.stderr))
            self.assertIn(named, bad.stderr, flags)
        # A scenario of another dialect: LiveKit's protocol carries LiveKit's.
        other = dict(self.SCENARIO, dialect="zego", timeline=self.SCENARIO["timeline"][:3])
        with open(self.scenario, "w") as file:
            json.dump(other, file)
        bad = self.run_roomlink("--server", self.server.url, "--protocol", "livekit", "--keys", f"{KEY}:{SECRET}",
                                "--clock", "real")
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn("dialect", bad.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    base.ROOMLINK = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
