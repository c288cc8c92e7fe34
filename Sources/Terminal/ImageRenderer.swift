/// Draws an image in the terminal: Unicode upper half blocks, each cell two pixels tall, the
/// top pixel as foreground and the bottom as background, in 24-bit or 256 colours; or an
/// ASCII luminance ramp when there is no colour or `--ascii` is on.
package struct ImageRenderer: Sendable {
    package let depth: ColorDepth
    package let ascii: Bool

    package init(depth: ColorDepth, ascii: Bool) {
        self.depth = depth
        self.ascii = ascii
    }

    package init(_ capabilities: Capabilities) {
        self.init(depth: capabilities.color, ascii: capabilities.ascii)
    }

    static let ramp = Array(" .:-=+*#%@")

    /// One character cell of a rendered image: its SGR parameters (empty for none) and glyph.
    package struct Cell: Equatable, Sendable {
        package var codes: String
        package var glyph: Character
        package init(codes: String, glyph: Character) {
            self.codes = codes
            self.glyph = glyph
        }
    }

    /// The image `columns` wide (never wider than the image itself would need), keeping its
    /// aspect ratio: a cell is about twice as tall as wide, hence two pixels a cell.
    /// With `rows`, the image is also made narrow enough to be at most that many rows tall.
    package func render(_ image: RGBAImage, columns: Int, rows: Int? = nil) -> [String] {
        cells(image, columns: columns, rows: rows).map(Self.line)
    }

    /// The cells of `render`, for callers that draw over the image (a stamp, a frame).
    package func cells(_ image: RGBAImage, columns: Int, rows: Int? = nil) -> [[Cell]] {
        var width = max(1, min(columns, image.width))
        if let rows {
            // Two pixel rows a text row: the width that keeps the height within `rows`.
            let fitting = Int(Double(max(1, rows) * 2) * Double(image.width) / Double(image.height))
            width = max(1, min(width, fitting))
        }
        var heightPixels = max(1, Int((Double(image.height) * Double(width) / Double(image.width)).rounded()))
        // A strip too tall even one column wide is squeezed rather than drawn past the window.
        if let rows { heightPixels = min(heightPixels, max(1, rows) * 2) }
        let scaled = image.scaled(width: width, height: heightPixels)
        return (0..<(heightPixels + 1) / 2).map { row in
            (0..<width).map { x in
                let top = scaled[x, 2 * row]
                let bottom = 2 * row + 1 < heightPixels ? scaled[x, 2 * row + 1] : RGBAImage.Pixel(0, 0, 0)
                let shade = Self.ramp[Self.rampIndex(top, bottom)]
                if depth == .none { return Cell(codes: "", glyph: shade) }
                // Colour without Unicode: the ramp character, coloured.
                if ascii { return Cell(codes: foreground(Self.average(top, bottom)), glyph: shade) }
                return Cell(codes: foreground(top) + ";" + background(bottom), glyph: "▀")
            }
        }
    }

    /// A row of cells as text, repeating an escape sequence only when the colours change.
    package static func line(_ cells: [Cell]) -> String {
        var line = ""
        var last = ""
        for cell in cells {
            if cell.codes != last {
                line += cell.codes.isEmpty ? Style.reset : "\u{1B}[0;" + cell.codes + "m"
                last = cell.codes
            }
            line.append(cell.glyph)
        }
        if !last.isEmpty { line += Style.reset }
        return line
    }

    func foreground(_ p: RGBAImage.Pixel) -> String {
        depth == .trueColor ? "38;2;\(p.r);\(p.g);\(p.b)" : "38;5;\(Self.xterm256(p))"
    }

    func background(_ p: RGBAImage.Pixel) -> String {
        depth == .trueColor ? "48;2;\(p.r);\(p.g);\(p.b)" : "48;5;\(Self.xterm256(p))"
    }

    static func average(_ a: RGBAImage.Pixel, _ b: RGBAImage.Pixel) -> RGBAImage.Pixel {
        RGBAImage.Pixel(UInt8((Int(a.r) + Int(b.r)) / 2), UInt8((Int(a.g) + Int(b.g)) / 2), UInt8((Int(a.b) + Int(b.b)) / 2))
    }

    static func rampIndex(_ a: RGBAImage.Pixel, _ b: RGBAImage.Pixel) -> Int {
        let p = average(a, b)
        let luminance = (2126 * Int(p.r) + 7152 * Int(p.g) + 722 * Int(p.b)) / 10_000  // 0...255
        return min(ramp.count - 1, luminance * ramp.count / 256)
    }

    /// The nearest colour of xterm's 256-colour palette: the 6x6x6 cube or the grey ramp.
    static func xterm256(_ p: RGBAImage.Pixel) -> Int {
        let levels = [0, 95, 135, 175, 215, 255]
        func nearestLevel(_ v: UInt8) -> Int {
            var best = 0
            for i in 1..<levels.count where abs(levels[i] - Int(v)) < abs(levels[best] - Int(v)) { best = i }
            return best
        }
        let (r, g, b) = (nearestLevel(p.r), nearestLevel(p.g), nearestLevel(p.b))
        let cube = 16 + 36 * r + 6 * g + b
        let cubeError = sq(levels[r] - Int(p.r)) + sq(levels[g] - Int(p.g)) + sq(levels[b] - Int(p.b))
        let grey = (Int(p.r) + Int(p.g) + Int(p.b)) / 3
        let greyIndex = max(0, min(23, (grey - 8 + 5) / 10))
        let greyLevel = 8 + 10 * greyIndex
        let greyError = sq(greyLevel - Int(p.r)) + sq(greyLevel - Int(p.g)) + sq(greyLevel - Int(p.b))
        return greyError < cubeError ? 232 + greyIndex : cube
    }

    private static func sq(_ v: Int) -> Int { v * v }

}

extension RGBAImage {
    /// Scales with an area average when shrinking (no aliasing) and nearest neighbour when
    /// growing (keeps pixel art crisp). Transparent pixels are laid over black.
    package func scaled(width: Int, height: Int) -> RGBAImage {
        let image = self
        var out = [UInt8](repeating: 0, count: width * height * 4)
        let sx = Double(image.width) / Double(width), sy = Double(image.height) / Double(height)
        for y in 0..<height {
            let y0 = Int(Double(y) * sy), y1 = max(y0 + 1, min(image.height, Int((Double(y + 1) * sy).rounded(.up))))
            for x in 0..<width {
                let x0 = Int(Double(x) * sx), x1 = max(x0 + 1, min(image.width, Int((Double(x + 1) * sx).rounded(.up))))
                var r = 0, g = 0, b = 0, n = 0
                for yy in y0..<min(y1, image.height) {
                    var i = (yy * image.width + x0) * 4
                    for _ in x0..<min(x1, image.width) {
                        let a = Int(image.pixels[i + 3])
                        r += Int(image.pixels[i]) * a / 255
                        g += Int(image.pixels[i + 1]) * a / 255
                        b += Int(image.pixels[i + 2]) * a / 255
                        n += 1
                        i += 4
                    }
                }
                let o = (y * width + x) * 4
                out[o] = UInt8(r / max(n, 1)); out[o + 1] = UInt8(g / max(n, 1)); out[o + 2] = UInt8(b / max(n, 1)); out[o + 3] = 255
            }
        }
        return RGBAImage(width: width, height: height, pixels: out)
    }
}
