/// How many bytes of the other end a delivery on a simulation's lane reads, counted from the object's start — the
/// second hint of `SimulationLane.add(_:prefetching:and:secondBytes:)`: the lane loads the cache lines those bytes
/// span, and no line past them.
///
/// Why exact for the other end: its header is all a delivery reads of it, and at ten million clients the memory bus
/// is the limit (a prefetch waits for a free miss buffer), where a line loaded for nothing costs as much as one
/// needed. The receiver itself is loaded eight lines from its start, as before: loading exactly its bytes measured
/// no faster at one or ten million clients (BENCHMARKS.md, issue 31's thirteenth part), and the lines past one
/// client are often the next one's — made one after another, they log in one after another.
///
/// These are layout facts: `ClientFootprintTests` reads the types' field offsets and fails when a field moves past
/// them, so that whoever moves it updates the figure here.
package enum LaneFootprint {
    /// A client, as the room answering it reads it: its header, its names and loop, and its member hint (byte 104).
    package static let clientAnswered = 104
    /// A room, as a heartbeat sent to it reads it: its header, its ID, hash and loop (byte 56).
    package static let roomHeader = 56
}
