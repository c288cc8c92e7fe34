import Foundation
import ChatViews
import LAN
import MQTT
import Nearby
import Shell
import Storage
import Terminal

/// Where and how chat goes online, resolved from the flags, `seance.conf` and the defaults.
package struct NetworkConfiguration: Sendable, Equatable {
    package var lan = LANTransport.Configuration()
    /// False with `--no-lan`: the broker only.
    package var lanEnabled = true
    package var broker: BrokerAddress?
    package var brokerCA: String?
    package var brokerPrefix = MQTTTransport.Configuration.defaultPrefix
    package var timing = PresenceTiming()
    /// How long a script's end waits for what it sent to be acknowledged.
    package var linger = 2.0
    /// How conversations are drawn.
    package var conversationLayout = ConversationLayout.bubbles
    /// How what arrives for the user is told at a terminal: the bell, a desktop notification too, or nothing.
    package var notify = Attention.Mode.bell
    /// A desktop notification carries the message's text too.
    package var notifyText = false

    package init() {}

    /// The broker's transport settings, when there is a broker.
    package var mqtt: MQTTTransport.Configuration? {
        broker.map { MQTTTransport.Configuration(address: $0, caFile: brokerCA, prefix: brokerPrefix) }
    }
}

/// Raw setting values from one source (the flags, or the config file), by key; a repeatable
/// setting keeps every value given. Nothing here is checked yet: `Settings.resolve` does that,
/// the same way for both sources.
package struct SettingValues: Sendable, Equatable {
    package private(set) var values: [String: [String]] = [:]

    package init(_ pairs: [(key: String, value: String)] = []) {
        for (key, value) in pairs { values[key, default: []].append(value) }
    }

    package subscript(key: String) -> [String]? {
        get { values[key] }
        set { values[key] = newValue }
    }
}

package struct SettingsError: Error, Equatable, CustomStringConvertible {
    package let description: String
    /// A flag's value was wrong (a usage error), not the file's.
    package var fromFlag = false
}

/// One setting, declared once: its flag (`--KEY`) and `seance.conf` key, what it means, its
/// default, and how a value is read and checked.
package struct Setting: Sendable {
    package let key: String
    /// What the value is, in help: `address`, `seconds`, …
    package let valueName: String
    /// Help text, ending with the default when there is one.
    package let help: String
    /// Given once per value as a flag, comma-separated in the file.
    package let repeatable: Bool
    /// Reads and checks the values given, into the configuration; throws a `SettingsError`.
    let apply: @Sendable (inout NetworkConfiguration, [String]) throws -> Void
}

extension Setting {
    func check(_ configuration: inout NetworkConfiguration, _ values: [String]) throws(SettingsError) {
        do { try apply(&configuration, values) } catch let error as SettingsError { throw error } catch {
            throw SettingsError(description: "\(key): \(error)")
        }
    }
}

package enum Settings {
    private static let defaults = NetworkConfiguration()

    /// Every chat setting, in the order help lists them.
    package static let all: [Setting] = [
        Setting(key: "group", valueName: "address",
                help: "Multicast group chat mode announces on (default \(defaults.lan.group)).", repeatable: false) { config, values in
            let group = values.last!
            let octets = group.split(separator: ".", omittingEmptySubsequences: false).map { UInt8($0) }
            guard octets.count == 4, octets.allSatisfy({ $0 != nil }), (224...239).contains(octets[0]!) else {
                throw SettingsError(description: "group must be an IPv4 multicast address (224.0.0.0 to 239.255.255.255), not '\(group)'")
            }
            config.lan.group = group
        },
        Setting(key: "port", valueName: "port",
                help: "UDP port of the multicast group (default \(defaults.lan.port)).", repeatable: false) { config, values in
            guard let port = Int(values.last!) else { throw SettingsError(description: "port must be a number, not '\(values.last!)'") }
            guard (1...65_535).contains(port) else { throw SettingsError(description: "port must be from 1 to 65535, not \(port)") }
            config.lan.port = port
        },
        Setting(key: "interface", valueName: "name",
                help: "Announce on this interface only (repeatable; default: every up, multicast-capable one).",
                repeatable: true) { config, values in
            let names = values.filter { !$0.isEmpty }
            config.lan.interfaces = names.isEmpty ? nil : names
        },
        Setting(key: "announce-interval", valueName: "seconds",
                help: "Seconds between presence refreshes (default \(defaults.timing.interval.formatted)).",
                repeatable: false) { config, values in
            guard let seconds = Double(values.last!) else {
                throw SettingsError(description: "announce-interval must be a number, not '\(values.last!)'")
            }
            guard (0.05...3_600).contains(seconds) else {
                throw SettingsError(description: "announce-interval must be from 0.05 to 3600 seconds, not \(seconds)")
            }
            config.timing = PresenceTiming(interval: seconds, startupGap: min(1, seconds))
        },
        Setting(key: "broker", valueName: "url",
                help: "Chat through this MQTT broker too: mqtt://[user[:password]@]host[:port] or mqtts://… (TLS).",
                repeatable: false) { config, values in
            do { config.broker = try BrokerAddress(parsing: values.last!) } catch { throw SettingsError(description: "broker: \(error)") }
        },
        Setting(key: "broker-ca", valueName: "file",
                help: "CA certificates (PEM) to check an mqtts:// broker with (default: the system's).", repeatable: false) { config, values in
            guard !values.last!.isEmpty else { throw SettingsError(description: "broker-ca needs a file name") }
            config.brokerCA = values.last!
        },
        Setting(key: "broker-prefix", valueName: "prefix",
                help: "Topic prefix on the broker (default \(defaults.brokerPrefix)).", repeatable: false) { config, values in
            var prefix = values.last!
            guard !prefix.isEmpty, prefix.utf8.count <= 200,
                  !prefix.unicodeScalars.contains(where: { $0 == "+" || $0 == "#" || $0.value < 0x20 || $0.value == 0x7F }) else {
                throw SettingsError(description: "broker-prefix must be a topic prefix without '+', '#' or control characters, not '\(prefix)'")
            }
            if !prefix.hasSuffix("/") { prefix += "/" }
            config.brokerPrefix = prefix
        },
        Setting(key: "linger", valueName: "seconds",
                help: "At the end of a script's input, wait up to this long for what it sent to be acknowledged, "
                    + "then say what waits (default \(defaults.linger.formatted)).", repeatable: false) { config, values in
            guard let seconds = Double(values.last!), seconds.isFinite else {
                throw SettingsError(description: "linger must be a number of seconds, not '\(values.last!)'")
            }
            guard (0...600).contains(seconds) else { throw SettingsError(description: "linger must be from 0 to 600 seconds, not \(seconds)") }
            config.linger = seconds
        },
        Setting(key: "conversation", valueName: "bubbles|compact",
                help: "How conversations are drawn: bubbles, or compact, a line a message (default bubbles).",
                repeatable: false) { config, values in
            guard let layout = ConversationLayout(rawValue: values.last!.lowercased()) else {
                throw SettingsError(description: "conversation must be bubbles or compact, not '\(values.last!)'")
            }
            config.conversationLayout = layout
        },
        Setting(key: "notify", valueName: "bell|desktop|off",
                help: "When something arrives for you while you look elsewhere, at a terminal: ring the bell (once a burst), "
                    + "also send a desktop notification through the terminal (OSC 777 and 9), or nothing (default bell).",
                repeatable: false) { config, values in
            guard let mode = Attention.Mode(rawValue: values.last!.lowercased()) else {
                throw SettingsError(description: "notify must be bell, desktop or off, not '\(values.last!)'")
            }
            config.notify = mode
        },
        Setting(key: "notify-text", valueName: "yes|no",
                help: "Desktop notifications show the message's text, not only who wrote (default no).",
                repeatable: false) { config, values in
            config.notifyText = try yesOrNo(values.last!, key: "notify-text")
        },
        Setting(key: "no-lan", valueName: "yes|no",
                help: "Chat through the broker only, not on the local network.", repeatable: false) { config, values in
            config.lanEnabled = try !yesOrNo(values.last!, key: "no-lan")
        },
    ]

    /// A yes-or-no setting's value; given with no value (a flag), yes.
    private static func yesOrNo(_ value: String, key: String) throws(SettingsError) -> Bool {
        switch value.lowercased() {
        case "", "yes", "true", "on", "1": return true
        case "no", "false", "off", "0": return false
        default: throw SettingsError(description: "\(key) must be yes or no, not '\(value)'")
        }
    }

    package static func named(_ key: String) -> Setting? { all.first { $0.key == key } }

    /// The flags over the file over the defaults, each value checked by its setting.
    package static func resolve(flags: SettingValues, file: SettingValues) throws(SettingsError) -> NetworkConfiguration {
        var configuration = NetworkConfiguration()
        for setting in all {
            if let values = flags[setting.key], !values.isEmpty {
                // Messages start with the key: as a flag, it is named as one (`--port must …`).
                do { try setting.check(&configuration, values) } catch {
                    throw SettingsError(description: "--" + error.description, fromFlag: true)
                }
            } else if let values = file[setting.key], !values.isEmpty {
                try setting.check(&configuration, values)
            }
        }
        // What only makes sense together.
        if configuration.brokerCA != nil, configuration.broker?.tls != true {
            throw SettingsError(description: "broker-ca is for an mqtts:// broker")
        }
        if !configuration.lanEnabled, configuration.broker == nil {
            throw SettingsError(description: "no-lan needs a broker (--broker URL): otherwise chat has no network at all")
        }
        return configuration
    }
}

/// `seance.conf` in the data directory: `key = value` lines, `#` comments, the keys of
/// `Settings.all` (a repeatable one takes a comma-separated list). Flags win over the file.
enum ConfigFile {
    static func path(in directory: DataDirectory) -> String { directory.path + "/seance.conf" }

    /// `text` with `key = value`: its last line for `key` changed in place (comments and every
    /// other line kept), or the line added at the end.
    static func setting(_ key: String, to value: String, in text: String) -> String {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        let index = lines.lastIndex { line in
            let setting = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            return setting.split(separator: "=", maxSplits: 1).first?.trimmingWhitespace == key
        }
        if let index { lines[index] = "\(key) = \(value)" } else { lines.append("\(key) = \(value)") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Keeps `key = value` in the data directory's seance.conf (written whole, then renamed
    /// over the old one: a kill leaves one or the other).
    static func keep(_ key: String, _ value: String, in directory: String) throws {
        let path = directory + "/seance.conf"
        let old = (try? FileContents.text(path)) ?? ""
        let temporary = path + ".new"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(setting(key, to: value, in: old).utf8),
                                             attributes: [.posixPermissions: 0o600]),
              rename(temporary, path) == 0 else {
            throw UserError("cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }

    static func parse(_ text: String, path: String) throws(SettingsError) -> SettingValues {
        var values = SettingValues()
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            guard !line.allSatisfy(\.isWhitespace) else { continue }
            let where_ = "\(path):\(index + 1)"
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingWhitespace }
            guard parts.count == 2, !parts[0].isEmpty else { throw SettingsError(description: "\(where_): expected 'key = value'") }
            let (key, value) = (parts[0], parts[1])
            guard let setting = Settings.named(key) else {
                let keys = Settings.all.map(\.key).joined(separator: ", ")
                throw SettingsError(description: "\(where_): unknown setting '\(key)' (\(keys))")
            }
            let given = setting.repeatable ? value.split(separator: ",").map { $0.trimmingWhitespace }.filter { !$0.isEmpty } : [value]
            values[key] = given
            // Checked here too, so a bad value is reported with its line.
            do {
                var scratch = NetworkConfiguration()
                try setting.check(&scratch, given.isEmpty ? [""] : given)
            } catch {
                throw SettingsError(description: "\(where_): \(error.description)")
            }
        }
        return values
    }
}

extension StringProtocol {
    fileprivate var trimmingWhitespace: String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}

extension Double {
    /// 5 as "5", 2.5 as "2.5".
    fileprivate var formatted: String { self == rounded() ? String(Int(self)) : String(self) }
}
