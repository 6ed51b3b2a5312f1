internal import CLibevent
internal import CWslay

/// One WebSocket (RFC 6455) over a libevent bufferevent, after the HTTP handshake: wslay frames, masks, fragments and
/// answers pings and closes; this class moves its bytes between wslay and the bufferevent's buffers. Touched on the
/// bufferevent's loop only.
final class WebSocketSession {
    /// A whole message that arrived.
    struct Message {
        /// ``binary`` or ``text``.
        var opcode: UInt8
        var payload: [UInt8]

        static let text: UInt8 = 0x1
        static let binary: UInt8 = 0x2
    }

    private var context: wslay_event_context_ptr?
    private let bufferEvent: OpaquePointer
    /// Messages taken by the last ``receive()``.
    private var received: [Message] = []

    /// A session on `bufferEvent`, as the server (`isServer`) or the client side; a message longer than
    /// `maximumMessage` bytes closes it (1009, message too big).
    init?(on bufferEvent: OpaquePointer, isServer: Bool, maximumMessage: Int) {
        self.bufferEvent = bufferEvent
        var callbacks = wslay_event_callbacks()
        callbacks.recv_callback = { context, buffer, length, _, user in
            let input = bufferevent_get_input(session(user).bufferEvent)
            let count = evbuffer_remove(input, buffer, length)
            guard count > 0 else {
                wslay_event_set_error(context, WSLAY_ERR_WOULDBLOCK.rawValue)
                return -1
            }
            return Int(count)
        }
        callbacks.send_callback = { context, data, length, _, user in
            // The bufferevent buffers what the socket cannot take yet: it takes every byte.
            guard bufferevent_write(session(user).bufferEvent, data, length) == 0 else {
                wslay_event_set_error(context, WSLAY_ERR_CALLBACK_FAILURE.rawValue)
                return -1
            }
            return length
        }
        callbacks.genmask_callback = { _, buffer, length, _ in
            var generator = SystemRandomNumberGenerator()
            for index in 0..<length { buffer![index] = generator.next() }
            return 0
        }
        callbacks.on_msg_recv_callback = { _, argument, user in
            guard let argument = argument?.pointee,
                argument.opcode == Message.text || argument.opcode == Message.binary
            else { return }
            let payload = [UInt8](UnsafeBufferPointer(start: argument.msg, count: argument.msg_length))
            session(user).received.append(Message(opcode: argument.opcode, payload: payload))
        }
        let user = Unmanaged.passUnretained(self).toOpaque()
        let status =
            isServer
            ? wslay_event_context_server_init(&context, &callbacks, user)
            : wslay_event_context_client_init(&context, &callbacks, user)
        guard status == 0, let context else { return nil }
        wslay_event_config_set_max_recv_msg_length(context, UInt64(maximumMessage))
    }

    deinit {
        if let context { wslay_event_context_free(context) }
    }

    /// Reads the frames waiting in the bufferevent's input, writes what they call for (pongs, the close's answer),
    /// and returns the whole messages among them.
    func receive() -> [Message] {
        guard let context else { return [] }
        received.removeAll(keepingCapacity: true)
        _ = wslay_event_recv(context)
        _ = wslay_event_send(context)
        return received
    }

    /// Sends `payload` as one message.
    func send(_ payload: [UInt8], opcode: UInt8 = Message.binary) {
        guard let context, wslay_event_get_close_sent(context) == 0 else { return }
        payload.withUnsafeBufferPointer { bytes in
            var message = wslay_event_msg(opcode: opcode, msg: bytes.baseAddress, msg_length: bytes.count)
            _ = wslay_event_queue_msg(context, &message)
        }
        _ = wslay_event_send(context)
    }

    /// Starts the closing handshake with `code` and `reason`.
    func close(code: UInt16, reason: String) {
        guard let context else { return }
        var reason = Array(reason.utf8.prefix(123))
        _ = reason.withUnsafeMutableBufferPointer { wslay_event_queue_close(context, code, $0.baseAddress, $0.count) }
        _ = wslay_event_send(context)
    }

    /// Whether the session is over: both sides sent their close, or a frame was malformed (wslay then wants
    /// neither to read nor to write).
    var isOver: Bool {
        guard let context else { return true }
        return wslay_event_want_read(context) == 0 && wslay_event_want_write(context) == 0
    }
}

private func session(_ user: UnsafeMutableRawPointer?) -> WebSocketSession {
    Unmanaged<WebSocketSession>.fromOpaque(user!).takeUnretainedValue()
}
