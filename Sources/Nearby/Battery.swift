import Foundation
import Glibc
import Synchronization

/// A battery reading: level in percent and whether it is charging.
package struct BatteryReading: Equatable, Sendable {
    package enum Source: Equatable, Sendable {
        /// Read from `/sys/class/power_supply`.
        case battery
        /// No battery found: mains power, treated as 100 %.
        case mains
        /// Set with `--battery` or `battery PCT`.
        case override
    }

    package var level: Int
    package var charging: Bool
    package var source: Source

    package init(level: Int, charging: Bool, source: Source) {
        self.level = level
        self.charging = charging
        self.source = source
    }

    package var plane: Plane { Plane(batteryLevel: level) }
}

/// Where readings come from: the kernel's power-supply class, or a value set by the user.
package protocol BatterySource: Sendable {
    func read() -> BatteryReading
}

/// Batteries under `/sys/class/power_supply` (a root can be given for tests). Several batteries
/// are averaged; a supply whose `type` is not `Battery` (mains adapters, USB) is ignored.
package struct SysfsBattery: BatterySource {
    package let root: String

    package init(root: String = "/sys/class/power_supply") { self.root = root }

    package func read() -> BatteryReading {
        var levels: [Int] = []
        var charging = false
        for supply in Self.entries(of: root) {
            let base = root + "/" + supply
            guard Self.contents(base + "/type") == "Battery", let text = Self.contents(base + "/capacity"),
                  let level = Int(text) else { continue }
            levels.append(max(0, min(100, level)))
            let status = Self.contents(base + "/status") ?? ""
            charging = charging || status == "Charging" || status == "Full"
        }
        guard !levels.isEmpty else { return BatteryReading(level: 100, charging: false, source: .mains) }
        return BatteryReading(level: levels.reduce(0, +) / levels.count, charging: charging, source: .battery)
    }

    static func entries(of directory: String) -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if !name.hasPrefix(".") { names.append(name) }
        }
        return names.sorted()
    }

    /// A small sysfs file's text, trimmed; nil when it cannot be read.
    static func contents(_ path: String) -> String? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = Glibc.read(fd, &buffer, buffer.count)
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// The battery as the shell sees it: the real reading, unless the user set a level. The
/// engine reads it on its poll while online; the shell sets the level.
package final class Battery: Sendable {
    private let source: BatterySource
    /// Set on the shell's thread, read on the engine's: the one value both share (-1: none).
    private let overrideLevel: Atomic<Int>

    package init(source: BatterySource = SysfsBattery(), override: Int? = nil) {
        self.source = source
        self.overrideLevel = Atomic(override ?? -1)
    }

    package var override: Int? {
        let level = overrideLevel.load(ordering: .acquiring)
        return level < 0 ? nil : level
    }

    package var reading: BatteryReading {
        if let override { return BatteryReading(level: override, charging: false, source: .override) }
        return source.read()
    }

    /// Sets a pretend level (0–100), or nil to return to the real reading (`Online` is told
    /// by the command that sets it).
    package func setOverride(_ level: Int?) throws(BatteryError) {
        if let level, !(0...100).contains(level) { throw .outOfRange(level) }
        overrideLevel.store(level ?? -1, ordering: .releasing)
    }
}

package enum BatteryError: Error, Equatable, CustomStringConvertible {
    case outOfRange(Int)
    case notALevel(String)

    package var description: String {
        switch self {
        case .outOfRange(let level): return "the battery level must be from 0 to 100, not \(level)"
        case .notALevel(let text): return "'\(text)' is not a battery level: give a percentage from 0 to 100, or 'auto'"
        }
    }
}
