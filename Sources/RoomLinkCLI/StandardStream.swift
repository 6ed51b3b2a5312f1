import Glibc

/// The process's standard output or error, for the lines RoomLink prints itself: serve's start and stop lines, load's
/// progress, warnings, summaries, error messages.
///
/// A write that fails is dropped. The usual failure is a reader that went away — `roomlink serve | head -1` takes the
/// port from the first line and closes the pipe; `roomlink load 2>&1 | head` stops reading progress — and with
/// SIGPIPE ignored (every command ignores it: its sockets need that) the write returns `EPIPE`. Foundation's
/// `FileHandle.write(_:)` traps on that error, which turned a reader's leaving into a crash at the next line (serve's
/// stop line, load's next progress line). A line nobody reads is not worth the run: the run goes on, and its report
/// and event log, which name their own files, say what it did.
enum StandardStream {
    case output
    case error

    var descriptor: Int32 {
        switch self {
        case .output: STDOUT_FILENO
        case .error: STDERR_FILENO
        }
    }

    /// Writes `text` whole (a short write is continued, an interrupted one retried), or stops at the first error.
    func write(_ text: String) {
        var text = text
        text.withUTF8 { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0, errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }
}
