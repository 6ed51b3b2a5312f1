#!/usr/bin/env python3
"""A backend's room list, kept from a vendor's room callbacks — the receiver docs/callbacks.md walks through.

    callback-receiver.py --vendor agora|zego|livekit --listen 127.0.0.1:8300 \
        [--secret S | --keys KEY:SECRET] [--order vendor|arrival] [--view FILE]

It checks every callback's signature as the vendor's own samples do (Agora: HMAC-SHA1 and HMAC-SHA256 of the raw
body; ZEGO: SHA-1 of the sorted secret, timestamp and nonce; LiveKit: livekit-api's WebhookReceiver), answers as the
vendor counts delivered (Agora: 200 with a JSON body), and keeps who is in each room:

- ``--order vendor`` (the default) follows each vendor's advice for callbacks that arrive twice or out of order:
  Agora — per user, apply an event only if its ``clientSeq`` is above the last one applied, and keep a user who left
  for a minute (so that an older join arriving late is recognised); ZEGO — per user, the later ``login_time`` wins,
  and a session's logout beats its own login whatever order they arrive in; LiveKit — per room the webhooks come in
  order, so apply them as they come, a leave only for the participant SID that joined.
- ``--order arrival`` applies each callback as it arrives: the naive receiver, which a storm with disorder breaks.

``GET /view`` answers the room lists as JSON, and SIGTERM or SIGINT writes them to ``--view FILE`` before exiting:
``{"rooms": {"room": ["user", ...]}, "received": N, "badSignatures": N}`` — what ``roomlink report callbacks TRUTH
FILE`` checks.
"""

import argparse
import asyncio
import hashlib
import hmac
import json
import signal
import sys
import time

from aiohttp import web


class Rooms:
    """Who is in each room, as one receiver's rules keep it."""

    def __init__(self, vendor, order):
        self.vendor, self.order = vendor, order
        # (room, user) -> the state the ordering rule keeps.
        self.users = {}
        self.received = 0
        self.bad_signatures = 0

    def view(self):
        rooms = {}
        for (room, user), state in self.users.items():
            if state["online"]:
                rooms.setdefault(room, []).append(user)
        return {
            "rooms": {room: sorted(users) for room, users in sorted(rooms.items())},
            "received": self.received,
            "badSignatures": self.bad_signatures,
        }

    def apply(self, room, user, online, key, session):
        """The user's event, ordered by `key` (a tuple; larger is later) under the vendor's rule."""
        now = time.monotonic()
        # A user who left more than a minute ago is forgotten (Agora's advice; harmless for the others).
        for stale in [k for k, s in self.users.items() if not s["online"] and now - s["at"] > 60]:
            del self.users[stale]
        state = self.users.get((room, user))
        if self.order == "arrival":
            self.users[(room, user)] = {"online": online, "key": key, "session": session, "at": now}
            return
        if self.vendor == "livekit":
            # In order per room: a leave counts only for the session that joined.
            if not online and state is not None and state["session"] != session:
                return
        elif state is not None and key <= state["key"]:
            return  # a duplicate, or older than what is known
        self.users[(room, user)] = {"online": online, "key": key, "session": session, "at": now}


def agora(rooms, secret):
    async def handle(request):
        body = await request.read()
        expected1 = hmac.new(secret.encode(), body, hashlib.sha1).hexdigest()
        expected2 = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        if not (hmac.compare_digest(request.headers.get("Agora-Signature", ""), expected1)
                and hmac.compare_digest(request.headers.get("Agora-Signature-V2", ""), expected2)):
            rooms.bad_signatures += 1
            return web.json_response({"error": "bad signature"}, status=401)
        notice = json.loads(body)
        rooms.received += 1
        payload = notice["payload"]
        kind = notice["eventType"]
        if kind in (103, 105, 107, 104, 106, 108):
            online = kind in (103, 105, 107)
            user = payload.get("account") or str(payload["uid"])
            rooms.apply(payload["channelName"], user, online, (payload["clientSeq"],), None)
        return web.json_response({})

    return handle


def zego(rooms, secret):
    async def handle(request):
        form = await request.json()
        expected = hashlib.sha1("".join(sorted([secret, str(form["timestamp"]), str(form["nonce"])])).encode())
        if not hmac.compare_digest(form.get("signature", ""), expected.hexdigest()):
            rooms.bad_signatures += 1
            return web.json_response({"error": "bad signature"}, status=401)
        rooms.received += 1
        logout = form["event"] == "room_logout"
        # The later login wins; a session's logout beats its own login.
        key = (int(form["login_time"]), 1 if logout else 0)
        rooms.apply(form["room_id"], form["user_account"], not logout, key, form["session_id"])
        return web.json_response({"code": 0})

    return handle


def livekit(rooms, keys):
    from livekit import api

    key, secret = keys.split(":", 1)
    receiver = api.WebhookReceiver(api.TokenVerifier(key, secret))

    async def handle(request):
        body = (await request.read()).decode()
        try:
            event = receiver.receive(body, request.headers.get("Authorization", ""))
        except Exception:
            rooms.bad_signatures += 1
            return web.Response(status=401)
        rooms.received += 1
        if event.event in ("participant_joined", "participant_left"):
            online = event.event == "participant_joined"
            rooms.apply(event.room.name, event.participant.identity, online, (), event.participant.sid)
        return web.Response(status=200)

    return handle


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vendor", choices=["agora", "zego", "livekit"], required=True)
    parser.add_argument("--listen", default="127.0.0.1:8300")
    parser.add_argument("--secret", help="Agora's NCS secret or ZEGO's callback secret")
    parser.add_argument("--keys", help="LiveKit's KEY:SECRET")
    parser.add_argument("--order", choices=["vendor", "arrival"], default="vendor")
    parser.add_argument("--view", help="write the room lists here on SIGTERM or SIGINT")
    options = parser.parse_args()
    if options.vendor == "livekit" and not options.keys or options.vendor != "livekit" and not options.secret:
        parser.error("--secret (agora, zego) or --keys (livekit) is needed")

    rooms = Rooms(options.vendor, options.order)
    handler = {
        "agora": lambda: agora(rooms, options.secret),
        "zego": lambda: zego(rooms, options.secret),
        "livekit": lambda: livekit(rooms, options.keys),
    }[options.vendor]()
    app = web.Application()
    app.router.add_post("/{tail:.*}", handler)
    app.router.add_get("/view", lambda request: web.json_response(rooms.view()))
    runner = web.AppRunner(app)
    await runner.setup()
    host, port = options.listen.rsplit(":", 1)
    site = web.TCPSite(runner, host, int(port))
    await site.start()
    bound = site._server.sockets[0].getsockname()
    print(f"callback-receiver: {options.vendor} ({options.order} order) on http://{bound[0]}:{bound[1]}/", flush=True)

    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    await stop.wait()
    if options.view:
        with open(options.view, "w") as file:
            json.dump(rooms.view(), file, indent=1)
    await runner.cleanup()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
