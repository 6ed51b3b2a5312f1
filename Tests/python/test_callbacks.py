#!/usr/bin/env python3
"""The app's backend hears the storm: `roomlink serve --callback URL` sends each vendor's room callbacks to receivers
written here and in examples/callback-receiver.py, refereed by the vendors' own rules and code.

- A reconnection storm with churn against `serve` (Agora and ZEGO), callbacks played out of order and twice on
  purpose: the receiver that follows the vendor's ordering advice (Agora's clientSeq, ZEGO's login_time) ends with
  room lists `roomlink report callbacks` finds right, and the naive one (arrival order) with lists it finds wrong,
  blamed on the disorder. Every callback's signature is checked as the vendor's sample receivers check it.
- LiveKit: livekit-api's WebhookReceiver takes the webhooks through a receiver that refuses each event's first
  attempt with 503: every event arrives, each room's in order.
- Receivers that answer 500, garbage, reset the connection, never answer, are not there, or present a certificate
  that does not verify: each delivery is lost by its cause, counted on /metrics, memory bounded by --callback-queue,
  and `serve` keeps serving its rooms.
- Bad flags are named.

Usage: .venv/bin/python Tests/python/test_callbacks.py PATH/TO/roomlink   (scripts/setup makes .venv)
"""

import asyncio
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RECEIVER = os.path.join(ROOT, "examples", "callback-receiver.py")
FIXTURES = os.path.join(os.path.dirname(HERE), "Fixtures", "tls")
sys.path.insert(0, HERE)
import test_livekit  # noqa: E402  (its API key and secret)

ROOMLINK = None
SECRET = "ncs-secret-for-tests"
# Every timing 20 times faster: a vendor's 10 s timeout is half a real second, ZEGO's 62 s of retries three.
SCALE = "0.05"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def metrics(admin):
    """roomlink_callback… samples of serve's /metrics: {(name, label): value}."""
    text = urllib.request.urlopen(f"http://{admin}/metrics", timeout=5).read().decode()
    found = {}
    for line in text.splitlines():
        match = re.match(r'(roomlink_callback\w*)\{([^}]*)\} (\S+)', line)
        if match:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2)))
            key = labels.get("outcome") or labels.get("cause") or labels.get("reason") or ""
            found[(match.group(1), key)] = float(match.group(3))
        if line.startswith("roomlink_callbacks_pending"):
            found[(line.split("{")[0].split(" ")[0], "")] = float(line.split(" ")[-1])
    return found


async def receiving(handle):
    """An aiohttp receiver posting to `handle` on a loopback port it picks: its runner (to clean up) and port."""
    from aiohttp import web

    app = web.Application()
    app.router.add_post("/", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, site._server.sockets[0].getsockname()[1]


class Serve:
    """`roomlink serve` with callbacks and the admin API, on loopback ports it picks."""

    def __init__(self, *flags, dialect="agora"):
        self.admin = f"127.0.0.1:{free_port()}"
        self.process = subprocess.Popen(
            [ROOMLINK, "serve", "--listen", "127.0.0.1:0", "--admin", self.admin, "--time-scale", SCALE,
             *(["--dialect", dialect] if dialect != "livekit" else []), *flags],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = []
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise AssertionError("serve ended: " + self.process.stderr.read())
            self.lines.append(line)
            match = re.search(r" on (127\.0\.0\.1:\d+)", line)
            if match and "admin" not in line:
                self.address = match.group(1)
                break
        threading.Thread(target=self.process.stderr.read, daemon=True).start()

    def metric(self, name, key=""):
        return metrics(self.admin).get((name, key), 0)

    def settle(self, limit=60, emitted=1):
        """Waits until at least `emitted` callbacks were emitted (a client that ends its run may leave only when the
        server notices) and none is pending (every delivery done, lost or dropped)."""
        deadline = time.monotonic() + limit
        settled_at = None
        while time.monotonic() < deadline:
            count = self.metric("roomlink_callbacks_total", "emitted")
            if count >= emitted and self.metric("roomlink_callbacks_pending") == 0:
                # Settled, and nothing new emitted for a second (the last leaves may come as the server notices).
                if settled_at == count:
                    return
                settled_at = count
                time.sleep(1)
                continue
            settled_at = None
            time.sleep(0.2)
        raise AssertionError(f"callbacks still pending: {metrics(self.admin)}")

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        rest = self.process.communicate(timeout=30)[0]
        self.lines.append(rest)
        return "".join(self.lines)


class Receiver:
    """examples/callback-receiver.py, as the docs run it."""

    def __init__(self, vendor, order, directory, *flags):
        self.view = os.path.join(directory, f"view-{vendor}-{order}.json")
        self.process = subprocess.Popen(  # noqa: SIM115 (stopped by stop())
            [sys.executable, RECEIVER, "--vendor", vendor, "--order", order, "--listen", "127.0.0.1:0",
             "--view", self.view, *flags], stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        self.url = re.search(r"(http://\S+)", line).group(1)

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=20)
        self.process.stdout.close()
        with open(self.view) as file:
            return json.load(file)


def load(server, dialect, *flags):
    """A storm with churn to the very end: many users' last join arrives shortly before their last leave."""
    return subprocess.run(
        [ROOMLINK, "load", "--server", server, "--dialect", dialect, "--clock", "real", "--time-scale", SCALE,
         "--clients", "40", "--rooms", "4", "--login-over", "2s", "--duration", "120s",
         "--storm", "0.5@10s:40s", "--churn", "6:2s@5s..120s", "--seed", "11", *flags],
        capture_output=True, text=True, timeout=120)


def audit(truth, view, receiver):
    done = subprocess.run([ROOMLINK, "report", "callbacks", truth, view, "--receiver", receiver, "--json"],
                          capture_output=True, text=True, timeout=60)
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else done.stderr


class StormTests(unittest.TestCase):
    def storm(self, dialect, flags):
        with tempfile.TemporaryDirectory() as directory:
            secret = ("--secret", SECRET)
            ordered = Receiver(dialect, "vendor", directory, *secret)
            naive = Receiver(dialect, "arrival", directory, *secret)
            truth = os.path.join(directory, "truth.jsonl")
            server = Serve("--callback", ordered.url + "hooks", "--callback", naive.url, "--callback-secret", SECRET,
                           "--callback-disorder", "1", "--callback-seed", "5", "--callback-truth", truth, *flags,
                           dialect=dialect)
            try:
                done = load(server.address, dialect)
                self.assertEqual(done.returncode, 0, done.stderr[-2000:])
                server.settle()
                emitted = server.metric("roomlink_callbacks_total", "emitted")
                delivered = server.metric("roomlink_callbacks_total", "delivered")
                duplicates = server.metric("roomlink_callbacks_total", "duplicated")
                delayed = server.metric("roomlink_callbacks_total", "delayed")
            finally:
                said = server.stop()
            good, bad = ordered.stop(), naive.stop()
            self.assertIn("callbacks:", said)
            # Every callback reached both receivers, each signature checked as the vendor's samples do.
            self.assertGreater(emitted, 200)
            self.assertEqual(good["badSignatures"], 0)
            self.assertEqual(bad["badSignatures"], 0)
            self.assertEqual(delivered, 2 * emitted + duplicates)
            self.assertGreater(duplicates + delayed, emitted)  # disorder 1: each one duplicated or held back
            status, report = audit(truth, ordered.view, ordered.url + "hooks")
            self.assertEqual(status, 0, report)
            self.assertTrue(report["matches"])
            self.assertEqual(report["counts"]["emitted"], emitted)
            status, report = audit(truth, naive.view, naive.url)
            self.assertEqual(status, 1, report)
            self.assertTrue(report["findings"])
            self.assertTrue(all(finding["blame"] == "disorder" for finding in report["findings"]), report)
            text = subprocess.run([ROOMLINK, "report", "callbacks", truth, naive.view, "--receiver", naive.url],
                                  capture_output=True, text=True).stdout
            self.assertIn("wrongly held", text)
            with open(truth) as file:
                return [json.loads(line) for line in file if '"event"' in line]

    def test_agora_ncs_a_receiver_ordering_by_clientseq_matches_and_a_naive_one_does_not(self):
        events = self.storm("agora", ["--callback-profile", "live"])
        # The room saw timeouts (the storm) and quits (the churn); each leave's reason is in the truth.
        reasons = {event.get("reason") for event in events if event["event"] == "leave"}
        self.assertTrue({"quit", "timeout"} <= reasons, reasons)
        self.assertIn("create", {event["event"] for event in events})

    def test_zego_a_receiver_ordering_by_login_time_matches_and_a_naive_one_does_not(self):
        self.storm("zego", ["--callback-app-id", "1234567"])


class AgoraRolesTests(unittest.TestCase):
    def test_audience_members_and_role_switches_are_agoras_live_broadcast_events(self):
        """A host and an audience member join; the audience member becomes a host and the host an audience member;
        both leave: 101, 103 and 105, 111, 112, 106 and 104, 102 — as `setClientRole` in a scenario over sockets."""
        from aiohttp import web

        notices = []

        async def handle(request):
            notices.append(json.loads(await request.read()))
            return web.json_response({})

        scenario = {
            "dialect": "agora", "seed": 1,
            "users": [{"id": "host"}, {"id": "listener", "role": "audience"}],
            "timeline": [
                {"at": "0s", "user": "host", "action": "login", "room": "c1"},
                {"at": "1s", "user": "listener", "action": "login", "room": "c1"},
                {"at": "3s", "user": "listener", "action": "setClientRole", "role": "broadcaster"},
                {"at": "5s", "user": "host", "action": "setClientRole", "role": "audience"},
                {"at": "7s", "user": "host", "action": "logout"},
                {"at": "8s", "user": "listener", "action": "logout"},
            ],
            "end": "10s",
        }

        async def body():
            runner, port = await receiving(handle)
            server = Serve("--callback", f"http://127.0.0.1:{port}/", "--callback-secret", SECRET,
                           "--callback-profile", "live", "--callback-disorder", "0")
            try:
                with tempfile.NamedTemporaryFile("w", suffix=".json") as file:
                    json.dump(scenario, file)
                    file.flush()
                    done = await asyncio.to_thread(
                        subprocess.run,
                        [ROOMLINK, "run", file.name, "--server", server.address, "--clock", "real", "--time-scale",
                         SCALE], capture_output=True, text=True, timeout=120)
                self.assertEqual(done.returncode, 0, done.stderr[-2000:])
                for _ in range(300):
                    if any(notice["eventType"] == 102 for notice in notices):
                        break
                    await asyncio.sleep(0.05)
            finally:
                server.stop()
                await runner.cleanup()
            # In the order they happened (each user's clientSeq, the channel's first and last).
            ordered = sorted(notices, key=lambda notice: notice["payload"].get(
                "clientSeq", -1 if notice["eventType"] == 101 else float("inf")))
            events = [(notice["eventType"], notice["payload"].get("account")) for notice in ordered]
            self.assertEqual(events[0], (101, None))
            self.assertEqual(events[1:], [(103, "host"), (105, "listener"), (111, "listener"), (112, "host"),
                                          (106, "host"), (104, "listener"), (102, None)])

        asyncio.run(body())


class LiveKitTests(unittest.TestCase):
    def test_livekit_webhooks_arrive_through_retries_each_room_in_order(self):
        from aiohttp import web
        from livekit import api

        receiver = api.WebhookReceiver(api.TokenVerifier(test_livekit.KEY, test_livekit.SECRET))
        seen, attempts = [], {}

        async def handle(request):
            body = (await request.read()).decode()
            event = receiver.receive(body, request.headers.get("Authorization", ""))
            attempts[event.id] = attempts.get(event.id, 0) + 1
            if attempts[event.id] == 1:
                return web.Response(status=503)  # each event's first attempt fails: livekit-server sends it again
            seen.append((event.room.name, event.event, event.participant.identity))
            return web.Response(status=200)

        async def body():
            runner, port = await receiving(handle)
            server = Serve("--protocol", "livekit", "--keys", f"{test_livekit.KEY}:{test_livekit.SECRET}",
                           "--callback", f"http://127.0.0.1:{port}/", dialect="livekit")
            try:
                done = await asyncio.to_thread(
                    subprocess.run,
                    [ROOMLINK, "load", "--server", server.address, "--protocol", "livekit", "--keys",
                     f"{test_livekit.KEY}:{test_livekit.SECRET}", "--dialect", "livekit", "--clock", "real",
                     "--time-scale", SCALE, "--clients", "12", "--rooms", "3", "--login-over", "1s", "--duration",
                     "40s", "--churn", "1:2s@5s..30s"],
                    capture_output=True, text=True, timeout=120)
                self.assertEqual(done.returncode, 0, done.stderr[-2000:])
                # Every room ends (its last participant's leave may wait for the server's ping timeout).
                for _ in range(600):
                    started = sum(1 for _, kind, _ in seen if kind == "room_started")
                    if started and started == sum(1 for _, kind, _ in seen if kind == "room_finished"):
                        break
                    await asyncio.sleep(0.1)
                await asyncio.to_thread(server.settle)
                retried = server.metric("roomlink_callbacks_total", "retried")
                failures = server.metric("roomlink_callback_failures_total", "status")
            finally:
                server.stop()
                await runner.cleanup()
            self.assertTrue(seen)
            self.assertEqual(len(attempts), len(seen))  # every event delivered, at its second attempt
            self.assertTrue(all(count == 2 for count in attempts.values()))
            self.assertEqual(retried, len(seen))
            self.assertEqual(failures, len(seen))
            # Per room, in order: started first, finished last, and a participant's join before its leave.
            for room in {room for room, _, _ in seen}:
                events = [(kind, who) for name, kind, who in seen if name == room]
                self.assertEqual(events[0][0], "room_started")
                self.assertEqual(events[-1][0], "room_finished")
                present = set()
                for kind, who in events[1:-1]:
                    if kind == "participant_joined":
                        self.assertNotIn(who, present)
                        present.add(who)
                    elif kind == "participant_left":
                        self.assertIn(who, present)
                        present.remove(who)
                self.assertEqual(present, set())

        asyncio.run(body())


class FaultyReceiver:
    """A receiver that answers by its path: /500, /garbage (not HTTP), /reset (closes the connection), /hang
    (never answers), /text (200, but not JSON), /ok."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.held = []
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.answer, args=(connection,), daemon=True).start()

    def answer(self, connection):
        reader = connection.makefile("rb")
        try:
            while True:
                line = reader.readline()
                if not line:
                    return
                path = line.split()[1].decode()
                length = 0
                while (header := reader.readline()) not in (b"\r\n", b""):
                    if header.lower().startswith(b"content-length:"):
                        length = int(header.split(b":")[1])
                reader.read(length)
                if path == "/hang":
                    self.held.append(connection)
                    return
                if path == "/reset":
                    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    connection.close()
                    return
                if path == "/garbage":
                    connection.sendall(b"this is not HTTP at all\r\n\r\n")
                    connection.close()
                    return
                status, body = {"/500": (b"500 Internal Server Error", b"down"), "/text": (b"200 OK", b"ok")}.get(
                    path, (b"200 OK", b"{}"))
                connection.sendall(b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\nContent-Length: "
                                   + str(len(body)).encode() + b"\r\n\r\n" + body)
        except (OSError, IndexError, ValueError):
            return

    def close(self):
        self.listener.close()
        for connection in self.held:
            connection.close()


class FaultTests(unittest.TestCase):
    def test_each_failing_receiver_loses_its_callbacks_by_cause_while_serve_keeps_serving(self):
        receiver = FaultyReceiver()
        dead = free_port()
        base = f"http://127.0.0.1:{receiver.port}"
        server = Serve("--callback", f"{base}/500", "--callback", f"{base}/garbage", "--callback", f"{base}/reset",
                       "--callback", f"{base}/hang", "--callback", f"http://127.0.0.1:{dead}/",
                       "--callback", f"{base}/ok", "--callback-secret", SECRET, "--callback-disorder", "0",
                       dialect="zego")
        try:
            done = subprocess.run(
                [ROOMLINK, "load", "--server", server.address, "--dialect", "zego", "--clock", "real",
                 "--time-scale", SCALE, "--clients", "8", "--rooms", "2", "--login-over", "1s", "--duration", "20s"],
                capture_output=True, text=True, timeout=120)
            # The clients' own run is untouched by receivers that fail.
            self.assertEqual(done.returncode, 0, done.stderr[-2000:])
            self.assertIn("failures: none", done.stderr)
            server.settle(limit=90, emitted=16)
            found = metrics(server.admin)
            emitted = found[("roomlink_callbacks_total", "emitted")]
            self.assertEqual(emitted, 16)  # 8 logins and 8 logouts (ZEGO sends no room events)
            # Each failing receiver loses every callback after ZEGO's five retries, by its own cause.
            for cause in ("status", "malformed", "closed", "timeout", "refused"):
                self.assertEqual(found[("roomlink_callback_losses_total", cause)], emitted, (cause, found))
                self.assertEqual(found[("roomlink_callback_failures_total", cause)], 6 * emitted, (cause, found))
            self.assertEqual(found[("roomlink_callbacks_total", "delivered")], emitted)  # /ok
            self.assertEqual(found[("roomlink_callbacks_total", "retried")], 5 * 5 * emitted)
        finally:
            said = server.stop()
            receiver.close()
        self.assertIn("80 lost", said)

    def test_agora_counts_only_a_200_with_a_json_body_as_delivered(self):
        receiver = FaultyReceiver()
        base = f"http://127.0.0.1:{receiver.port}"
        server = Serve("--callback", f"{base}/text", "--callback", f"{base}/ok", "--callback-secret", SECRET,
                       "--callback-disorder", "0")
        try:
            subprocess.run(
                [ROOMLINK, "load", "--server", server.address, "--dialect", "agora", "--clock", "real",
                 "--time-scale", SCALE, "--clients", "3", "--rooms", "1", "--login-over", "1s", "--duration", "4s"],
                capture_output=True, text=True, timeout=120, check=True)
            server.settle(limit=90, emitted=8)
            found = metrics(server.admin)
            emitted = found[("roomlink_callbacks_total", "emitted")]
            self.assertEqual(emitted, 8)  # the channel's creation, 3 joins, 3 leaves, its destruction
            self.assertEqual(found[("roomlink_callback_losses_total", "notJSON")], emitted)
            self.assertEqual(found[("roomlink_callback_failures_total", "notJSON")], 4 * emitted)  # three retries
            self.assertEqual(found[("roomlink_callbacks_total", "delivered")], emitted)
        finally:
            server.stop()
            receiver.close()

    def test_a_hanging_receiver_is_bounded_by_the_queue_and_drops_are_counted(self):
        receiver = FaultyReceiver()
        server = Serve("--callback", f"http://127.0.0.1:{receiver.port}/hang", "--callback-secret", SECRET,
                       "--callback-queue", "3", "--callback-disorder", "0")
        try:
            done = subprocess.run(
                [ROOMLINK, "load", "--server", server.address, "--dialect", "agora", "--clock", "real",
                 "--time-scale", SCALE, "--clients", "10", "--rooms", "1", "--login-over", "1s", "--duration", "6s"],
                capture_output=True, text=True, timeout=120)
            self.assertEqual(done.returncode, 0, done.stderr[-2000:])
            self.assertIn("failures: none", done.stderr)  # the clients never wait on the receiver
            self.assertLessEqual(server.metric("roomlink_callbacks_pending_peak"), 3)
            server.settle(limit=90)
            found = metrics(server.admin)
            dropped = found[("roomlink_callback_drops_total", "queueFull")]
            lost = found[("roomlink_callback_losses_total", "timeout")]
            self.assertGreater(dropped, 0)
            self.assertEqual(dropped + lost, found[("roomlink_callbacks_total", "emitted")])
        finally:
            server.stop()
            receiver.close()

    def test_a_receiver_whose_certificate_does_not_verify_fails_by_tls(self):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(os.path.join(FIXTURES, "server.pem"), os.path.join(FIXTURES, "server-key.pem"))
        listener = socket.create_server(("127.0.0.1", 0))
        port = listener.getsockname()[1]

        def accept():
            while True:
                try:
                    connection, _ = listener.accept()
                    context.wrap_socket(connection, server_side=True)
                except (OSError, ssl.SSLError):
                    continue

        threading.Thread(target=accept, daemon=True).start()
        server = Serve("--callback", f"https://localhost:{port}/", "--ca", os.path.join(FIXTURES, "other-ca.pem"),
                       "--callback-secret", SECRET, dialect="zego")
        try:
            subprocess.run(
                [ROOMLINK, "load", "--server", server.address, "--dialect", "zego", "--clock", "real",
                 "--time-scale", SCALE, "--clients", "2", "--rooms", "1", "--login-over", "1s", "--duration", "4s"],
                capture_output=True, text=True, timeout=120, check=True)
            server.settle(limit=90)
            self.assertEqual(server.metric("roomlink_callback_losses_total", "tls"),
                             server.metric("roomlink_callbacks_total", "emitted"))
        finally:
            server.stop()
            listener.close()

    def test_bad_callback_flags_are_named(self):
        cases = [
            (["--dialect", "agora", "--callback", "ftp://x/"], "--callback"),
            (["--dialect", "agora", "--callback", "http://127.0.0.1:1/"], "--callback-secret"),
            (["--dialect", "zego", "--callback", "http://127.0.0.1:1/", "--callback-secret", "s",
              "--callback-disorder", "2"], "--callback-disorder"),
            (["--protocol", "livekit", "--keys", "k:s", "--callback", "http://127.0.0.1:1/", "--callback-disorder",
              "0.1"], "--callback-disorder"),
            (["--dialect", "zego", "--callback-truth", "/tmp/x"], "--callback"),
            (["--dialect", "zego", "--callback", "http://127.0.0.1:1/", "--callback-secret", "s", "--callback-profile",
              "live"], "--callback-profile"),
            (["--dialect", "agora", "--callback", "http://127.0.0.1:1/", "--callback-secret", "s", "--callback-truth",
              "/nonexistent/dir/truth.jsonl"], "--callback-truth"),
        ]
        for flags, named in cases:
            done = subprocess.run([ROOMLINK, "serve", "--listen", "127.0.0.1:0", *flags], capture_output=True,
                                  text=True, timeout=30)
            self.assertNotEqual(done.returncode, 0, flags)
            self.assertIn(named, done.stderr, flags)

    def test_report_callbacks_names_bad_input(self):
        with tempfile.TemporaryDirectory() as directory:
            truth, view = os.path.join(directory, "truth"), os.path.join(directory, "view")
            with open(truth, "w") as file:
                file.write('{"id": 1, "t": 5, "event": "join", "room": "r", "user": "a"}\n{broken\n')
            with open(view, "w") as file:
                file.write('{"rooms": {}}')
            done = subprocess.run([ROOMLINK, "report", "callbacks", truth, view], capture_output=True, text=True)
            self.assertEqual(done.returncode, 2)
            self.assertIn("line 2", done.stderr)
            with open(view, "w") as file:
                file.write('["not", "an", "object"]')
            done = subprocess.run([ROOMLINK, "report", "callbacks", truth, view], capture_output=True, text=True)
            self.assertEqual(done.returncode, 2)


if __name__ == "__main__":
    ROOMLINK = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
