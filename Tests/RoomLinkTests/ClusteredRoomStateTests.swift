import RoomLinkRuntime
import RoomLinkTestSupport
import Testing

@testable import RoomLink
@testable import RoomLinkEngine

/// A room's decisions as one node of a cluster sees them (no Redis, no clock): remote members come and go with the
/// cluster's changes, the room's own changes are announced, and the room's own members stay its own.
@Suite(.hangLimit(minutes: 10))
struct ClusteredRoomStateTests {
    typealias Endpoint = ServerRoomStateTests.Endpoint

    static func at(_ seconds: Double) -> RuntimeInstant { ServerRoomStateTests.at(seconds) }
    static func messages(_ effects: [ServerRoomState.Effect]) -> [String] { ServerRoomStateTests.messages(effects) }
    static func remote(_ user: String, session: UInt64, node: String = "b", hidden: Bool = false) -> ClusterMember {
        ClusterMember(userID: user, session: SessionID(rawValue: session), node: node, hidden: hidden)
    }

    @Test func remoteMembersArePeersButNeverSentToOrTimedOut() {
        ServerRoomStateTests.withLoop { loop in
            var room = ServerRoomState(roomID: "r1", timings: .zego, clustered: true)
            let a = Endpoint("A", loop: loop)
            let login = ServerRoomStateTests.login("A", session: 1, notify: true)
            let joined = room.login(login, from: a, tokenValid: true, admitted: (life: 3, sequence: 1), now: Self.at(0))
            #expect(Self.messages(joined).contains { $0.hasPrefix("A ← loginAccepted") })
            _ = room.flushUpdates(now: Self.at(0.1))
            // B joins on node b: A hears of it after the dialect's delay.
            let added = room.clusterChanged(.joined(Self.remote("B", session: 2), sequence: 2), now: Self.at(1))
            #expect(Self.messages(added) == ["flush 1100.0"])
            #expect(
                Self.messages(room.flushUpdates(now: Self.at(1.1))) == [
                    "A ← userUpdate(RoomLinkEngine.PresenceChange.add, users: [\"B\"], reason: nil)"
                ]
            )
            #expect(room.remoteMembers.map(\.userID) == ["B"] && room.localMembers.map(\.userID) == ["A"])
            // B's session is not this node's: a heartbeat for it is unknown here, and B never times out here.
            let heartbeat = room.heartbeat(userID: "B", session: SessionID(rawValue: 2), now: Self.at(2))
            #expect(heartbeat.reply == .sessionUnknown(session: SessionID(rawValue: 2)))
            _ = room.deadlinePassed(now: Self.at(500))
            #expect(room.memberIDs == ["B"], "A (silent) timed out; B is its node's to time out")
            // A change older than B's latest is ignored; B's leave from its node removes it.
            #expect(
                room.clusterChanged(
                    .left(userID: "B", session: SessionID(rawValue: 2), reason: .quit, sequence: 1),
                    now: Self.at(501)
                ).isEmpty
            )
            _ = room.clusterChanged(
                .left(userID: "B", session: SessionID(rawValue: 2), reason: .quit, sequence: 5),
                now: Self.at(502)
            )
            #expect(room.memberIDs.isEmpty)
        }
    }

    @Test func theRoomAnnouncesWhatItsOwnMembersDo() {
        ServerRoomStateTests.withLoop { loop in
            var room = ServerRoomState(roomID: "r1", timings: .zego, clustered: true)
            let a = Endpoint("A", loop: loop)
            _ = room.login(
                ServerRoomStateTests.login("A", session: 1),
                from: a,
                tokenValid: true,
                admitted: (1, 1),
                now: Self.at(0)
            )
            let hidden = room.setHidden(userID: "A", session: SessionID(rawValue: 1), hidden: true, now: Self.at(1))
            #expect(
                hidden.contains {
                    if case .announce(.hiddenChanged(userID: "A", _, hidden: true)) = $0 { true } else { false }
                }
            )
            let kicked = room.kick(userID: "A", reason: .admin, now: Self.at(2))
            #expect(
                kicked.contains {
                    if case .announce(.left(userID: "A", _, reason: .dropped, kicked: .admin)) = $0 {
                        true
                    } else {
                        false
                    }
                }
            )
            // Outside a cluster nothing is announced.
            var alone = ServerRoomState(roomID: "r2", timings: .zego)
            _ = alone.login(ServerRoomStateTests.login("A", session: 1), from: a, tokenValid: true, now: Self.at(0))
            #expect(
                !alone.logout(userID: "A", session: SessionID(rawValue: 1), now: Self.at(1)).contains {
                    if case .announce = $0 { true } else { false }
                }
            )
        }
    }

    /// A login of the same user elsewhere replaces the room's own member: it is kicked with the duplicate-login code,
    /// and peers hear nothing (ZEGO), or a departure and an arrival (LiveKit).
    @Test func aLoginElsewhereKicksTheLocalSession() {
        ServerRoomStateTests.withLoop { loop in
            for (timings, heard) in [(ServerTimings.zego, [String]()), (.liveKit, ["-A", "+A"])] {
                var room = ServerRoomState(roomID: "r1", timings: timings, clustered: true)
                let a = Endpoint("A", loop: loop)
                let c = Endpoint("C", loop: loop)
                _ = room.login(
                    ServerRoomStateTests.login("C", session: 9, notify: true),
                    from: c,
                    tokenValid: true,
                    admitted: (1, 1),
                    now: Self.at(0)
                )
                _ = room.login(
                    ServerRoomStateTests.login("A", session: 1),
                    from: a,
                    tokenValid: true,
                    admitted: (1, 2),
                    now: Self.at(0)
                )
                _ = room.flushUpdates(now: Self.at(1))
                let effects = room.clusterChanged(.joined(Self.remote("A", session: 7), sequence: 3), now: Self.at(2))
                #expect(
                    Self.messages(effects).first
                        == "A ← kicked(session: 1, reason: RoomLinkEngine.KickReason.duplicateLogin)"
                )
                #expect(room.remoteMembers.map(\.userID) == ["A"] && room.localMembers.map(\.userID) == ["C"])
                let updates = room.flushUpdates(now: Self.at(3)).compactMap { effect -> [String]? in
                    guard case .send(.userUpdate(let change, let users, _), _) = effect else { return nil }
                    return users.map { (change == .add ? "+" : "-") + $0 }
                }
                #expect(updates.flatMap(\.self) == heard)
                // The kicked session stays kicked here.
                let again = room.heartbeat(userID: "A", session: SessionID(rawValue: 1), now: Self.at(4))
                #expect(again.reply == .kicked(session: SessionID(rawValue: 1), reason: .duplicateLogin))
            }
        }
    }

    /// After the cluster's store restarted empty, a remote member the reloaded list lacks gets a heartbeat timeout to
    /// be restored by its node, and goes only then — as if its network were lost; one restored in time stays.
    @Test func aSnapshotAfterARestartKeepsMissingMembersForATimeout() {
        ServerRoomStateTests.withLoop { loop in
            var room = ServerRoomState(roomID: "r1", timings: .zego, clustered: true)
            let a = Endpoint("A", loop: loop)
            _ = room.login(
                ServerRoomStateTests.login("A", session: 1, notify: true),
                from: a,
                tokenValid: true,
                admitted: (1, 1),
                now: Self.at(0)
            )
            _ = room.clusterChanged(.joined(Self.remote("B", session: 2), sequence: 50), now: Self.at(0))
            _ = room.clusterChanged(.joined(Self.remote("C", session: 3), sequence: 51), now: Self.at(0))
            _ = room.flushUpdates(now: Self.at(1))
            // Redis came back empty: the list has A only (restored by this node), numbered from 1 again.
            let effects = room.clusterChanged(.snapshot([], sequence: 1, restarted: true), now: Self.at(10))
            #expect(Self.messages(effects).isEmpty, "nothing to tell, and the room's timer is armed already (A's)")
            #expect(room.memberIDs == ["A", "B", "C"], "nobody is dropped at once")
            // B's node restores it (numbered after the restart); C's never does. A beats on.
            _ = room.clusterChanged(.joined(Self.remote("B", session: 2), sequence: 2), now: Self.at(20))
            for second in [30.0, 60, 90] {
                _ = room.heartbeat(userID: "A", session: SessionID(rawValue: 1), now: Self.at(second))
                _ = room.deadlinePassed(now: Self.at(second + 0.5))
            }
            _ = room.deadlinePassed(now: Self.at(99.9))
            #expect(room.memberIDs == ["A", "B", "C"], "not before the timeout")
            _ = room.deadlinePassed(now: Self.at(100))
            #expect(room.memberIDs == ["A", "B"])
            // Without a restart, a member the list lacks left while the room was not listening: it goes at once.
            _ = room.clusterChanged(.snapshot([], sequence: 9, restarted: false), now: Self.at(101))
            #expect(room.memberIDs == ["A"])
        }
    }
    /// The room says when its node stops following it: after the departure of its last member of its own, after a
    /// refusal the cluster decided while it holds none, after another node replaced its last one — and never while it
    /// holds one, nor outside a cluster.
    @Test func theRoomReleasesItselfWhenItsLastMemberOfItsOwnIsGone() {
        ServerRoomStateTests.withLoop { loop in
            var room = ServerRoomState(roomID: "r1", timings: .zego, clustered: true)
            let (a, b) = (Endpoint("A", loop: loop), Endpoint("B", loop: loop))
            let loginA = ServerRoomStateTests.login("A", session: 1)
            let loginB = ServerRoomStateTests.login("B", session: 2)
            _ = room.login(loginA, from: a, tokenValid: true, admitted: (life: 1, sequence: 1), now: Self.at(0))
            _ = room.login(loginB, from: b, tokenValid: true, admitted: (life: 1, sequence: 2), now: Self.at(0))
            #expect(
                !Self.messages(room.logout(userID: "A", session: SessionID(rawValue: 1), now: Self.at(1))).contains(
                    "release"
                )
            )
            let last = Self.messages(room.logout(userID: "B", session: SessionID(rawValue: 2), now: Self.at(2)))
            #expect(last.last == "release")
            #expect(last.dropLast().contains { $0.hasPrefix("announce left") })

            // The cluster refuses a login to an empty room: the answer, then the release.
            let refused = room.admitted(
                ServerRoomStateTests.login("C", session: 3),
                verdict: .kicked(.admin),
                from: a,
                now: Self.at(3)
            )
            #expect(
                Self.messages(refused) == [
                    "A ← kicked(session: 3, reason: RoomLinkEngine.KickReason.admin)", "release",
                ]
            )
            let admitted = room.admitted(
                ServerRoomStateTests.login("C", session: 4),
                verdict: .admitted(life: 2, sequence: 5),
                from: a,
                now: Self.at(4)
            )
            #expect(!Self.messages(admitted).contains("release"))
            let busy = room.admitted(
                ServerRoomStateTests.login("D", session: 5),
                verdict: .unavailable(retryAfter: .seconds(1)),
                from: b,
                now: Self.at(5)
            )
            #expect(!Self.messages(busy).contains("release"), "C is still the room's own")

            // Another node's login of C replaces the room's last member of its own.
            let replaced = room.clusterChanged(.joined(Self.remote("C", session: 9), sequence: 6), now: Self.at(6))
            #expect(Self.messages(replaced).last == "release")

            var single = ServerRoomState(roomID: "r1", timings: .zego)
            _ = single.login(loginA, from: a, tokenValid: true, now: Self.at(0))
            #expect(
                !Self.messages(single.logout(userID: "A", session: SessionID(rawValue: 1), now: Self.at(1))).contains(
                    "release"
                )
            )
        }
    }
}
