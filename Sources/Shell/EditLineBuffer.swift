import CEditLine

/// The line libedit is editing: read, and replaced whole (a history search shows what it found).
struct EditLineBuffer {
    let editLine: OpaquePointer

    var text: String { text(toCursor: false) }
    var beforeCursor: String { text(toCursor: true) }

    var isEmpty: Bool {
        guard let info = el_line(editLine)?.pointee else { return true }
        return info.buffer == info.lastchar
    }

    /// Puts `line` in place of what is typed, the cursor `cursor` characters (Unicode scalars,
    /// as libedit counts them) from its start.
    func replace(with line: String, cursor: Int) {
        el_cursor(editLine, Int32(text.unicodeScalars.count - beforeCursor.unicodeScalars.count))
        el_deletestr(editLine, Int32(text.unicodeScalars.count))
        if !line.isEmpty { el_insertstr(editLine, line) }
        el_cursor(editLine, Int32(cursor - line.unicodeScalars.count))
    }

    private func text(toCursor: Bool) -> String {
        guard let info = el_line(editLine)?.pointee, let start = info.buffer,
              let end = toCursor ? info.cursor : info.lastchar else { return "" }
        let count = end - start
        return start.withMemoryRebound(to: UInt8.self, capacity: count) {
            String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self)
        }
    }
}
