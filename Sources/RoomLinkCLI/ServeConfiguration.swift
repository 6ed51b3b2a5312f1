import ArgumentParser
import Foundation
import RoomLink

/// `roomlink serve --config FILE`: the file is the flags, written as JSON. Each key is a flag's name in camel case
/// (`maxOutput` for `--max-output`), found from the command's own declarations, so that a setting is written once —
/// as its flag — and the file can only name what the command line can. The file's flags go before the command line's,
/// which therefore override them (of a flag given twice, the last counts).
///
/// Two keys are structured: `timings`, an object of durations (each a `--timing NAME=DURATION`), and `auth`, a file's
/// path or an inline table (then handed over as the hidden `--auth-table JSON`).
enum ServeConfiguration {
    /// Inserts the configuration file a `serve` command line names (`--config FILE` or `--config=FILE`) as flags right
    /// after `serve`. Other command lines come back unchanged.
    ///
    /// - Throws: `RoomLinkError` naming the file's problem: not a JSON object, an unknown key, a value of the wrong
    ///   kind, or a value its flag refuses.
    static func expand(_ arguments: [String]) throws(RoomLinkError) -> [String] {
        guard arguments.first == "serve", let path = configPath(in: arguments) else { return arguments }
        let data = Data(try InputFile(path, as: "the serve configuration", limit: InputFile.configurationLimit).read())
        let flags = try Self.flags(from: data)
        // Each of the file's values is checked by its flag's own parser here, so that an error names the file.
        do {
            _ = try Serve.parse(flags)
        } catch {
            let message = Serve.message(for: error).replacingOccurrences(of: "Error: ", with: "")
            throw RoomLinkError(code: .invalidInput, message: "serve configuration: \(message)")
        }
        return ["serve"] + flags + arguments.dropFirst()
    }

    /// The path after `--config`, if the command line gives one.
    private static func configPath(in arguments: [String]) -> String? {
        for (index, argument) in arguments.enumerated() {
            if argument == "--config", index + 1 < arguments.count { return arguments[index + 1] }
            if argument.hasPrefix("--config=") { return String(argument.dropFirst("--config=".count)) }
        }
        return nil
    }

    /// The flags a configuration file stands for.
    static func flags(from data: Data) throws(RoomLinkError) -> [String] {
        guard let object = try? JSONSerialization.jsonObject(with: data), let settings = object as? [String: Any] else {
            throw RoomLinkError(code: .invalidInput, message: "serve configuration: expected a JSON object")
        }
        var flags: [String] = []
        for key in settings.keys.sorted() {
            guard let isFlag = keys[key] else {
                throw RoomLinkError(
                    code: .invalidInput,
                    message: "serve configuration: unknown key '\(key)'; known: "
                        + keys.keys.sorted().joined(separator: ", ")
                )
            }
            flags += try Self.flags(for: key, value: settings[key]!, isFlag: isFlag)
        }
        return flags
    }

    /// The keys a file may use, each a flag's name as declared (`true` for an on/off flag): every option and flag of
    /// `serve` and of its option group but `--config`, and `timings` for the repeated `--timing`.
    static let keys: [String: Bool] = {
        var names = declared(in: Serve()).merging(declared(in: ServerOptions())) { first, _ in first }
        for name in ["config", "authTable", "timing", "serverOptions"] { names[name] = nil }
        names["timings"] = false
        return names
    }()

    /// The options and flags a command declares (the property wrappers' storage is named after the property, with a
    /// leading underscore), each with whether it is an on/off flag.
    private static func declared(in arguments: some ParsableArguments) -> [String: Bool] {
        var names: [String: Bool] = [:]
        for child in Mirror(reflecting: arguments).children {
            guard let label = child.label, label.hasPrefix("_") else { continue }
            names[String(label.dropFirst())] = String(describing: type(of: child.value)).hasPrefix("Flag<")
        }
        return names
    }

    private static func flags(for key: String, value: Any, isFlag: Bool) throws(RoomLinkError) -> [String] {
        func expected(_ what: String) -> RoomLinkError {
            RoomLinkError(code: .invalidInput, field: key, message: "serve configuration: \(key): expected \(what)")
        }
        let flag = "--" + kebabCase(key)
        switch (key, value) {
        case ("timings", let timings as [String: Any]):
            var flags: [String] = []
            for name in timings.keys.sorted() {
                guard let text = timings[name] as? String else { throw expected("durations like \"5s\"") }
                flags += ["--timing", "\(name)=\(text)"]
            }
            return flags
        case ("timings", _):
            throw expected("an object of durations")
        case ("auth", let table as [String: Any]):
            guard let json = try? JSONSerialization.data(withJSONObject: table, options: [.sortedKeys]) else {
                throw expected("a table of users to tokens")
            }
            return ["--auth-table", String(decoding: json, as: UTF8.self)]
        case ("keys", let keys as [String: Any]):
            // LiveKit's `keys:` shape: {"API key": "secret", …}.
            var flags: [String] = []
            for key in keys.keys.sorted() {
                guard let secret = keys[key] as? String else { throw expected("an object of API keys to secrets") }
                flags += ["--keys", "\(key):\(secret)"]
            }
            return flags
        case (_, let on as Bool) where isFlag:
            return on ? [flag] : []
        case _ where isFlag:
            throw expected("true or false")
        case (_, let text as String):
            return [flag, text]
        case (_, let number as NSNumber):
            return [flag, number.stringValue]
        default:
            throw expected("a string or a number")
        }
    }

    /// A property's flag name, as the argument parser makes it: `maxRoomsPerConnection` → `max-rooms-per-connection`,
    /// `nodeID` → `node-id` (a run of capitals is one word).
    static func kebabCase(_ name: String) -> String {
        let characters = Array(name)
        var text = ""
        for (index, character) in characters.enumerated() {
            if character.isUppercase, index > 0 {
                let previous = characters[index - 1]
                let next = index + 1 < characters.count ? characters[index + 1] : nil
                if !previous.isUppercase || next?.isLowercase == true { text += "-" }
            }
            text += character.lowercased()
        }
        return text
    }
}
