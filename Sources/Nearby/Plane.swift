/// Where the battery level puts you: the lower it is, the closer to the dead.
package enum Plane: String, CaseIterable, Sendable {
    case human, dying, hollow, undead, ghost

    /// The plane of a battery `level` in percent: above 50 Human, 26–50 Dying, 11–25 Hollow,
    /// 6–10 Undead, 5 and below Ghost. Charging back above 50 makes you Human again.
    package init(batteryLevel level: Int) {
        switch level {
        case 51...: self = .human
        case 26...50: self = .dying
        case 11...25: self = .hollow
        case 6...10: self = .undead
        default: self = .ghost
        }
    }

    package var name: String { rawValue.prefix(1).uppercased() + rawValue.dropFirst() }

    /// Whether someone on this plane can see and write to someone on `other`. One-way: a
    /// Hollow reaches a Dying, who cannot reach the Hollow back.
    ///
    ///             Human Dying Hollow Undead Ghost
    ///     Human     ✓     ✕     ✕      ✕      ✕
    ///     Dying     ✕     ✓     ✕      ✕      ✕
    ///     Hollow    ✕     ✓     ✓      ✕      ✕
    ///     Undead    ✕     ✓     ✓      ✓      ✓
    ///     Ghost     ✓     ✓     ✓      ✓      ✓
    package func canReach(_ other: Plane) -> Bool {
        switch self {
        case .human: return other == .human
        case .dying: return other == .dying
        case .hollow: return other == .dying || other == .hollow
        case .undead: return other != .human
        case .ghost: return true
        }
    }
}

extension Plane {
    /// The index used on the wire: 0 Human … 4 Ghost.
    package var wireValue: UInt8 { UInt8(Plane.allCases.firstIndex(of: self)!) }

    package init?(wireValue: UInt8) {
        guard Int(wireValue) < Plane.allCases.count else { return nil }
        self = Plane.allCases[Int(wireValue)]
    }
}
