import Foundation

/// The text forms of `roomlink load`'s timing and retry flags, read into a ``LoadPlan`` (each fault reads its own:
/// ``LoadFault``). Every error names the form it expects and the field it read: by default the ``LoadPlan`` name
/// (`timing`), or what the caller passes as `field` (`roomlink` passes its flag, `--timing`).
extension LoadPlan {
    /// `NAME=DURATION`, e.g. `heartbeatInterval=5s` (a timing of the dialect; the scenario reader checks the name).
    public static func timing(_ text: String, field: String = "timing") throws(RoomLinkError) -> (String, Duration) {
        let flag = field
        let form = "NAME=DURATION, e.g. heartbeatInterval=5s"
        let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, !parts[0].isEmpty else { throw .invalidArgument(flag, form, got: text) }
        return (parts[0], try FaultSpec.duration(parts[1], field: flag, form: form))
    }

    /// A preset name (`liveKitJS`), a parameterised preset (`fullJitter:100ms:10s`), or a JSON retry object.
    public static func retryJSON(_ text: String, field: String = "retry") throws(RoomLinkError) -> String {
        let flag = field
        let names = (RetryPolicy.presets.keys.sorted() + RetryPolicy.parameterizedPresets.sorted())
        let form = "a preset (\(names.joined(separator: ", "))), NAME:BASE:CAP for the AWS ones, or a JSON object"
        if text.hasPrefix("{") { return text }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        if parts.count == 1, RetryPolicy.presets[parts[0]] != nil { return #"{ "preset": "\#(parts[0])" }"# }
        guard parts.count == 3, RetryPolicy.parameterizedPresets.contains(parts[0]) else {
            throw .invalidArgument(flag, form, got: text)
        }
        let base = try FaultSpec.duration(parts[1], field: flag, form: form)
        let cap = try FaultSpec.duration(parts[2], field: flag, form: form)
        return #"{ "preset": "\#(parts[0])", "base": "\#(base.roomLinkText)", "cap": "\#(cap.roomLinkText)" }"#
    }
}
