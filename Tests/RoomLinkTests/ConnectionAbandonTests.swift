import RoomLinkRuntime
import RoomLinkTestSupport
import Testing

@testable import RoomLinkEngine

/// When a client gives up on its connection (an unanswered login or heartbeat, silent data), and what a socket's
/// report of stopped data does to each dialect: the decisions alone, as values, in `RoomClientStateTests`'s terms.
@Suite(.hangLimit(minutes: 10))
struct ConnectionAbandonTests {
    typealias Driver = RoomClientStateTests.Driver
    typealias Action = RoomClientState.Action

    static func at(_ seconds: Double) -> RuntimeInstant { RoomClientStateTests.at(seconds) }

    /// The position of the first action matching `matches`, if any.
    static func position(in actions: [Action], _ matches: (Action) -> Bool) -> Int? {
        actions.firstIndex(where: matches)
    }

    @Test
    func anUnansweredLoginGivesUpItsConnectionBeforeTheNextAttemptIsArmed() {
        var client = Driver<Zego>()
        _ = client.join(at: 0)
        let timedOut = client.fire(.room("r", .answer(attempt: 1)), at: Self.at(5))
        let abandon = Self.position(in: timedOut) { $0 == .abandon(room: "r") }
        let next = Self.position(in: timedOut) { $0 == .arm(.room("r", .nextAttempt(after: 1)), at: Self.at(6)) }
        #expect(abandon != nil && next != nil && abandon! < next!)
        #expect(timedOut.filter { $0 == .abandon(room: "r") }.count == 1)
    }

    @Test
    func heartbeatSilenceGivesUpTheConnectionBeforeTheReconnectionsFirstLogin() {
        var client = Driver<Zego>()
        client.joined(at: 0)
        // ZEGO: a heartbeat every 30 s, silence for 90 s is a lost connection.
        let beat = client.heartbeat(at: 100)
        #expect(RoomClientStateTests.reports(beat).contains(.lost(.silent)))
        let abandon = Self.position(in: beat) { $0 == .abandon(room: "r") }
        let login = Self.position(in: beat) { if case .send(.login, _) = $0 { true } else { false } }
        #expect(abandon != nil && login != nil && abandon! < login!)
    }

    @Test
    func aConnectionThatClosedOrALinkThatWentDownIsNotAbandoned() {
        var client = Driver<Zego>()
        client.joined(at: 0)
        client.recorder.refusing = true
        #expect(!client.link(.down, at: 10).contains(.abandon(room: "r")))

        var closed = Driver<Zego>()
        closed.joined(at: 0)
        #expect(!closed.connection(.closed(.reset), at: 10).contains(.abandon(room: "r")))
    }

    @Test
    func agoraDeclaresStoppedDataLostItsDetectionTimeAfterTheDataStoppedAndGivesUpTheConnection() {
        var client = Driver<Agora>()
        client.joined(at: 0)
        let session = client.session
        // The socket noticed at 11.5 s that nothing arrived since 10 s: Agora's 4 s count from 10 s.
        let stopped = client.connection(.dataStopped(since: Self.at(10)), at: 11.5)
        #expect(
            stopped == [
                .closed(room: "r", session: session),
                .arm(.room("r", .routeSilence(session)), at: Self.at(14)),
            ]
        )
        let lost = client.fire(.room("r", .routeSilence(session)), at: Self.at(14))
        #expect(RoomClientStateTests.reports(lost).first == .lost(.silent))
        let abandon = Self.position(in: lost) { $0 == .abandon(room: "r") }
        let login = Self.position(in: lost) { if case .send(.login, _) = $0 { true } else { false } }
        #expect(abandon != nil && login != nil && abandon! < login!)
    }

    @Test
    func dataThatFlowsAgainBeforeTheDetectionTimeIsNoLoss() {
        var client = Driver<Agora>()
        client.joined(at: 0)
        let session = client.session
        _ = client.connection(.dataStopped(since: Self.at(10)), at: 11.5)
        #expect(
            client.connection(.dataResumed, at: 12) == [
                .cancel(.room("r", .routeSilence(session))),
                .send(.connectionResumed(userID: "A", session: session), room: "r"),
            ]
        )
        #expect(client.fire(.room("r", .routeSilence(session)), at: Self.at(14)).isEmpty)
        #expect(client.state.rooms[0].phase == .joined)
    }

    @Test
    func stoppedDataNoticedLateIsDeclaredAtOnceNeverBeforeItWasNoticed() {
        var client = Driver<Agora>()
        client.joined(at: 0)
        let session = client.session
        // Noticed 6 s after it stopped (a stalled loop): the 4 s are over, so the timer is due now, not in the past.
        #expect(
            RoomClientStateTests.armed(client.connection(.dataStopped(since: Self.at(10)), at: 16)).map(\.1) == [
                Self.at(16)
            ]
        )
        #expect(client.state.rooms[0].timer == .routeSilence(session))
    }

    @Test
    func aDialectThatWatchesItsHeartbeatsIgnoresStoppedData() {
        var zego = Driver<Zego>()
        zego.joined(at: 0)
        #expect(zego.connection(.dataStopped(since: Self.at(10)), at: 11.5).isEmpty)
        #expect(zego.connection(.dataResumed, at: 12).isEmpty)
        var liveKit = Driver<LiveKit>()
        liveKit.joined(at: 0)
        #expect(liveKit.connection(.dataStopped(since: Self.at(10)), at: 11.5).isEmpty)
    }
}
