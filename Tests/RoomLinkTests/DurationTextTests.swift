import RoomLink
import RoomLinkTestSupport
import Testing

/// The duration form of scenario files and flags: one number and a unit, or several from the largest unit down.
@Suite(.hangLimit(minutes: 10))
struct DurationTextTests {
    @Test(arguments: [
        ("0", Duration.zero), ("120ms", .milliseconds(120)), ("90s", .seconds(90)), ("20m", .seconds(1_200)),
        ("1.5h", .seconds(5_400)), ("250us", .microseconds(250)), ("250µs", .microseconds(250)),
        ("10ns", .nanoseconds(10)), (" 5s ", .seconds(5)),
        ("1m30s", .seconds(90)), ("1h15m", .seconds(4_500)), ("2s500ms", .milliseconds(2_500)),
        ("1h0m0.5s", .milliseconds(3_600_500)), ("1m0.25s", .milliseconds(60_250)),
        ("1s1ms1us1ns", .nanoseconds(1_001_001_001)),
    ])
    func aDurationIsReadInEveryDocumentedForm(_ text: String, _ expected: Duration) {
        #expect(Duration(roomLinkText: text) == expected)
    }

    /// Units out of order or repeated, a number without a unit, signs (a duration is never negative, so `+` says
    /// nothing either), exponents and hex forms, spaces inside and unknown units are refused.
    @Test(arguments: [
        "", "5", "s", "-5s", "+5s", "+0.5s", "1m+30s", "5 s", "30s1m", "1m1m", "1s1s", "1m-30s", "1m 30s", "1d",
        "1.2.3s", "1m30", "m30s", "1e400s", "1e3ms", "0x10s", ".s", "nan s", "infs",
    ])
    func aMalformedDurationIsRefused(_ text: String) {
        #expect(Duration(roomLinkText: text) == nil)
    }

    /// What `roomLinkText` writes reads back as itself.
    @Test func theWrittenFormReadsBack() {
        for duration in [
            Duration.seconds(90), .milliseconds(1_500), .seconds(3_600), .nanoseconds(7), .microseconds(3),
        ] {
            #expect(Duration(roomLinkText: duration.roomLinkText) == duration)
        }
    }
}
