/// How many bytes of an in-process client or room each delivery on a simulation's lane reads, counted from the
/// object's start: the lane loads the cache lines those bytes span ahead of the delivery
/// (`SimulationLane.add(_:prefetching:bytes:and:bytes:)`), and no line past them.
///
/// Why exact: at ten million clients the memory bus is the limit — a prefetch waits for a free miss buffer — and a
/// line loaded past what a delivery reads (the next object's) costs as much as one it needs. Eight lines from each
/// receiver, where a client is six and a room five, was a third of the lines a heartbeat's round trip loaded.
///
/// These are layout facts: `LaneFootprintTests` reads the types' field offsets and fails when a field moves past
/// them, so that whoever moves it updates the figure here.
enum LaneFootprint {
    /// A client, all of it (its fields end at byte 344): a heartbeat and a message to it read most of its state.
    static let client = 344
    /// A client, as the room answering it reads it: its header, its names and loop, and its member hint (byte 104).
    static let clientAnswered = 104
    /// A room, all of it (its fields end at byte 312): a message's `receive` reads its state and its capacity node,
    /// and a login its table of logins in processing, the last field.
    static let room = 312
    /// A room, as a heartbeat sent to it reads it: its header, its ID, hash and loop (byte 56).
    static let roomHeader = 56
}
