import Glibc
import Terminal

/// A command named in advice ("open ben", "transfers"), written so that, typed where the user is
/// when it is shown, it does what the advice says: `/open ben` in a conversation or a room
/// (where a plain line is a message), `chat open ben` where `open` alone would be another
/// mode's or ambiguous. The command is marked in the text (`command`) and spelled by the shell
/// as the line is printed (`Console.placeAdvice`), since a notice may be printed in another
/// place than the one it was made in.
///
/// The marks are control characters, which nothing from the network keeps: `SafeText` shows
/// every control as an escape, so a peer cannot make advice of its own.
package enum Advice {
    static let start: Unicode.Scalar = "\u{2}", end: Unicode.Scalar = "\u{3}", modeSeparator: Unicode.Scalar = "\u{1F}"

    /// `words` (a command and its arguments) marked as advice; `mode`: the mode whose command it
    /// is, when it is not one of every place's.
    package static func command(_ words: String, mode: String? = nil) -> String {
        String(start) + (mode.map { $0 + String(modeSeparator) } ?? "") + words + String(end)
    }

    /// `text` with each command marked in it spelled by `spell(words, mode)`. Found by their
    /// bytes, in place (every message's notice has one: it is on the path of each message shown).
    static func spelled(_ text: String, _ spell: (String, String?) -> String) -> String {
        var contiguous = text
        return contiguous.withUTF8 { bytes -> String? in
            let (open, close, separator) = (UInt8(start.value), UInt8(end.value), UInt8(modeSeparator.value))
            // memchr: most lines have no advice, and every row of every message is asked.
            guard let base = bytes.baseAddress, memchr(base, Int32(open), bytes.count) != nil else { return nil }
            // Made as bytes, then a `String` once (`LineBuilder`).
            var out = LineBuilder(capacity: bytes.count + 16)
            var at = 0
            while let opening = bytes[at...].firstIndex(of: open) {
                out.append(bytes: UnsafeBufferPointer(rebasing: bytes[at..<opening]))
                at = opening + 1
                // Never closed: the words as they are.
                guard let closing = bytes[at...].firstIndex(of: close) else { break }
                let marked = bytes[at..<closing]
                if let split = marked.firstIndex(of: separator) {
                    out.append(spell(String(decoding: bytes[(split + 1)..<closing], as: UTF8.self), String(decoding: bytes[at..<split], as: UTF8.self)))
                } else {
                    out.append(spell(String(decoding: marked, as: UTF8.self), nil))
                }
                at = closing + 1
            }
            out.append(bytes: UnsafeBufferPointer(rebasing: bytes[at...]))
            return out.line
        } ?? text
    }

    /// `text` with its commands as they are typed at the top level (a script's errors).
    package static func plain(_ text: String) -> String { spelled(text) { words, _ in words } }

    /// How `words`, a command of `mode` (nil: of every place), is typed in `currentMode` to do
    /// what it does there: after `/` where a line is a message; after its mode's name where the
    /// name alone is this place's other command or several modes'.
    static func spelled(_ words: String, mode: String?, in currentMode: String?, registry: CommandRegistry, takesMessages: Bool) -> String {
        let name = String(words.prefix { $0 != " " })
        var line = words
        if let mode, mode != currentMode, registry.mode(named: name) == nil {
            let here = registry.command(named: name, inMode: currentMode)
            if let here, here.scope != registry.command(named: name, inMode: mode)?.scope {
                line = mode + " " + words
            } else if here == nil, registry.modesOwning(name).count != 1 {
                line = mode + " " + words
            }
        }
        return (takesMessages ? "/" : "") + line
    }
}
