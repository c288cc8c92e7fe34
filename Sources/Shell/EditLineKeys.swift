import CEditLine
import Glibc
import Terminal

/// Keys a mode binds to commands (the zombies' arrows), and the callbacks libedit calls for them.
extension EditLineReader {
    // MARK: Keys that run commands

    package func setKeyCommands(_ commands: [SpecialKey: String]) {
        keyCommands = commands
        for key in SpecialKey.allCases {
            let function = commands[key] == nil ? key.editingFunction : key.functionName
            for sequence in key.sequences { seance_el_bind(editLine, sequence, function) }
        }
    }

    func keyPressed(_ key: SpecialKey) -> UInt8 {
        guard let command = keyCommands[key] else { return UInt8(CC_ERROR) }
        guard buffer.isEmpty else {
            // Half-typed text: left and right still move the cursor; up and down do nothing.
            switch key {
            case .left: return el_cursor(editLine, -1) >= 0 ? UInt8(CC_CURSOR) : UInt8(CC_ERROR)
            case .right: return el_cursor(editLine, 1) >= 0 ? UInt8(CC_CURSOR) : UInt8(CC_ERROR)
            case .up, .down: return UInt8(CC_REFRESH_BEEP)
            }
        }
        // Typed for the user, Enter included, so the screen shows what ran.
        lineFromKey = command
        el_push(editLine, command + "\n")
        return UInt8(CC_NORM)
    }
}

extension SpecialKey {
    var functionName: String { "seance-key-\(self)" }

    /// The escape sequences terminals send, in normal and application cursor mode.
    var sequences: [String] {
        let letter: String
        switch self {
        case .up: letter = "A"
        case .down: letter = "B"
        case .right: letter = "C"
        case .left: letter = "D"
        }
        return ["\u{1B}[" + letter, "\u{1B}O" + letter]
    }

    /// What the key does when no mode claims it.
    var editingFunction: String {
        switch self {
        case .up: return "ed-prev-history"
        case .down: return "ed-next-history"
        case .right: return "ed-next-char"
        case .left: return "ed-prev-char"
        }
    }

    var callback: seance_command_fn {
        switch self {
        case .up: return { el, _ in keyCallback(el, .up) }
        case .down: return { el, _ in keyCallback(el, .down) }
        case .left: return { el, _ in keyCallback(el, .left) }
        case .right: return { el, _ in keyCallback(el, .right) }
        }
    }
}

func keyCallback(_ el: OpaquePointer?, _ key: SpecialKey) -> UInt8 {
    guard let el, let data = seance_el_get_clientdata(el) else { return UInt8(CC_ERROR) }
    return Unmanaged<EditLineReader>.fromOpaque(data).takeUnretainedValue().keyPressed(key)
}

