/// How messages between clients and rooms travel: the conditions every message of a `SimulatedNetwork` meets.
public struct NetworkConditions: Sendable, Equatable {
    /// One-way latency.
    public var latency: Duration = .milliseconds(50)
    /// Uniform jitter added to the latency, at most this much.
    public var jitter: Duration = .zero
    /// Probability in [0, 1] that a message is lost.
    public var loss: Double = 0

    /// Creates network conditions; the defaults are 50 ms latency, no jitter, no loss.
    public init(latency: Duration = .milliseconds(50), jitter: Duration = .zero, loss: Double = 0) {
        self.latency = latency
        self.jitter = jitter
        self.loss = loss
    }
}
