import ChatViews
import Foundation
import Terminal

/// How transfers look: a picture as a small bubble drawn in half blocks, another file as a
/// bubble with its name, type and size, a progress bar under either while it moves, and the
/// list `transfers` prints. Names come from peers: every one is shown through `SafeText`.
package struct TransferView: Sendable {
    let capabilities: Capabilities
    let columns: Int
    private var styler: Styler { Styler(capabilities) }
    /// A picture bubble is this many rows of picture high at most, and `thumbnailColumns` wide.
    static let thumbnailRows = 6
    static let thumbnailColumns = 24
    static let barWidth = 20

    package init(capabilities: Capabilities, columns: Int) {
        self.capabilities = capabilities
        self.columns = max(20, columns)
    }

    /// 812 B, 320 KiB, 5.0 MiB, 2.3 GiB.
    package static func size(_ bytes: Int) -> String {
        if bytes < 1_024 { return "\(bytes) B" }
        if bytes < 1 << 20 { return "\((bytes + 512) / 1_024) KiB" }
        if bytes < 1 << 30 { return String(format: "%.1f MiB", Double(bytes) / Double(1 << 20)) }
        return String(format: "%.1f GiB", Double(bytes) / Double(1 << 30))
    }

    /// What a file is, from its name's extension: "PNG picture", "PDF file", "file".
    static func kind(of transfer: Transfer) -> String {
        let name = transfer.name
        let dot = name.lastIndex(of: ".").map { name.index(after: $0) }
        let suffix = dot.map { String(name[$0...]).uppercased() }.flatMap { $0.count <= 5 && !$0.isEmpty && $0.allSatisfy(\.isLetter) || $0.allSatisfy(\.isNumber) ? $0 : nil }
        let noun = transfer.picture ? "picture" : "file"
        return suffix.map { "\($0) \(noun)" } ?? noun
    }

    /// A name from a peer as it is shown: inert, and cut to fit a bubble.
    static func shownName(_ name: String, width: Int = 40) -> String {
        DisplayWidth.truncate(SafeText.visible(name), to: width)
    }

    /// The bubble of a transfer: the picture (when given, decoded) in half blocks with its name
    /// and size under it, or the file's name, kind and size; on the right for ours, on the left
    /// for theirs (a conversation's header names its one other).
    package func bubble(_ transfer: Transfer, picture: RGBAImage?) -> [String] {
        var body: [String] = []
        if let picture {
            let renderer = ImageRenderer(capabilities)
            body = renderer.render(picture, columns: min(Self.thumbnailColumns, columns - 8), rows: Self.thumbnailRows)
        }
        // A picture shows itself; a file gets a page (an emoji every terminal draws two wide).
        let glyph = capabilities.ascii || transfer.picture ? "" : "📄 "
        let caption = glyph + Self.shownName(transfer.name, width: max(8, min(40, columns - 20)))
        let details = Self.kind(of: transfer) + " · " + Self.size(transfer.size)
        body += [caption, styler.dim(details)]
        let width = body.map { $0.strippingANSI.displayWidth }.max() ?? 0
        return ConversationView(capabilities: capabilities, columns: columns)
            .framed(body, width: width, outgoing: transfer.outgoing, sender: nil, colouredText: false)
    }

    /// The row under a transfer's bubble, as wide as the window (written over in place while
    /// it moves): its number, then a bar with how much of it has come, the rate and the time
    /// left (or, `waitingFor` someone gone away, neither: nothing moves); or how it ended.
    package func progressRow(_ transfer: Transfer, stored: Int, rate: Double?, waitingFor: String? = nil) -> String {
        let label = "\(transfer.picture ? "picture" : "file") \(transfer.number)"
        let status: String
        switch transfer.state {
        case .moving, .offered, .storing:
            let done = min(transfer.size, stored * transfer.chunkSize)
            let fraction = Double(done) / Double(max(1, transfer.size))
            let filled = Int(fraction * Double(Self.barWidth))
            let bar = capabilities.ascii ? "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: Self.barWidth - filled) + "]"
                : String(repeating: "█", count: filled) + String(repeating: "░", count: Self.barWidth - filled)
            var parts = ["\(Self.size(done)) of \(Self.size(transfer.size))"]
            if let waitingFor {
                parts.append("waiting for " + waitingFor)
            } else if let rate, rate > 0 {
                parts.append(Self.size(Int(rate)) + "/s")
                parts.append(Self.duration(Double(transfer.size - done) / rate) + " left")
            } else if transfer.state == .offered {
                parts.append(transfer.mailedAt == nil ? "offered" : "with the broker")
            }
            status = bar + " " + parts.joined(separator: " · ")
        case .asking:
            status = transfer.outgoing ? "waits for them to accept" : "/accept \(transfer.number) or /decline \(transfer.number)"
        case .complete:
            status = transfer.outgoing ? "delivered" : "received"
        case .declined, .cancelled, .failed:
            status = transfer.state.rawValue + (transfer.reason.map { ": " + SafeText.visible($0) } ?? "")
        }
        let text = styler.dim(label) + " " + styler.dim(status)
        let width = text.strippingANSI.displayWidth
        guard width < columns else { return DisplayWidth.truncate(text.strippingANSI, to: columns) }
        // Right under ours, left under theirs; the full width, so that writing a new state over
        // the row leaves nothing of the old.
        let padding = String(repeating: " ", count: columns - width)
        return transfer.outgoing ? padding + text : text + padding
    }

    /// The row under a bubble of theirs: its number, as a message's `#N` (what `/open` and `/save` take).
    package func numberRow(_ transfer: Transfer) -> String {
        styler.dim("\(transfer.picture ? "picture" : "file") \(transfer.number)")
    }

    /// 4 s, 2 min 5 s.
    static func duration(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded(.up))
        return whole < 60 ? "\(whole) s" : "\(whole / 60) min \(whole % 60) s"
    }

    /// One line of `transfers`.
    package func listLine(_ transfer: Transfer, stored: Int) -> String {
        listLines([(transfer, stored)])[0]
    }

    /// `transfers`: a row each, in columns (number, who, name, kind, size, state).
    package func listLines(_ transfers: [(Transfer, stored: Int)]) -> [String] {
        let cells = transfers.map { transfer, stored -> [String] in
            let done = min(transfer.size, stored * transfer.chunkSize)
            let progress = transfer.state == .moving ? " \(done * 100 / max(1, transfer.size)) %" : ""
            return ["\(transfer.number)", (transfer.outgoing ? "to " : "from ") + SafeText.visible(transfer.peerName),
                    Self.shownName(transfer.name, width: 32), Self.kind(of: transfer), Self.size(transfer.size),
                    transfer.state.rawValue + progress + (transfer.state == .offered && transfer.mailedAt != nil ? " (with the broker)" : "")]
        }
        let widths = (0..<6).map { column in cells.map { $0[column].displayWidth }.max() ?? 0 }
        return cells.map { row in
            // The number and the size to the right; the last column as it is.
            let number = String(repeating: " ", count: widths[0] - row[0].displayWidth) + row[0]
            let size = String(repeating: " ", count: widths[4] - row[4].displayWidth) + row[4]
            return [number, DisplayWidth.pad(row[1], to: widths[1]), DisplayWidth.pad(row[2], to: widths[2]),
                    DisplayWidth.pad(row[3], to: widths[3]), size, row[5]].joined(separator: "  ")
        }
    }
}
