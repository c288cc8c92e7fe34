import Foundation
import Terminal
import Shell

/// The store's text: the catalogue, the inventory, receipts as a table.
package struct StoreView: Sendable {
    package let styler: Styler
    package let ascii: Bool
    /// The window's width: a receipts table too wide for it leaves its times out.
    package let columns: Int

    package init(styler: Styler, ascii: Bool, columns: Int = 80) {
        self.styler = styler
        self.ascii = ascii
        self.columns = columns
    }

    /// Name, price and what it does in aligned columns, what it does wrapped under itself to fit
    /// the window; the glyph last, where a terminal that draws it a column narrower or wider
    /// moves nothing after it.
    package func catalogue() -> [String] {
        let nameWidth = (Item.allCases.map { $0.name.count }.max() ?? 0) + 2
        let priceWidth = Item.allCases.map { dollars($0.priceCents).count }.max() ?? 0
        let indent = 2 + nameWidth + priceWidth + 3
        // Room for the words, with two columns and the glyph's two after them.
        let room = max(16, columns - indent - 4)
        return [styler.bold("The store") + " — prices are recorded, not charged"] + Item.allCases.flatMap { item in
            var lines = DisplayWidth.wrap(item.summary, width: room)
            lines[lines.count - 1] += "  " + item.glyph(ascii: ascii)
            let price = dollars(item.priceCents)
            let first: String = "  " + DisplayWidth.pad(item.name, to: nameWidth) + styler.apply(.green + .bold, price)
                + String(repeating: " ", count: priceWidth - price.count + 3) + lines[0]
            let rest: [String] = lines.dropFirst().map { String(repeating: " ", count: indent) + $0 }
            return [first] + rest
        } + DisplayWidth.wrap("buy candle|medallion [N] — you are asked your password to confirm", width: max(16, columns))
    }

    package func inventory(_ counts: [Item: Int], worn: Medallion?, now: Double) -> [String] {
        var lines = Item.allCases.map { item in
            "  " + DisplayWidth.pad(item.plural, to: 20) + String(counts[item] ?? 0)
        }
        if let worn {
            let minutes = Int((worn.secondsLeft(at: now) / 60).rounded(.up))
            lines.append("  a Saint's medallion is worn: it breaks in \(minutes) min (at \(Self.clock(worn.breaksAt)))")
        }
        return lines
    }

    /// The receipts (newest first) and the total spent; with `rows`, only the newest that fit a
    /// window that high, and a line saying how many older ones `receipts all` adds.
    package func receipts(_ receipts: [Receipt], rows windowRows: Int? = nil) -> [String] {
        guard !receipts.isEmpty else { return ["no purchases yet: " + Advice.command("buy candle", mode: "store") + " or " + Advice.command("buy medallion", mode: "store")] }
        // 62 columns with the time of each; 44 without, which `receipt ID` still shows.
        let withTime = columns >= 62
        let header = styler.bold(["ID      ", withTime ? "TIME            " : nil, "ITEM               ", "QTY", "   TOTAL"]
            .compactMap { $0 }.joined(separator: "  "))
        // Heading, total and prompt around them; the line about older ones when some are left out.
        var shown = receipts[...]
        if let windowRows, receipts.count + 3 > windowRows { shown = receipts.prefix(max(1, windowRows - 4)) }
        let older = receipts.count - shown.count
        let rows = shown.map { receipt in
            [String(receipt.id.prefix(8)), withTime ? Self.clock(Double(receipt.timeMilliseconds) / 1000) : nil,
             DisplayWidth.pad(Item(rawValue: receipt.item)?.name ?? SafeText.visible(receipt.item), to: 19),
             String(format: "%3d", receipt.quantity), String(repeating: " ", count: max(0, 8 - dollars(receipt.totalCents).count))
                + dollars(receipt.totalCents)].compactMap { $0 }.joined(separator: "  ")
        }
        return [header] + rows + (older > 0 ? [styler.dim("… \(older) older: receipts all")] : [])
            + ["total spent: " + styler.bold(dollars(receipts.reduce(0) { $0 + $1.totalCents }))]
    }

    package func receipt(_ receipt: Receipt, owner: String, problem: String?) -> [String] {
        let item = Item(rawValue: receipt.item)
        return ["receipt " + receipt.id,
                "  item        " + (item?.name ?? SafeText.visible(receipt.item)),
                "  quantity    \(receipt.quantity)",
                "  unit price  " + dollars(receipt.unitCents),
                "  total       " + dollars(receipt.totalCents),
                "  time        " + Self.clock(Double(receipt.timeMilliseconds) / 1000),
                "  profile     " + owner + " (key " + receipt.profileKey.prefix(8).map { String(format: "%02x", $0) }.joined() + "…)",
                "  signature   " + (problem.map { styler.apply(.red + .bold, "INVALID") + " (\($0))" } ?? styler.apply(.green, "valid"))]
    }

    /// A time as `2026-11-23 05:30` in the local zone.
    static func clock(_ time: Double) -> String {
        var seconds = time_t(time)
        var parts = tm()
        localtime_r(&seconds, &parts)
        return String(format: "%04d-%02d-%02d %02d:%02d", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min)
    }
}
