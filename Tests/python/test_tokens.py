#!/usr/bin/env python3
"""The vendors' token code as the referee of `roomlink token`: tokens Agora's own library (`agoraiotools`, from Agora's
Tools repository) builds are accepted, and refused with another certificate, channel, user or an expired privilege;
tokens RoomLink makes are read by Agora's `AccessToken2.from_string` and rebuilt by its builder byte for byte. ZEGO
publishes no package: its token04 is made and opened here by a second implementation written from ZEGO's description
of the format (the expiry, a nonce, the AES-GCM sealed JSON and its tag, the mode), on the `cryptography` package.

Usage: .venv/bin/python Tests/python/test_tokens.py PATH/TO/roomlink   (scripts/setup makes .venv with
Tests/python/requirements.txt)
"""

import base64
import json
import os
import secrets
import struct
import subprocess
import sys
import tempfile
import time
import unittest

try:
    from agoraiotools.AccessToken2 import AccessToken, ServiceRtc
    from agoraiotools.RtcTokenBuilder import RtcTokenBuilder as RtcTokenBuilder006
    from agoraiotools.RtcTokenBuilder2 import Role_Publisher, RtcTokenBuilder
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
except ImportError:
    sys.exit("test_tokens: agoraiotools or cryptography is missing: run scripts/setup, then use .venv/bin/python")

ROOMLINK = None
APP_ID = "970CA35de60c44645bbae8a215061b33"
CERTIFICATE = "5CFd2fd1755d40ecb72977518be15d3b"
ZEGO_APP = 1234567
ZEGO_SECRET = "fa94dd0f974cf2e293728a526b028271"


def roomlink(*arguments):
    return subprocess.run([ROOMLINK, "token", *arguments], capture_output=True, text=True, timeout=30)


def check_agora(token, channel, user, now=None, certificate=CERTIFICATE):
    arguments = ["check", token, "--dialect", "agora", "--app-id", APP_ID, "--app-certificate", certificate]
    arguments += ["--room", channel, "--user", str(user)]
    if now is not None:
        arguments += ["--now", str(now)]
    return roomlink(*arguments)


def zego_token04(claims, secret=ZEGO_SECRET):
    """token04 as ZEGO describes it: '04' + base64(expire int64 BE, nonce length uint16 BE, nonce, sealed length
    uint16 BE, AES-GCM ciphertext and tag, mode byte 1)."""
    nonce = secrets.token_bytes(12)
    sealed = AESGCM(secret.encode()).encrypt(nonce, json.dumps(claims).encode(), None)
    body = struct.pack(">qH", claims["expire"], len(nonce)) + nonce + struct.pack(">H", len(sealed)) + sealed + b"\x01"
    return "04" + base64.b64encode(body).decode()


def open_zego_token04(token, secret=ZEGO_SECRET):
    body = base64.b64decode(token[2:])
    expire, nonce_length = struct.unpack(">qH", body[:10])
    nonce = body[10 : 10 + nonce_length]
    (sealed_length,) = struct.unpack(">H", body[10 + nonce_length : 12 + nonce_length])
    sealed = body[12 + nonce_length : 12 + nonce_length + sealed_length]
    mode = body[12 + nonce_length + sealed_length :]
    assert mode == b"\x01", f"mode {mode!r}"
    claims = json.loads(AESGCM(secret.encode()).decrypt(nonce, sealed, None))
    assert claims["expire"] == expire
    return claims


class AgoraTokens(unittest.TestCase):
    def verdict(self, result, valid):
        self.assertEqual(result.returncode, 0 if valid else 1, result.stderr)
        answer = json.loads(result.stdout)
        self.assertEqual(answer["valid"], valid)
        return answer

    def test_agoras_access_token2_is_accepted_by_uid_and_by_account(self):
        now = int(time.time())
        for user in (2882341273, "alice"):
            if isinstance(user, int):
                token = RtcTokenBuilder.build_token_with_uid(APP_ID, CERTIFICATE, "room-1", user, Role_Publisher, 600, 300)
            else:
                token = RtcTokenBuilder.build_token_with_user_account(
                    APP_ID, CERTIFICATE, "room-1", user, Role_Publisher, 600, 300
                )
            answer = self.verdict(check_agora(token, "room-1", user, now), True)
            self.assertEqual(answer["format"], "007")
            self.assertTrue(now + 299 <= answer["expires"] <= now + 301, answer)

    def test_agoras_access_token2_is_refused_by_name(self):
        now = int(time.time())
        token = RtcTokenBuilder.build_token_with_uid(APP_ID, CERTIFICATE, "room-1", 42, Role_Publisher, 600, 300)
        cases = [
            (dict(certificate="0" * 32), "signature"),
            (dict(channel="room-2"), "another room"),
            (dict(user=43), "another user"),
            (dict(now=now + 400), "expired"),
        ]
        for change, reason in cases:
            arguments = dict(token=token, channel="room-1", user=42, now=now)
            arguments.update(change)
            answer = self.verdict(check_agora(**arguments), False)
            self.assertIn(reason, answer["reason"], change)
        # uid 0: any user may join.
        anyone = RtcTokenBuilder.build_token_with_uid(APP_ID, CERTIFICATE, "room-1", 0, Role_Publisher, 600, 600)
        self.verdict(check_agora(anyone, "room-1", 77, now), True)

    def test_agoras_older_access_token_is_accepted_and_refused_by_name(self):
        now = int(time.time())
        token = RtcTokenBuilder006.buildTokenWithUid(APP_ID, CERTIFICATE, "room-1", 42, 1, now + 300)
        answer = self.verdict(check_agora(token, "room-1", 42, now), True)
        self.assertEqual(answer["format"], "006")
        self.assertEqual(answer["expires"], now + 300)
        self.assertIn("another user", self.verdict(check_agora(token, "room-1", 43, now), False)["reason"])
        self.assertIn("expired", self.verdict(check_agora(token, "room-1", 42, now + 301), False)["reason"])

    def test_roomlinks_access_token2_is_read_and_rebuilt_by_agoras_library(self):
        for user in ("42", "alice"):
            made = roomlink(
                "make", "--dialect", "agora", "--app-id", APP_ID, "--app-certificate", CERTIFICATE,
                "--room", "room-9", "--user", user, "--lifetime", "10m", "--privilege-lifetime", "5m",
                "--issued-at", "1700000000",
            )
            self.assertEqual(made.returncode, 0, made.stderr)
            token = made.stdout.strip()
            parsed = AccessToken()
            self.assertTrue(parsed.from_string(token))
            fields = {name.split("__")[-1]: value for name, value in vars(parsed).items()}
            self.assertEqual(fields["app_id"], APP_ID.encode())
            self.assertEqual((fields["issue_ts"], fields["expire"]), (1700000000, 600))
            rtc = fields["service"][ServiceRtc.kServiceType]
            rtc_fields = {name.split("__")[-1]: value for name, value in vars(rtc).items()}
            self.assertEqual(rtc_fields["channel_name"], b"room-9")
            self.assertEqual(rtc_fields["uid"], user.encode())
            self.assertEqual(rtc_fields["privileges"], {ServiceRtc.kPrivilegeJoinChannel: 300})
            # Agora's builder, given the same fields and salt, makes the same token: the signature is Agora's.
            rebuilt = AccessToken(APP_ID, CERTIFICATE, issue_ts=1700000000, expire=600)
            rebuilt._AccessToken__salt = fields["salt"]
            service = ServiceRtc("room-9", int(user) if user.isdigit() else user)
            service.add_privilege(ServiceRtc.kPrivilegeJoinChannel, 300)
            rebuilt.add_service(service)
            self.assertEqual(rebuilt.build(), token)

    def test_hostile_tokens_are_refused_without_a_crash(self):
        good = RtcTokenBuilder.build_token_with_uid(APP_ID, CERTIFICATE, "room-1", 42, Role_Publisher, 600, 600)
        hostile = ["", "007", "007" + "A" * 5000, "007!!!!", good[:40], good[:-4], "006" + APP_ID, "006" + "x" * 60,
                   "007" + base64.b64encode(b"\x78\x9c" + b"\xff" * 50).decode()]
        for token in hostile:
            result = check_agora(token, "room-1", 42)
            self.assertEqual(result.returncode, 1, (token[:50], result.stderr))
            self.assertFalse(json.loads(result.stdout)["valid"])
            self.assertTrue(result.stderr.startswith("roomlink: token check: "), result.stderr)


class ServeVerifiesTokens(unittest.TestCase):
    """`roomlink serve --dialect agora --app-id … --app-certificate …` over real sockets: clients of `roomlink run
    --server` join with tokens Agora's library made, a forged one is refused with invalidToken, and a token that
    expires mid-run warns its member 30 s before and removes it at its expiry (the server's clock at time scale
    0.02, from the wall clock at its start)."""

    def serve(self, *extra):
        process = subprocess.Popen(
            [ROOMLINK, "serve", "--listen", "127.0.0.1:0", "--dialect", "agora", "--time-scale", "0.02",
             "--log-level", "warning", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        line = process.stdout.readline()
        address = next(word for word in line.split() if word.count(":") == 1 and word[0].isdigit())
        return process, address

    def test_serve_accepts_agoras_tokens_refuses_a_forged_one_and_expires_them(self):
        process, address = self.serve("--app-id", APP_ID, "--app-certificate", CERTIFICATE)
        try:
            now = int(time.time())
            # The run starts within a few seconds of now; scenario time runs 50 times faster than the wall clock
            # from serve's start, so a 300 s token lives about 300 s of the run.
            good = RtcTokenBuilder.build_token_with_uid(APP_ID, CERTIFICATE, "c1", 42, Role_Publisher, 300, 300)
            other = RtcTokenBuilder.build_token_with_uid(APP_ID, CERTIFICATE, "c1", 43, Role_Publisher, 3600, 3600)
            forged = RtcTokenBuilder.build_token_with_uid(APP_ID, "0" * 32, "c1", 44, Role_Publisher, 3600, 3600)
            scenario = {
                "dialect": "agora",
                "users": [{"id": "42", "token": good}, {"id": "43", "token": other}, {"id": "44", "token": forged}],
                "timeline": [{"at": "0s", "user": user, "action": "login", "room": "c1"} for user in ("42", "43", "44")],
                "end": "10m",
            }
            with tempfile.TemporaryDirectory() as directory:
                path = os.path.join(directory, "scenario.json")
                with open(path, "w") as file:
                    json.dump(scenario, file)
                events = os.path.join(directory, "events.jsonl")
                run = subprocess.run(
                    [ROOMLINK, "run", path, "--server", address, "--clock", "real", "--time-scale", "0.02",
                     "--events", events, "--report", "/dev/null"],
                    capture_output=True, text=True, timeout=120,
                )
                self.assertIn(run.returncode, (0, 1), run.stderr)
                with open(events) as file:
                    lines = [json.loads(line) for line in file]
            def states(user):
                return [(line["t_ms"], line.get("state"), line.get("reason")) for line in lines
                        if line.get("user") == user and line.get("type") == "connectionState"]
            self.assertEqual(states("44")[-1][1:], ("disconnected", "invalidToken"), states("44"))
            self.assertIn(("connected", "joinSuccess"), [state[1:] for state in states("43")])
            self.assertEqual(states("43")[-1][1:], ("connected", "joinSuccess"), "43's token outlives the run")
            self.assertIn(("connected", "joinSuccess"), [state[1:] for state in states("42")])
            failed = [state for state in states("42") if state[1:] == ("failed", "tokenExpired")]
            self.assertEqual(len(failed), 1, states("42"))
            warned = [line["t_ms"] for line in lines if line.get("user") == "42"
                      and line.get("type") == "tokenPrivilegeWillExpire"]
            self.assertEqual(len(warned), 1, warned)
            # Warned 30 s (of scenario time) before the removal, give or take the wall clock's whole seconds.
            self.assertAlmostEqual((failed[0][0] - warned[0]) / 1000, 30, delta=2.5)
            # Removed at the token's expiry, counted from serve's start a little before the run's.
            self.assertTrue(200 <= failed[0][0] / 1000 <= 301, failed)
        finally:
            process.terminate()
            process.communicate(timeout=30)

    def test_serve_refuses_token_flags_out_of_place(self):
        for flags in (["--app-id", APP_ID], ["--app-id", APP_ID, "--server-secret", ZEGO_SECRET],
                      ["--app-certificate", CERTIFICATE]):
            result = subprocess.run([ROOMLINK, "serve", "--dialect", "agora", *flags], capture_output=True, text=True,
                                    timeout=30)
            self.assertEqual(result.returncode, 2, (flags, result.stderr))
            self.assertTrue(result.stderr.startswith("roomlink: --"), result.stderr)


class ZegoTokens(unittest.TestCase):
    def check(self, token, user="alice", room="room-1", now=None, secret=ZEGO_SECRET):
        arguments = ["check", token, "--dialect", "zego", "--app-id", str(ZEGO_APP), "--server-secret", secret]
        arguments += ["--user", user, "--room", room]
        if now is not None:
            arguments += ["--now", str(now)]
        return roomlink(*arguments)

    def test_a_token04_made_from_zegos_description_is_accepted_and_refused_by_name(self):
        now = int(time.time())
        claims = dict(app_id=ZEGO_APP, user_id="alice", nonce=12345, ctime=now, expire=now + 600, payload="")
        token = zego_token04(claims)
        result = self.check(token, now=now)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(json.loads(result.stdout), {"expires": now + 600, "format": "04", "valid": True})
        self.assertIn("another user", json.loads(self.check(token, user="bob", now=now).stdout)["reason"])
        self.assertIn("expired", json.loads(self.check(token, now=now + 600).stdout)["reason"])
        self.assertIn("signature", json.loads(self.check(token, now=now, secret="0" * 32).stdout)["reason"])
        room = dict(claims, payload=json.dumps({"room_id": "room-1", "privilege": {"1": 1, "2": 0}}))
        self.assertEqual(self.check(zego_token04(room), now=now).returncode, 0)
        self.assertIn("another room", json.loads(self.check(zego_token04(room), room="room-2", now=now).stdout)["reason"])
        # Any byte of the sealed claims altered: refused.
        body = bytearray(base64.b64decode(token[2:]))
        for index in range(10, len(body) - 1):
            body[index] ^= 0x04
            result = self.check("04" + base64.b64encode(bytes(body)).decode(), now=now)
            self.assertEqual(result.returncode, 1, index)
            body[index] ^= 0x04

    def test_roomlinks_token04_opens_with_zegos_description(self):
        made = roomlink(
            "make", "--dialect", "zego", "--app-id", str(ZEGO_APP), "--server-secret", ZEGO_SECRET,
            "--user", "alice", "--room", "room-3", "--lifetime", "1h", "--issued-at", "1700000000",
        )
        self.assertEqual(made.returncode, 0, made.stderr)
        claims = open_zego_token04(made.stdout.strip())
        self.assertEqual((claims["app_id"], claims["user_id"]), (ZEGO_APP, "alice"))
        self.assertEqual((claims["ctime"], claims["expire"]), (1700000000, 1700003600))
        self.assertEqual(json.loads(claims["payload"])["room_id"], "room-3")
        self.assertEqual(json.loads(claims["payload"])["privilege"]["1"], 1)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    ROOMLINK = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
