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
    /// Renews the node's lease on the room and restores the records of its members Redis lost; reconciling, also
    /// drops the records of the node that it no longer holds: `node mode [user session hidden]…` → `{seq, life[,
    /// user, session, node, hidden, …]}`, where `mode` is `0` (refresh), `r` (reconcile) or `1` (reconcile and
    /// answer the members).
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
        -- A room's next life (its first member after none). A room Redis no longer knows starts counting at the time:
        -- a room that comes back after its keys lapsed, or a Redis restarted, gets a life (a room_session_id) it
        -- never had.
        local function newLife()
          if redis.call('EXISTS', KEYS[4]) == 0 then redis.call('SET', KEYS[4], now) end
          redis.call('INCR', KEYS[4])
        end
        local function publish(kind, user, session, node, hidden, reason)
          local seq = redis.call('INCR', KEYS[3])
          redis.call('PUBLISH', channel, enc(kind, seq, user, session, node, hidden, reason))
          return seq
        end
        local function prune()
          local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
          if #gone == 0 then return end
          local lapsed = {}
          for _, node in ipairs(gone) do
            lapsed[node] = true
            redis.call('ZREM', KEYS[2], node)
          end
          local all = redis.call('HGETALL', KEYS[1])
          for i = 1, #all, 2 do
            local m = cjson.decode(all[i + 1])
            if lapsed[m.n] then
              redis.call('HDEL', KEYS[1], all[i])
              publish('leave', all[i], m.i, m.n, m.h, 'dropped')
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
          newLife()
          if cap ~= '' then redis.call('SET', KEYS[5], cap) else redis.call('DEL', KEYS[5]) end
        elseif not current then
          local limit = tonumber(redis.call('GET', KEYS[5]) or '')
          if limit and count >= limit then return {'cap'} end
        end
        redis.call('HSET', KEYS[1], user, cjson.encode({i = session, n = node, h = hidden}))
        redis.call('ZADD', KEYS[2], now + lease, node)
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

    // A refresh renews the node's one lease and looks up only the node's own members (one HMGET per thousand: Lua's
    // `unpack` has a bounded stack) to restore any Redis lost: a dozen cheap commands per room, whatever its size.
    // Finding the records the node no longer holds needs the whole room (HGETALL), so only a reconciling sync does it.
    private static let syncBody = """
        local node, mode = ARGV[4], ARGV[5]
        redis.call('ZADD', KEYS[2], now + lease, node)
        local mine, users, held, all = {}, {}, {}, nil
        for i = 6, #ARGV - 2, 3 do
          mine[ARGV[i]] = ARGV[i + 1]
          users[#users + 1] = ARGV[i]
        end
        if mode == '0' then
          for j = 1, #users, 1000 do
            local last = math.min(j + 999, #users)
            local got = redis.call('HMGET', KEYS[1], unpack(users, j, last))
            for k = 1, last - j + 1 do
              if got[k] then held[users[j + k - 1]] = true end
            end
          end
        else
          all = redis.call('HGETALL', KEYS[1])
          for i = 1, #all, 2 do held[all[i]] = cjson.decode(all[i + 1]) end
        end
        local count = nil
        for i = 6, #ARGV - 2, 3 do
          local user, session, hidden = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
          if not held[user] then
            if count == nil then count = redis.call('HLEN', KEYS[1]) end
            if count == 0 then newLife() end
            count = count + 1
            redis.call('HSET', KEYS[1], user, cjson.encode({i = session, n = node, h = hidden}))
            held[user] = true
            publish('join', user, session, node, hidden, '')
          end
        end
        if all then
          for i = 1, #all, 2 do
            local m = held[all[i]]
            if m.n == node and mine[all[i]] ~= m.i then
              redis.call('HDEL', KEYS[1], all[i])
              publish('leave', all[i], m.i, m.n, m.h, 'dropped')
            end
          end
        end
        keep()
        local reply = {tonumber(redis.call('GET', KEYS[3]) or '0'), tonumber(redis.call('GET', KEYS[4]) or '0')}
        if mode == '1' then listing(reply) end
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
