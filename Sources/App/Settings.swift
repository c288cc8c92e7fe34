import Nearby
import Storage

/// Nearby settings from one source (the flags, or the config file); nil means "not given".
public struct NearbySettings: Sendable, Equatable {
    public var group: String?
    public var port: Int?
    public var interfaces: [String]?
    public var announceInterval: Double?

    public init(group: String? = nil, port: Int? = nil, interfaces: [String]? = nil, announceInterval: Double? = nil) {
        self.group = group
        self.port = port
        self.interfaces = interfaces
        self.announceInterval = announceInterval
    }
}

public struct SettingsError: Error, Equatable, CustomStringConvertible {
    public let description: String
}

/// `seance.conf` in the data directory: `key = value` lines, `#` comments. Keys: group, port,
/// interface (comma-separated names), announce-interval (seconds). Flags win over the file.
enum ConfigFile {
    static func path(in directory: DataDirectory) -> String { directory.path + "/seance.conf" }

    static func parse(_ text: String, path: String) throws(SettingsError) -> NearbySettings {
        var settings = NearbySettings()
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            guard !line.allSatisfy(\.isWhitespace) else { continue }
            let where_ = "\(path):\(index + 1)"
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingWhitespace }
            guard parts.count == 2, !parts[0].isEmpty else { throw SettingsError(description: "\(where_): expected 'key = value'") }
            let (key, value) = (parts[0], parts[1])
            switch key {
            case "group": settings.group = value
            case "port":
                guard let port = Int(value) else { throw SettingsError(description: "\(where_): port must be a number") }
                settings.port = port
            case "interface":
                settings.interfaces = value.split(separator: ",").map { $0.trimmingWhitespace }.filter { !$0.isEmpty }
            case "announce-interval":
                guard let seconds = Double(value) else { throw SettingsError(description: "\(where_): announce-interval must be a number") }
                settings.announceInterval = seconds
            default:
                throw SettingsError(description: "\(where_): unknown setting '\(key)' (group, port, interface, announce-interval)")
            }
        }
        return settings
    }

    /// The flags over the file over the defaults, checked.
    static func resolve(flags: NearbySettings, file: NearbySettings) throws(SettingsError) -> NearbyConfiguration {
        let group = flags.group ?? file.group ?? NearbyConfiguration.defaultGroup
        let port = flags.port ?? file.port ?? NearbyConfiguration.defaultPort
        let interval = flags.announceInterval ?? file.announceInterval ?? 5
        let interfaces = flags.interfaces ?? file.interfaces
        let octets = group.split(separator: ".").compactMap { UInt8($0) }
        guard octets.count == 4, (224...239).contains(octets[0]) else {
            throw SettingsError(description: "group must be an IPv4 multicast address (224.0.0.0 to 239.255.255.255), not '\(group)'")
        }
        guard (1...65_535).contains(port) else { throw SettingsError(description: "port must be from 1 to 65535, not \(port)") }
        guard (0.05...3_600).contains(interval) else {
            throw SettingsError(description: "announce-interval must be from 0.05 to 3600 seconds, not \(interval)")
        }
        return NearbyConfiguration(group: group, port: port, interfaces: interfaces,
                                   timing: PresenceTiming(interval: interval, startupGap: min(1, interval)))
    }
}

extension StringProtocol {
    fileprivate var trimmingWhitespace: String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
