@_spi(RoomLinkInternals) package import RoomLinkLibevent
package import RoomLinkRuntime

/// A wire protocol `roomlink serve` speaks besides RoomLink's own (LiveKit's, in `RoomLinkLiveKit`): it makes the
/// connection of each socket the server accepts; each connection is the channel its rooms answer on
/// (`ClientChannel.send(_:from:)`), in its protocol. The listeners,
/// the loops, the limits on descriptors and the graceful shutdown are the server's, whatever the protocol.
package protocol ServedProtocol: Sendable {
    /// Serves the socket `fd`, accepted from `peer`, on `loop`.
    func connection(
        id: UInt64,
        fd: Int32,
        peer: String,
        loop: LibeventLoop,
        server: TCPServerTransport
    ) -> any ServedConnection

}

/// One client's connection, as the server holds it: on one loop, until it frees itself
/// (`TCPServerTransport.forget(_:)`).
package protocol ServedConnection: AnyObject {
    var id: UInt64 { get }
    var loop: LibeventLoop { get }
    /// Whether it still reads and serves.
    var isOpen: Bool { get }
    /// The server shuts down: a goodbye in the protocol's words, then the socket is freed (at once, or once written).
    func shutDown()
    /// It waited for its first login longer than the login timeout before it was served.
    func loginTimedOut()
    /// The periodic media check of a dialect whose media flows continuously.
    func checkMedia(now: RuntimeInstant)
    /// Frees the socket now, whatever is left to write.
    func free()
}

extension ServedConnection {
    package func checkMedia(now: RuntimeInstant) {}
}
