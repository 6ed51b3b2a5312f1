import Foundation
import RoomLink
import RoomLinkRedis
import RoomLinkTestSupport
import Testing

/// A fleet's generators in Redis: addresses, registration and its refusals, the agreed start on each generator's own
/// clock (however far off), and what `report merge` reads back.
@Suite(
    .hangLimit(minutes: 5),
    .enabled(if: RedisServer.isAvailable, "needs redis-server (scripts/setup)")
)
struct FleetCoordinatorTests {
    @Test func addressesNameTheirRunAndBadOnesSayWhy() throws {
        let address = try FleetAddress(parsing: "redis://10.0.0.5:6380/storm-1.b_2")
        #expect(address.endpoint == RedisEndpoint(host: "10.0.0.5", port: 6380))
        #expect(address.run == "storm-1.b_2")
        #expect(try FleetAddress(parsing: "redis://redis/r").endpoint.port == 6379)
        for (text, words) in [
            ("redis://host", "no run name"), ("redis://host/", "must be 1 to 64"),
            ("http://host/r", "expected redis://"),
            ("redis://host/a b", "must be 1 to 64"), ("redis://host:0/r", "port"),
            ("redis://host/" + String(repeating: "x", count: 65), "must be 1 to 64"),
        ] {
            #expect(throws: FleetError.self, "\(text)") { try FleetAddress(parsing: text) }
            do {
                _ = try FleetAddress(parsing: text)
            } catch {
                #expect(error.description.contains(words), "\(text): \(error)")
            }
        }
    }

    @Test func generatorsGatherAndAgreeOnOneInstantWhateverTheirClocks() async throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let address = FleetAddress(endpoint: redis.endpoint, run: "gather")
        // Three generators; the second's clock is an hour ahead, the third's ten seconds behind.
        let skews: [Duration] = [.zero, .seconds(3_600), .seconds(-10)]
        var members: [FleetCoordinator] = []
        for (index, skew) in skews.enumerated() {
            members.append(try await FleetCoordinator.join(address, index: index, count: 3, flags: "f", skew: skew))
        }
        let before = ContinuousClock.now
        let starts = try await withThrowingTaskGroup(of: (Int, ContinuousClock.Instant, Int64, Int64).self) { group in
            for (index, member) in members.enumerated() {
                group.addTask {
                    let agreed = try await member.agreeOnStart(timeout: .seconds(20), lead: .milliseconds(500))
                    return (index, agreed.start, agreed.agreedMicros, agreed.roundTripMicros)
                }
            }
            var starts: [Int: (start: ContinuousClock.Instant, agreed: Int64, roundTrip: Int64)] = [:]
            for try await (index, start, micros, roundTrip) in group { starts[index] = (start, micros, roundTrip) }
            return starts
        }
        // One instant in Redis's clock. On this machine's one clock, each mapping is off by at most half its round
        // trip (a loaded machine may stretch those, never break the bound), whatever the skews.
        #expect(Set(starts.values.map(\.agreed)).count == 1)
        for first in starts.values {
            for second in starts.values {
                let bound = Duration.microseconds((first.roundTrip + second.roundTrip) / 2 + 100)
                #expect(abs((first.start - second.start) / .microseconds(1)) <= Double(bound / .microseconds(1)))
            }
        }
        #expect(starts.values.map(\.start).min()! > before, "the start is ahead, by the lead")
        // The check after the start places it back where it was agreed, within the two measurements' half trips.
        let check = try await members[1].redisMicros(of: starts[1]!.start)
        #expect(abs(check.micros - starts[1]!.agreed) <= (starts[1]!.roundTrip + check.roundTripMicros) / 2 + 100)
        for member in members { await member.close() }
    }

    @Test func aSliceTakenOtherFlagsAndARunStartedAreRefusedByName() async throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let address = FleetAddress(endpoint: redis.endpoint, run: "refusals")
        let first = try await FleetCoordinator.join(address, index: 0, count: 2, flags: "--clients 10")
        await #expect(throws: FleetError.self) {
            try await FleetCoordinator.join(address, index: 0, count: 2, flags: "--clients 10")
        }
        do {
            _ = try await FleetCoordinator.join(address, index: 1, count: 2, flags: "--clients 20")
            Issue.record("other flags were let in")
        } catch {
            #expect(error.description.contains("'--clients 20'") && error.description.contains("'--clients 10'"))
        }
        do {
            _ = try await FleetCoordinator.join(address, index: 1, count: 3, flags: "--clients 10")
            Issue.record("another fleet size was let in")
        } catch {
            #expect(error.description.contains("is of 2"))
        }
        // The second waits in vain: the wait names the missing generator.
        do {
            _ = try await first.agreeOnStart(timeout: .milliseconds(300))
            Issue.record("a fleet of one of two started")
        } catch {
            #expect(error.description.contains("generator 1 never registered"), "\(error)")
        }
        let second = try await FleetCoordinator.join(address, index: 1, count: 2, flags: "--clients 10")
        _ = try await second.agreeOnStart(timeout: .seconds(5))
        do {
            _ = try await FleetCoordinator.join(address, index: 1, count: 2, flags: "--clients 10")
            Issue.record("a started run was joined")
        } catch {
            #expect(error.description.contains("started already"))
        }
        // What report merge reads: both members, and what each pushed.
        let pushed = ContinuousClock.now
        #expect(await first.pushLive(Data("{\"live\": 0}".utf8)))
        #expect(await second.pushReport(Data("{\"report\": 1}".utf8)) == nil)
        let state = try await FleetState.read(address)
        let read = ContinuousClock.now - pushed
        #expect(state.count == 2 && state.members.keys.sorted() == [0, 1])
        #expect(state.live[0] == Data("{\"live\": 0}".utf8))
        // A push says "alive" for five real seconds. A starved machine can take longer than that from the push to the
        // read (seen beside six CPU hogs): then the lease may have lapsed, never sooner.
        #expect(!state.alive.contains(1), "the second never pushed live figures")
        #expect(state.alive == [0] || read >= .seconds(5), "alive \(state.alive) \(read) after the push")
        #expect(state.reports[1] == Data("{\"report\": 1}".utf8) && state.reports[0] == nil)
        await first.close()
        await second.close()
    }

    @Test func redisAwayIsSaidAtOnceAndLostMidRunOnce() async throws {
        let redis = try RedisServer()
        let address = FleetAddress(endpoint: redis.endpoint, run: "lost")
        let member = try await FleetCoordinator.join(address, index: 0, count: 1, flags: "")
        #expect(await member.pushLive(Data("{}".utf8)))
        redis.stop()
        // The first push that finds Redis gone says so (false), the next ones do not repeat it.
        #expect(await member.pushLive(Data("{}".utf8)) == false)
        #expect(await member.pushLive(Data("{}".utf8)) == true)
        #expect(await member.pushReport(Data("{}".utf8)) != nil)
        await member.close()
        let nowhere = FleetAddress(endpoint: RedisEndpoint(host: "127.0.0.1", port: redis.port), run: "x")
        do {
            _ = try await FleetCoordinator.join(nowhere, index: 0, count: 1, flags: "")
            Issue.record("joined a Redis that is not there")
        } catch {
            #expect(error.description.contains("cannot reach Redis at"))
            #expect(error.description.contains("refused"), "\(error)")
        }
    }
}
