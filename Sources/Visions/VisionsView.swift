import Terminal

/// Turns visions and rescuers into text. One view serves every vision, one every rescuer.
package struct VisionsView: Sendable {
    package let capabilities: Capabilities
    package let columns: Int
    /// The window's height: a large image is drawn no taller.
    package let rows: Int

    package init(capabilities: Capabilities, columns: Int, rows: Int = 24) {
        self.capabilities = capabilities
        self.columns = columns
        self.rows = rows
    }

    var styler: Styler { Styler(capabilities) }
    var renderer: ImageRenderer { ImageRenderer(capabilities) }

    /// Thumbnail rows beside text rows, for one list entry.
    func entry(_ thumbnail: [String], _ text: [String]) -> [String] {
        let width = VisionStore.thumbnailWidth
        return (0..<max(thumbnail.count, text.count)).map { i in
            let left = i < thumbnail.count ? thumbnail[i] : String(repeating: " ", count: width)
            return i < text.count ? left + "  " + text[i] : left
        }
    }

    func state(_ rescued: Bool) -> String {
        rescued ? styler.apply(.green, "Rescued") : styler.apply(.red + .bold, "Save Me")
    }

    /// Rows of a list entry whose thumbnail is `height` pixels high: two pixels a row, and the
    /// two lines of text beside it.
    package static func entryRows(thumbnailHeight height: Int) -> Int { max(2, (max(1, height) + 1) / 2) }

    /// The list cut into pages that each fit a window `rows` high with the heading, the "more"
    /// line and the prompt; one entry at least, however tall.
    package static func pages(entryRows: [Int], rows: Int) -> [Range<Int>] {
        let budget = max(1, rows - 3)
        var pages: [Range<Int>] = []
        var start = 0, used = 0
        for (index, height) in entryRows.enumerated() {
            if index > start && used + height > budget {
                pages.append(start..<index)
                start = index
                used = 0
            }
            used += height
        }
        if start < entryRows.count { pages.append(start..<entryRows.count) }
        return pages
    }

    package func visionList(_ visions: [VisionSummary], total: Int, page: Int, pageCount: Int) -> String {
        var lines = [styler.bold("Visions") + " — \(total) in all" + (pageCount > 1 ? ", page \(page) of \(pageCount)" : "")]
        if visions.isEmpty {
            lines.append(total == 0 ? "No visions yet. Add one: add NAME --image PATH" : "No visions on this page.")
        }
        for vision in visions {
            let thumbnail = renderer.render(vision.thumbnail, columns: VisionStore.thumbnailWidth)
            lines += entry(thumbnail, [styler.bold("#\(vision.id)") + "  " + SafeText.visible(vision.rescuerName), state(vision.rescued)])
        }
        if pageCount > 1 && page < pageCount { lines.append("… 'list \(page + 1)' shows more") }
        return lines.joined(separator: "\n")
    }

    package func rescuerList(_ rescuers: [Rescuer]) -> String {
        var lines = [styler.bold("Rescuers") + " — \(rescuers.count) in all"]
        var entries: [String] = []
        for rescuer in rescuers {
            let portrait = thumbnail(rescuer.portrait)
            entries += entry(portrait, [styler.bold(SafeText.visible(rescuer.name)), "rescues: \(rescuer.rescues)"])
        }
        // Portraits when they fit the window's height (with the heading and the prompt), one
        // line a rescuer otherwise, so the page never scrolls away.
        if entries.count + 2 <= rows {
            lines += entries
        } else {
            let width = min(24, (rescuers.map { SafeText.visible($0.name).displayWidth }.max() ?? 0) + 2)
            lines += rescuers.map { "  " + DisplayWidth.pad(styler.bold(SafeText.visible($0.name)), to: width) + "rescues: \($0.rescues)" }
            if rescuers.count + 3 <= rows { lines.append(styler.dim("open NAME shows a portrait")) }
        }
        return lines.joined(separator: "\n")
    }

    func thumbnail(_ bytes: [UInt8]?) -> [String] {
        guard let bytes, let image = try? ImageDecoder.decode(bytes) else {
            return [String(repeating: capabilities.ascii ? "?" : "░", count: VisionStore.thumbnailWidth)]
        }
        return renderer.render(image, columns: VisionStore.thumbnailWidth)
    }

    /// How wide a large image is drawn: most of the terminal, at most 64 columns.
    var largeWidth: Int { max(8, min(64, columns - 2)) }

    package func vision(_ vision: Vision, stamped: Bool = false) -> String {
        var lines: [String]
        do {
            let image = try ImageDecoder.decode(vision.image)
            // Room for the image and the three lines under it, in the window's height.
            var cells = renderer.cells(image, columns: largeWidth, rows: max(4, rows - 4))
            if stamped { stamp(&cells) }
            lines = cells.map(ImageRenderer.line)
        } catch {
            lines = ["(the stored image cannot be shown: \(error))"]
        }
        lines.append("")
        lines.append(styler.bold("Vision #\(vision.id)") + "  rescuer: " + SafeText.visible(vision.rescuerName) + "  " + state(vision.rescued))
        lines.append(vision.rescued ? styler.dim("[ Rescued ]") + "  (saved already)" : styler.bold("[ Save Me ]") + "  save NAME")
        return lines.joined(separator: "\n")
    }

    /// Writes "RESCUED" across the middle of the image, as a red stamp.
    func stamp(_ cells: inout [[ImageRenderer.Cell]]) {
        guard !cells.isEmpty else { return }
        let word = Array(" RESCUED ")
        let row = cells.count / 2
        let width = cells[row].count
        guard width >= word.count else { return }
        let start = (width - word.count) / 2
        let codes = capabilities.colorEnabled ? "1;97;41" : ""
        for (i, letter) in word.enumerated() { cells[row][start + i] = ImageRenderer.Cell(codes: codes, glyph: letter) }
    }

    package func rescuer(_ rescuer: Rescuer) -> String {
        var lines: [String] = []
        if let bytes = rescuer.portrait, let image = try? ImageDecoder.decode(bytes) {
            lines += renderer.render(image, columns: min(32, largeWidth), rows: max(4, rows - 6))
            lines.append("")
        }
        lines.append(styler.bold(SafeText.visible(rescuer.name)) + "  rescues: \(rescuer.rescues)")
        if !rescuer.description.isEmpty { lines += DisplayWidth.wrap(SafeText.visible(rescuer.description), width: min(72, max(20, columns - 2))) }
        return lines.joined(separator: "\n")
    }
}
