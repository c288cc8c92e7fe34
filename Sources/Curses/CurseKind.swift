/// What a Ghost can do to a Human (SPEC §4.1).
package enum CurseKind: String, CaseIterable, Sendable {
    /// The Human sees no one: nearby is empty, arrivals are not shown.
    case blind
    /// The Human sees everyone but cannot send.
    case silence
    /// What the Human sends turns into word-like gibberish.
    case possession
    /// The Human forgets every name: peers show as "a stranger".
    case amnesia
    /// What the Human sends arrives mirrored.
    case mirror

    /// Its number on the wire: 1 blind … 5 mirror.
    package var code: UInt8 { UInt8(Self.allCases.firstIndex(of: self)! + 1) }

    package init?(code: UInt8) {
        guard code >= 1, Int(code) <= Self.allCases.count else { return nil }
        self = Self.allCases[Int(code) - 1]
    }

    /// What it does, for help and notices.
    package var effect: String {
        switch self {
        case .blind: return "you see no one"
        case .silence: return "you cannot send"
        case .possession: return "what you send turns to gibberish"
        case .amnesia: return "you forget every name"
        case .mirror: return "what you send arrives mirrored"
        }
    }

    /// How long a curse may last, in minutes.
    package static let minutes = 1...60
}
