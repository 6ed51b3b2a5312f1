#!/usr/bin/env python3
"""The app's token server in the storm, refereed by the vendors' own token code: a small token server written here
(Python's http.server, over TLS too) mints Agora's tokens with Agora's own library (`agoraiotools`' RtcTokenBuilder2)
and ZEGO's token04 with the description-built generator of test_tokens.py; `roomlink run --token-url` fetches from it
before each login and again when the server warns that the token will expire, and `roomlink serve` (or the in-process
server) verifies each as the vendor's cloud does. The same server can be told to answer 500, garbage, a body cut
short, nothing at all, or to present a certificate that does not verify: each is a failed fetch by cause in the
report, never a crash.

Usage: .venv/bin/python Tests/python/test_token_server.py PATH/TO/roomlink   (scripts/setup makes .venv)
"""

import http.server
import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse

try:
    from agoraiotools.AccessToken2 import AccessToken
    from agoraiotools.RtcTokenBuilder2 import Role_Publisher, RtcTokenBuilder
except ImportError:
    sys.exit("test_token_server: agoraiotools is missing: run scripts/setup, then use .venv/bin/python")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_tokens  # noqa: E402  (its app keys and its token04 generator)
import test_livekit  # noqa: E402  (livekit-api's AccessToken, with its key and secret)

FIXTURES = os.path.join(os.path.dirname(HERE), "Fixtures", "tls")
CA = os.path.join(FIXTURES, "ca.pem")
APP_ID, CERTIFICATE = test_tokens.APP_ID, test_tokens.CERTIFICATE
ZEGO_APP, ZEGO_SECRET = test_tokens.ZEGO_APP, test_tokens.ZEGO_SECRET
ROOMLINK = None
PROBE = "roomlink-probe"


class TokenServer:
    """An app's token server: GET /token?user=U&room=R&dialect=D answers the vendor's token for U in R. `mode` says how
    it answers real users (the start-up probe, user roomlink-probe, is always answered well): json, text, status500,
    garbage, cut (closes mid-body), hang (never answers)."""

    def __init__(self, mode="json", lifetime=3600, certificate=None):
        self.mode = mode
        self.lifetime = lifetime
        self.requests = []
        self.lock = threading.Lock()
        self.hanging = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *arguments):
                pass

            def do_GET(self):
                query = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
                user, room, dialect = (query.get(name, [""])[0] for name in ("user", "room", "dialect"))
                with server.lock:
                    server.requests.append((user, room, dialect))
                mode = "json" if user == PROBE else server.mode
                if mode == "hang":
                    server.hanging.append(self.connection)
                    time.sleep(30)
                    return
                if mode == "status500":
                    return self.answer(500, b"token service down")
                if mode == "garbage":
                    return self.answer(200, b"{not json at all")
                token = server.token(user, room, dialect)
                if mode == "cut":
                    self.send_response(200)
                    self.send_header("Content-Length", "4096")
                    self.end_headers()
                    self.wfile.write(b'{"token": "' + token.encode()[:10])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                    return
                body = json.dumps({"token": token}).encode() if mode == "json" else (token + "\n").encode()
                self.answer(200, body, "application/json" if mode == "json" else "text/plain")

            def answer(self, status, body, kind="text/plain"):
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.http = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        scheme = "http"
        if certificate:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(os.path.join(FIXTURES, f"{certificate}.pem"),
                                    os.path.join(FIXTURES, f"{certificate}-key.pem"))
            self.http.socket = context.wrap_socket(self.http.socket, server_side=True)
            scheme = "https"
        host = "localhost" if certificate else "127.0.0.1"
        self.url = f"{scheme}://{host}:{self.http.server_address[1]}/token?user={{user}}&room={{room}}&dialect={{dialect}}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def token(self, user, room, dialect):
        if dialect == "livekit":
            return test_livekit.token(user, room=room)
        if dialect == "zego":
            now = int(time.time())
            payload = json.dumps({"room_id": room, "privilege": {"1": 1, "2": 1}, "stream_id_list": None})
            claims = {"app_id": ZEGO_APP, "user_id": user, "nonce": 7, "ctime": now, "expire": now + self.lifetime,
                      "payload": payload}
            return test_tokens.zego_token04(claims)
        return RtcTokenBuilder.build_token_with_user_account(
            APP_ID, CERTIFICATE, room, user, Role_Publisher, self.lifetime, self.lifetime)

    def users(self):
        with self.lock:
            return [user for user, _, _ in self.requests if user != PROBE]

    def close(self):
        self.http.shutdown()
        for connection in self.hanging:
            try:
                connection.close()
            except OSError:
                pass
        self.http.server_close()


def scenario_file(directory, dialect, users, end="20s", room="c1"):
    scenario = {
        "dialect": dialect,
        "users": [{"id": user} for user in users],
        "timeline": [{"at": "0s", "user": user, "action": "login", "room": room} for user in users],
        "end": end,
    }
    path = os.path.join(directory, "scenario.json")
    with open(path, "w") as file:
        json.dump(scenario, file)
    return path


def run(path, directory, *flags, timeout=120):
    events, report = os.path.join(directory, "events.jsonl"), os.path.join(directory, "report.json")
    result = subprocess.run(
        [ROOMLINK, "run", path, "--clock", "real", "--events", events, "--report", report, *flags],
        capture_output=True, text=True, timeout=timeout,
    )
    lines, summary = [], None
    if os.path.exists(events):
        with open(events) as file:
            lines = [json.loads(line) for line in file]
    if os.path.exists(report) and os.path.getsize(report) > 0:
        with open(report) as file:
            summary = json.load(file)
    return result, lines, summary


class FetchedTokens(unittest.TestCase):
    def test_agora_clients_fetch_from_the_token_server_and_serve_verifies_agoras_tokens(self):
        """Against `roomlink serve --app-id --app-certificate`: every client fetches a token Agora's library made
        before it logs in, and joins; the report counts the fetches."""
        server = TokenServer("json")
        serve = subprocess.Popen(
            [ROOMLINK, "serve", "--listen", "127.0.0.1:0", "--dialect", "agora", "--app-id", APP_ID,
             "--app-certificate", CERTIFICATE, "--time-scale", "0.1", "--log-level", "warning"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            line = serve.stdout.readline()
            address = next(word for word in line.split() if word.count(":") == 1 and word[0].isdigit())
            with tempfile.TemporaryDirectory() as directory:
                path = scenario_file(directory, "agora", ["alice", "bob", "carol"], end="30s")
                result, lines, report = run(path, directory, "--server", address, "--time-scale", "0.1",
                                            "--token-url", server.url)
            self.assertEqual(result.returncode, 0, result.stderr)
            joined = {line["user"] for line in lines if line.get("type") == "joinChannelSuccess"}
            self.assertEqual(joined, {"alice", "bob", "carol"})
            self.assertEqual(sorted(server.users()), ["alice", "bob", "carol"])
            self.assertEqual({dialect for _, _, dialect in server.requests}, {"agora"})
            tokens = report["tokens"]
            self.assertEqual((tokens["fetches"], tokens["fetched"], tokens["failed"]), (3, 3, 0), tokens)
            self.assertEqual(tokens["latency"]["count"], 3)
        finally:
            serve.terminate()
            serve.communicate(timeout=30)
            server.close()

    def test_livekit_clients_dial_with_the_jwt_the_token_server_made(self):
        """`run --server ws://… --protocol livekit --token-url` with no --keys: each client fetches the access token
        livekit-api made, and `serve --protocol livekit` lets it in with it."""
        server = TokenServer("json")
        serve = subprocess.Popen(
            [ROOMLINK, "serve", "--listen", "127.0.0.1:0", "--protocol", "livekit", "--keys",
             f"{test_livekit.KEY}:{test_livekit.SECRET}", "--time-scale", "0.1", "--log-level", "warning"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            line = serve.stdout.readline()
            address = next(word for word in line.split() if word.count(":") == 1 and word[0].isdigit())
            with tempfile.TemporaryDirectory() as directory:
                path = scenario_file(directory, "livekit", ["ann", "ben"], end="20s")
                result, lines, report = run(path, directory, "--server", f"ws://{address}", "--protocol", "livekit",
                                            "--time-scale", "0.1", "--token-url", server.url)
            self.assertEqual(result.returncode, 0, result.stderr)
            connected = {line["user"] for line in lines
                         if line.get("type") == "connectionState" and line.get("state") == "connected"}
            self.assertEqual(connected, {"ann", "ben"})
            self.assertEqual(sorted(server.users()), ["ann", "ben"])
            self.assertEqual(report["tokens"]["fetched"], 2, report["tokens"])
        finally:
            serve.terminate()
            serve.communicate(timeout=30)
            server.close()

    def test_a_token_that_will_expire_is_fetched_again_and_renewed(self):
        """The in-process server verifies ZEGO's token04 with the server secret; each token lives 40 s, so ZEGO's
        token-will-expire comes 30 s before its end, the client fetches a new one and renews, and nobody is removed
        for an expired token."""
        server = TokenServer("text", lifetime=40)
        try:
            with tempfile.TemporaryDirectory() as directory:
                path = scenario_file(directory, "zego", ["u-1", "u-2"], end="24s")
                result, lines, report = run(path, directory, "--token-url", server.url, "--app-id", str(ZEGO_APP),
                                            "--server-secret", ZEGO_SECRET)
            self.assertEqual(result.returncode, 0, result.stderr)
            warned = [line for line in lines if line.get("type") == "tokenWillExpire"]
            self.assertGreaterEqual(len(warned), 2, warned)
            removed = [line for line in lines if line.get("type") == "roomState"
                       and line.get("reason") not in ("logining", "logined")]
            self.assertEqual(removed, [], "nobody is removed: every token was renewed in time")
            for user in ("u-1", "u-2"):
                self.assertGreaterEqual(server.users().count(user), 2, server.users())
            self.assertEqual(report["tokens"]["failed"], 0, report["tokens"])
        finally:
            server.close()

    def test_roomlinks_minted_tokens_are_read_by_agoras_library(self):
        """`--app-id --app-certificate` alone: the clients mint AccessToken2 themselves; the in-process server
        verifies them; the token in a client's login is one Agora's AccessToken2.from_string reads."""
        with tempfile.TemporaryDirectory() as directory:
            path = scenario_file(directory, "agora", ["7", "8"], end="10s")
            result, lines, report = run(path, directory, "--app-id", APP_ID, "--app-certificate", CERTIFICATE,
                                        "--token-lifetime", "1h", "--time-scale", "0.2")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual({line["user"] for line in lines if line.get("type") == "joinChannelSuccess"}, {"7", "8"})
        self.assertEqual(report["tokens"]["fetched"], 2)
        made = subprocess.run(
            [ROOMLINK, "token", "make", "--dialect", "agora", "--app-id", APP_ID, "--app-certificate", CERTIFICATE,
             "--room", "c1", "--user", "7", "--lifetime", "1h"], capture_output=True, text=True, timeout=30)
        token = AccessToken()
        self.assertTrue(token.from_string(made.stdout.strip()))
        self.assertEqual(token._AccessToken__app_id.decode(), APP_ID)


class FailedFetches(unittest.TestCase):
    """Each way a token server fails is a failed fetch by cause; the client retries by its policy and gives up at
    its login timeout; no crash."""

    def fails(self, mode, cause, *flags, certificate=None):
        server = TokenServer(mode, certificate=certificate)
        try:
            with tempfile.TemporaryDirectory() as directory:
                path = scenario_file(directory, "zego", ["z-1"], end="40s")
                result, lines, report = run(path, directory, "--token-url", server.url, "--time-scale", "0.1",
                                            *flags)
            self.assertIn(result.returncode, (0, 1), result.stderr)
            tokens = report["tokens"]
            self.assertGreaterEqual(tokens["failures"].get(cause, 0), 1, tokens)
            self.assertEqual(set(tokens["failures"]), {cause}, tokens)
            self.assertEqual(tokens["fetched"], 0, tokens)
            self.assertGreaterEqual(server.users().count("z-1"), 2, "a failed fetch is retried")
            self.assertNotIn("loginSuccess", [line.get("type") for line in lines])
        finally:
            server.close()

    def test_status_500_is_an_http_status_failure(self):
        self.fails("status500", "httpStatus")

    def test_garbage_is_a_bad_body(self):
        self.fails("garbage", "badBody")

    def test_a_reply_cut_short_is_a_closed_connection(self):
        self.fails("cut", "closed")

    def test_a_hanging_server_is_a_timeout(self):
        self.fails("hang", "timeout", "--token-timeout", "5s")

    def test_an_https_token_server_is_verified(self):
        """The test authority's certificate for localhost: fetched and used; the client joins."""
        server = TokenServer("json", certificate="server")
        try:
            with tempfile.TemporaryDirectory() as directory:
                path = scenario_file(directory, "zego", ["s-1"], end="10s")
                result, lines, report = run(path, directory, "--token-url", server.url, "--token-ca", CA,
                                            "--time-scale", "0.2")
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(report["tokens"]["fetched"], 1, report["tokens"])
        finally:
            server.close()

    def test_a_certificate_that_does_not_verify_or_no_server_is_a_clear_error_at_start(self):
        server = TokenServer("json", certificate="untrusted")
        closed = socket.socket()
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        closed.close()
        try:
            with tempfile.TemporaryDirectory() as directory:
                path = scenario_file(directory, "zego", ["s-1"], end="10s")
                for flags, words in ((["--token-url", server.url, "--token-ca", CA], "tls"),
                                     (["--token-url", f"http://127.0.0.1:{port}/t?u={{user}}"], "refused")):
                    result, _, _ = run(path, directory, *flags)
                    self.assertEqual(result.returncode, 2, result.stderr)
                    self.assertIn("--token-url", result.stderr)
                    self.assertIn(words, result.stderr)
        finally:
            server.close()

    def test_bad_token_flags_are_named(self):
        with tempfile.TemporaryDirectory() as directory:
            path = scenario_file(directory, "zego", ["s-1"], end="10s")
            for flags, named in (
                (["--token-url", "ftp://example.com/t"], "--token-url"),
                (["--token-url", "http://127.0.0.1:1/t", "--token-server", "latency=1s"], "--token-server"),
                (["--token-timeout", "1s"], "--token-timeout"),
                (["--token-server", "capacity=0"], "--token-server"),
                (["--token-server", "speed=3"], "--token-server"),
                (["--token-lifetime", "1h"], "--token-lifetime"),
                (["--app-id", "abc", "--server-secret", ZEGO_SECRET], "--app-id"),
            ):
                result = subprocess.run([ROOMLINK, "run", path, *flags], capture_output=True, text=True, timeout=60)
                self.assertEqual(result.returncode, 2, (flags, result.stderr))
                self.assertIn(named, result.stderr, flags)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    ROOMLINK = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
