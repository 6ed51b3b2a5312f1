package import RoomLinkEngine
@_spi(RoomLinkInternals) package import RoomLinkRuntime

// A simulation keeps the engine's fixed-delay timers — heartbeats, logins waiting out the server's processing time —
// in lanes (`SimulationLane`): one FIFO each, in exactly the order the timers would have fired, without a timer, a
// slot and a handler object each. The engine asks through the seam it defines (`BatchingLoop`) and never learns that
// a lane is behind it.

extension SimulationRuntime: BatchingLoop {
    /// The lane every client on this simulation beating every `interval` shares (whatever its dialect: the item calls
    /// its client), or `nil` when `interval` is shorter than a lane's minimum.
    package func heartbeatBatch(every interval: Duration) -> (any HeartbeatBatch)? {
        SimulationLane<BatchedHeartbeat>.shared(on: self, delay: interval) {
            SimulationLane<BatchedHeartbeat>(on: self, delay: interval, prefetches: true) {
                $0.client.beatFromBatch(token: $0.token)
            }
        }
    }

    /// The lane every server on this simulation with a processing time of `delay` shares, or `nil` when `delay` is
    /// shorter than a lane's minimum.
    package func loginBatch(after delay: Duration) -> (any LoginBatch)? {
        SimulationLane<ServerRoom.PendingLogin>.shared(on: self, delay: delay) {
            SimulationLane(on: self, delay: delay, prefetches: true) { pending in
                pending.process()
                return false
            }
        }
    }
}

extension SimulationLane: HeartbeatBatch where Item == BatchedHeartbeat {
    /// Adds the heartbeat with its client's lines to load ahead, and the first lines of its room: the heartbeat
    /// retains the room to send, and 100,000 rooms' headers are in no cache. Kept for the heartbeat's life; a room the
    /// client left since is only a wasted load (a prefetch never faults).
    package func add(_ beat: BatchedHeartbeat, towards room: (any RoomChannel)?) -> Bool {
        let client = prefetchAddress(of: beat.client)
        return add(
            beat,
            prefetching: client,
            and: room.map { prefetchAddress(of: $0) } ?? nil,
            secondBytes: LaneFootprint.roomHeader
        )
    }
}

extension SimulationLane: LoginBatch where Item == ServerRoom.PendingLogin {
    /// Adds the login, with its room's lines to load ahead.
    package func add(_ login: ServerRoom.PendingLogin) -> Bool {
        add(login, prefetching: prefetchAddress(of: login.room))
    }
}
