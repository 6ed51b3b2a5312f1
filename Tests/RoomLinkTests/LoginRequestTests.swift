import RoomLinkRuntime
import RoomLinkTestSupport
import Testing

@testable import RoomLinkEngine

/// A login request as every login in flight and in processing carries it: packed, and its optional instants read back
/// as they were set.
@Suite(.hangLimit(minutes: 10))
struct LoginRequestTests {
    /// 72 bytes, where the public fields in their first order with optional instants took 96 — and so a message, whose
    /// largest case is a login, takes 72 too (a storm sends half a million logins at once).
    @Test func aLoginRequestStaysPacked() {
        #expect(MemoryLayout<LoginRequest>.stride <= 72)
        #expect(MemoryLayout<ClientMessage>.stride <= 72)
    }

    /// Instants kept as words read back as they were set, `nil` included, and two requests that differ only in one
    /// are different.
    @Test func itsInstantsReadBackAsSet() {
        var request = LoginRequest(userID: "a", session: SessionID(rawValue: 1))
        #expect(request.answerBy == nil && request.sentAt == nil)
        let early = RuntimeInstant(nanoseconds: -5)
        let latest = RuntimeInstant(nanoseconds: .max)
        request.answerBy = .zero
        request.sentAt = early
        #expect(request.answerBy == .zero && request.sentAt == early)
        var other = request
        other.answerBy = nil
        #expect(other != request && other.answerBy == nil && other.sentAt == early)
        other.answerBy = latest
        #expect(other.answerBy == latest && other != request)
        let made = LoginRequest(userID: "a", session: SessionID(rawValue: 1), answerBy: .zero, sentAt: early)
        #expect(made == request)
    }
}
