internal import CLibevent
import Foundation
import Logging
@_spi(RoomLinkInternals) import RoomLinkLibevent
import RoomLinkNetwork
import RoomLinkRuntime

/// serve's side of the peer helper (`scripts/livekit-peer`, `--peer-helper HOST:PORT`): LiveKit's SDKs count a room
/// connected only once a peer connection is up, and RoomLink carries no media, so a WebRTC stack answers their offers
/// — the helper, over one TCP connection of JSON lines (docs/livekit.md, "The peer connection"). This forwards each
/// participant's offers and trickled candidates and hands the answers back to its connection.
///
/// A helper that is not there, or goes away, costs only the peer connections: signalling goes on, and the connection
/// is tried again at the next offer.
final class LiveKitPeerHelper: @unchecked Sendable {
    // Safe: every `var` is touched on `loop`'s thread only — the public calls hop there first, and the bufferevent's
    // callbacks run there. The `let`s are immutable and Sendable.

    let address: SocketAddress
    fileprivate let loop: LibeventLoop
    private let logger: Logger
    private var bufferEvent: OpaquePointer?
    private var connected = false
    /// Lines written before the connection was up.
    private var queued: [Data] = []
    /// Who waits for the answer of each peer connection.
    private var waiting: [String: LiveKitConnection] = [:]

    init(address: SocketAddress, loop: LibeventLoop, logger: Logger) {
        self.address = address
        self.loop = loop
        self.logger = logger
    }

    /// Asks for the answer to `connection`'s offer for the peer connection `id`.
    func offer(id: String, sdp: String, for connection: LiveKitConnection) {
        loop.execute { [self] in
            waiting[id] = connection
            send(["type": "offer", "id": id, "sdp": sdp])
        }
    }

    /// A candidate the participant trickled for the peer connection `id` (its JSON `RTCIceCandidateInit`).
    func candidate(id: String, json: String) {
        let candidate = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) ?? [String: Any]()
        guard let candidate = candidate as? [String: Any], JSONSerialization.isValidJSONObject(candidate) else {
            return
        }
        let line = Self.line(["type": "candidate", "id": id, "candidate": candidate])
        loop.execute { [self] in write(line) }
    }

    /// The participant is gone: its peer connections close.
    func close(ids: [String]) {
        loop.execute { [self] in
            for id in ids where waiting.removeValue(forKey: id) != nil || connected {
                send(["type": "close", "id": id])
            }
        }
    }

    // MARK: - The connection (on `loop`)

    private func send(_ message: [String: String]) {
        write(Self.line(message))
    }

    private static func line(_ object: [String: Any]) -> Data {
        var data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        data.append(UInt8(ascii: "\n"))
        return data
    }

    private func write(_ line: Data) {
        if bufferEvent == nil { open() }
        guard connected, let bufferEvent else {
            queued.append(line)
            return
        }
        line.withUnsafeBytes { _ = bufferevent_write(bufferEvent, $0.baseAddress, $0.count) }
    }

    private func open() {
        guard let bufferEvent = bufferevent_socket_new(loop.eventBase, -1, Sockets.bufferEventOptions) else { return }
        self.bufferEvent = bufferEvent
        let context = Unmanaged.passUnretained(self).toOpaque()
        bufferevent_setcb(bufferEvent, helperReadCallback, nil, helperEventCallback, context)
        bufferevent_enable(bufferEvent, Sockets.readWrite)
        let status = (try? address.connect(bufferEvent)) ?? -1
        if status != 0 { lost("cannot connect") }
    }

    fileprivate func event(_ what: Int16) {
        if what & Sockets.connected != 0 {
            connected = true
            let lines = queued
            queued.removeAll()
            for line in lines { write(line) }
        } else if what & (Sockets.eof | Sockets.error) != 0 {
            lost(what & Sockets.eof != 0 ? "it closed the connection" : "the connection failed")
        }
    }

    /// The helper is away: what waited for it gets no answer (those participants' peer connections never come up).
    private func lost(_ why: String) {
        logger.warning("the LiveKit peer helper at \(address) is not reachable: \(why)")
        if let bufferEvent { bufferevent_free(bufferEvent) }
        bufferEvent = nil
        connected = false
        queued.removeAll()
        waiting.removeAll()
    }

    fileprivate func readable() {
        guard let bufferEvent, let input = bufferevent_get_input(bufferEvent) else { return }
        while let line = evbuffer_readln(input, nil, EVBUFFER_EOL_LF) {
            defer { free(line) }
            let data = Data(bytes: line, count: strlen(line))
            guard let message = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                let type = message["type"] as? String, let id = message["id"] as? String
            else { continue }
            switch type {
            case "answer":
                if let sdp = message["sdp"] as? String, let connection = waiting.removeValue(forKey: id) {
                    connection.peerAnswered(id: id, sdp: sdp)
                }
            case "error":
                waiting[id] = nil
                logger.notice("the LiveKit peer helper refused an offer: \(message["message"] ?? "")")
            default:
                break
            }
        }
    }
}

private func helperReadCallback(_ bufferEvent: OpaquePointer?, _ context: UnsafeMutableRawPointer?) {
    let helper = Unmanaged<LiveKitPeerHelper>.fromOpaque(context!).takeUnretainedValue()
    helper.loop.runCallback { helper.readable() }
}

private func helperEventCallback(_ bufferEvent: OpaquePointer?, _ what: Int16, _ context: UnsafeMutableRawPointer?) {
    let helper = Unmanaged<LiveKitPeerHelper>.fromOpaque(context!).takeUnretainedValue()
    helper.loop.runCallback { helper.event(what) }
}
