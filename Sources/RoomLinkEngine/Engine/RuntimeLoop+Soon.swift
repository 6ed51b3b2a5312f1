extension RuntimeLoop {
    /// Runs `body` on this loop: at once when called on its thread (so a loop's own driver and the engine's own
    /// calls keep their order), otherwise as a zero-delay timer. Dropped if the loop has shut down.
    public func runSoon(_ body: @escaping @Sendable () -> Void) {
        if isInServiceThread {
            body()
        } else {
            _ = try? schedule(after: .zero, body)
        }
    }
}
