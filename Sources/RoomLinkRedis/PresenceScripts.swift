/// The Lua scripts that change a room's presence in Redis, each atomic (Redis runs a script alone), in the manner of
/// Centrifugo's presence scripts. Every script is called with the room's six keys (``PresenceKeys``) and, first in
/// its arguments, the room's channel, the lease and the keys' time to live in milliseconds; times are Redis's own
/// (`TIME`), so the nodes' clocks never meet. Each change of the members takes the room's next sequence number and is
/// published on the room's channel with it (``PresenceEvent``'s encoding), so every node applies the same changes
/// in the same order.
enum PresenceScript: CaseIterable {
    /// Admits a login: `user session node hidden kind cap snapshot` → `{ok, seq, life[, user, session, node, hidden,
    /// …]}`, `{kicked, reason}`, `{unknown}` or `{cap}`.
    case claim
    /// Removes a member if its session is still the one named: `user session reason kicked` → its sequence number, or 0.
    case release
    /// Hides or shows a member: `user session hidden` → its sequence number, or 0.
    case hide
    /// Refreshes the leases of a node's members, restores those Redis lost and drops those the node no longer holds:
    /// `node snapshot [user session hidden]…` → `{seq, life[, user, session, node, hidden, …]}`.
    case sync

    var source: String {
        switch self {
        case .claim: Self.prelude + Self.claimBody
        case .release: Self.prelude + Self.releaseBody
        case .hide: Self.prelude + Self.hideBody
        case .sync: Self.prelude + Self.syncBody
        }
    }

    /// What every script starts with: its time, the encoding of published changes, the removal of lapsed leases (a
    /// node that died), and the keys' time to live.
    private static let prelude = """
        local channel, lease, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
        local t = redis.call('TIME')
        local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        local function enc(...)
          local out = {}
          for _, v in ipairs({...}) do local s = tostring(v); out[#out + 1] = #s .. ':' .. s end
          return table.concat(out)
        end
        local function publish(kind, user, session, node, hidden, reason)
          local seq = redis.call('INCR', KEYS[3])
          redis.call('PUBLISH', channel, enc(kind, seq, user, session, node, hidden, reason))
          return seq
        end
        local function prune()
          local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
          for _, user in ipairs(gone) do
            local held = redis.call('HGET', KEYS[1], user)
            redis.call('HDEL', KEYS[1], user)
            redis.call('ZREM', KEYS[2], user)
            if held then
              local m = cjson.decode(held)
              publish('leave', user, m.i, m.n, m.h, 'dropped')
            end
          end
        end
        local function keep()
          for i = 1, 6 do redis.call('PEXPIRE', KEYS[i], ttl) end
        end
        local function listing(reply)
          local all = redis.call('HGETALL', KEYS[1])
          for i = 1, #all, 2 do
            local m = cjson.decode(all[i + 1])
            reply[#reply + 1] = all[i]
            reply[#reply + 1] = m.i
            reply[#reply + 1] = m.n
            reply[#reply + 1] = tostring(m.h)
          end
          return reply
        end
        prune()

        """

    private static let claimBody = """
        local user, session, node, hidden, kind, cap = ARGV[4], ARGV[5], ARGV[6], tonumber(ARGV[7]), ARGV[8], ARGV[9]
        if kind ~= 'join' then
          local reason = redis.call('HGET', KEYS[6], session)
          if reason then return {'kicked', reason} end
        end
        local held = redis.call('HGET', KEYS[1], user)
        local current = held and cjson.decode(held)
        if kind == 'resume' and (not current or current.i ~= session) then return {'unknown'} end
        local count = redis.call('HLEN', KEYS[1])
        if count == 0 then
          redis.call('INCR', KEYS[4])
          if cap ~= '' then redis.call('SET', KEYS[5], cap) else redis.call('DEL', KEYS[5]) end
        elseif not current then
          local limit = tonumber(redis.call('GET', KEYS[5]) or '')
          if limit and count >= limit then return {'cap'} end
        end
        redis.call('HSET', KEYS[1], user, cjson.encode({i = session, n = node, h = hidden}))
        redis.call('ZADD', KEYS[2], now + lease, user)
        local seq = publish('join', user, session, node, hidden, '')
        keep()
        local reply = {'ok', seq, tonumber(redis.call('GET', KEYS[4]) or '0')}
        if ARGV[10] == '1' then listing(reply) end
        return reply
        """

    private static let releaseBody = """
        local user, session, reason, kicked = ARGV[4], ARGV[5], ARGV[6], ARGV[7]
        if kicked ~= '' then redis.call('HSET', KEYS[6], session, kicked) end
        local held = redis.call('HGET', KEYS[1], user)
        local m = held and cjson.decode(held)
        local seq = 0
        if m and m.i == session then
          redis.call('HDEL', KEYS[1], user)
          redis.call('ZREM', KEYS[2], user)
          seq = publish('leave', user, session, m.n, m.h, reason)
        end
        keep()
        return seq
        """

    private static let hideBody = """
        local user, session, hidden = ARGV[4], ARGV[5], tonumber(ARGV[6])
        local held = redis.call('HGET', KEYS[1], user)
        local m = held and cjson.decode(held)
        if not m or m.i ~= session then return 0 end
        m.h = hidden
        redis.call('HSET', KEYS[1], user, cjson.encode(m))
        local seq = publish('hide', user, session, m.n, hidden, '')
        keep()
        return seq
        """

    // One HGETALL, then one ZADD per thousand refreshed leases (Lua's `unpack` has a bounded stack): the script costs
    // Redis a dozen commands per room whatever the room's size, not two per member.
    private static let syncBody = """
        local node, snapshot = ARGV[4], ARGV[5]
        local all = redis.call('HGETALL', KEYS[1])
        local held = {}
        for i = 1, #all, 2 do held[all[i]] = cjson.decode(all[i + 1]) end
        local count = #all / 2
        local mine, leases = {}, {}
        for i = 6, #ARGV - 2, 3 do
          local user, session, hidden = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
          mine[user] = session
          local m = held[user]
          if m then
            if m.i == session and m.n == node then
              leases[#leases + 1] = now + lease
              leases[#leases + 1] = user
            end
          else
            if count == 0 then redis.call('INCR', KEYS[4]) end
            count = count + 1
            redis.call('HSET', KEYS[1], user, cjson.encode({i = session, n = node, h = hidden}))
            leases[#leases + 1] = now + lease
            leases[#leases + 1] = user
            publish('join', user, session, node, hidden, '')
          end
        end
        for i = 1, #leases, 2000 do
          redis.call('ZADD', KEYS[2], unpack(leases, i, math.min(i + 1999, #leases)))
        end
        for i = 1, #all, 2 do
          local m = held[all[i]]
          if m.n == node and mine[all[i]] ~= m.i then
            redis.call('HDEL', KEYS[1], all[i])
            redis.call('ZREM', KEYS[2], all[i])
            publish('leave', all[i], m.i, m.n, m.h, 'dropped')
          end
        end
        keep()
        local reply = {tonumber(redis.call('GET', KEYS[3]) or '0'), tonumber(redis.call('GET', KEYS[4]) or '0')}
        if snapshot == '1' then listing(reply) end
        return reply
        """
}

/// The Redis keys of one room's presence (`docs/redis.md`), each with the room's ID as its hash tag so that a Redis
/// Cluster keeps them in one slot: a script touches only one room's keys.
struct PresenceKeys {
    /// Every key of the room, in the order the scripts expect: members (hash), leases (sorted set), sequence,
    /// lives, member cap, kicked sessions (hash).
    let all: [String]
    /// The channel the room's changes are published on.
    let channel: String

    init(prefix: String, roomID: String) {
        let base = "\(prefix):{\(roomID)}:"
        all = ["members", "leases", "seq", "life", "cap", "kicked"].map { base + $0 }
        channel = base + "events"
    }
}
