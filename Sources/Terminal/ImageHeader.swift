/// An image's format and size read from its first bytes, before any decoder sees it: limits are
/// checked on this, so a file that claims to be enormous is refused with its real dimensions
/// (not "unknown format"), and stb_image only ever decodes what passed.
package struct ImageHeader: Equatable, Sendable {
    package enum Format: String, Sendable { case png = "PNG", jpeg = "JPEG", gif = "GIF", bmp = "BMP" }

    package var format: Format
    package var width: Int
    package var height: Int
    /// The source's bytes a pixel: a 16-bit RGBA PNG's are 8, a grey one's 1, every other
    /// format's 4 at most (decoded, each is 4).
    package var bytesPerPixel = 4
    /// How the pixels are to be turned to stand upright (EXIF's orientation, 1 to 8; 1 as
    /// stored): a phone writes its photos as the sensor saw them and says so here.
    package var orientation = 1

    package init(format: Format, width: Int, height: Int, bytesPerPixel: Int = 4, orientation: Int = 1) {
        self.format = format
        self.width = width
        self.height = height
        self.bytesPerPixel = bytesPerPixel
        self.orientation = orientation
    }

    /// What decoding it takes at least: its pixels at the larger of the source's size and the
    /// decoded RGBA's (`ImageError.maximumDecodedBytes` bounds it).
    package var decodedBytes: Int { width * height * max(4, bytesPerPixel) }

    /// The format `bytes` start like, from the signature alone.
    package static func format(of bytes: [UInt8]) -> Format? {
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return .png }
        if bytes.starts(with: Array("GIF8".utf8)) { return .gif }
        if bytes.starts(with: Array("BM".utf8)) { return .bmp }
        if bytes.starts(with: [0xFF, 0xD8]) { return .jpeg }
        return nil
    }

    /// The header of `bytes`, or nil when they do not start like one of the four formats (or are
    /// cut off before the size).
    package static func parse(_ bytes: [UInt8]) -> ImageHeader? {
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
            // The first chunk must be IHDR: width and height, big-endian, then the bit depth
            // and the colour type (grey, RGB, palette, grey and alpha, RGBA).
            guard bytes.count >= 26, Array(bytes[12..<16]) == Array("IHDR".utf8) else { return nil }
            let channels = [0: 1, 2: 3, 3: 1, 4: 2, 6: 4][Int(bytes[25])] ?? 4
            return ImageHeader(format: .png, width: bigEndian(bytes, 16, 4), height: bigEndian(bytes, 20, 4),
                               bytesPerPixel: channels * (bytes[24] == 16 ? 2 : 1))
        }
        if bytes.starts(with: Array("GIF87a".utf8)) || bytes.starts(with: Array("GIF89a".utf8)) {
            guard bytes.count >= 10 else { return nil }
            return ImageHeader(format: .gif, width: littleEndian(bytes, 6, 2), height: littleEndian(bytes, 8, 2))
        }
        if bytes.starts(with: Array("BM".utf8)) {
            guard bytes.count >= 26 else { return nil }
            if littleEndian(bytes, 14, 4) == 12 {  // The old OS/2 header: 16-bit sizes.
                return ImageHeader(format: .bmp, width: littleEndian(bytes, 18, 2), height: littleEndian(bytes, 20, 2))
            }
            // Signed 32-bit: a negative height means rows stored top-down.
            let width = Int(Int32(truncatingIfNeeded: littleEndian(bytes, 18, 4)))
            let height = Int(Int32(truncatingIfNeeded: littleEndian(bytes, 22, 4)))
            return ImageHeader(format: .bmp, width: abs(width), height: abs(height))
        }
        if bytes.starts(with: [0xFF, 0xD8]) { return jpeg(bytes) }
        return nil
    }

    /// Walks the JPEG's marker segments to the first start-of-frame, which holds the size (a
    /// camera's EXIF and colour profile come first, often tens of kilobytes), noting the EXIF
    /// orientation on the way.
    private static func jpeg(_ bytes: [UInt8]) -> ImageHeader? {
        var index = 2
        var orientation = 1
        while index + 1 < bytes.count {
            guard bytes[index] == 0xFF else { return nil }
            let marker = bytes[index + 1]
            index += 2
            switch marker {
            case 0xFF: index -= 1  // Fill byte: the marker follows.
            case 0x01, 0xD0...0xD7: continue  // No length.
            case 0xC0...0xCF where marker != 0xC4 && marker != 0xC8 && marker != 0xCC:
                guard index + 7 <= bytes.count else { return nil }
                return ImageHeader(format: .jpeg, width: bigEndian(bytes, index + 5, 2), height: bigEndian(bytes, index + 3, 2),
                                   orientation: orientation)
            case 0xD9, 0xDA: return nil  // End of image, or scan data, before any frame.
            default:
                guard index + 2 <= bytes.count else { return nil }
                let length = bigEndian(bytes, index, 2)
                guard length >= 2 else { return nil }
                if marker == 0xE1, index + length <= bytes.count {
                    orientation = exifOrientation(bytes[(index + 2)..<(index + length)]) ?? orientation
                }
                index += length
            }
        }
        return nil
    }

    /// The orientation (tag 0x0112) in an APP1 segment's EXIF: a TIFF header, in either byte
    /// order, and its first directory of 12-byte entries. Nil when it is not there or not 1...8.
    static func exifOrientation(_ segment: ArraySlice<UInt8>) -> Int? {
        let exif = Array(segment)
        guard exif.starts(with: Array("Exif".utf8) + [0, 0]), exif.count >= 14 else { return nil }
        let tiff = 6
        let little: Bool
        switch (exif[tiff], exif[tiff + 1]) {
        case (0x49, 0x49): little = true  // "II"
        case (0x4D, 0x4D): little = false  // "MM"
        default: return nil
        }
        func number(_ at: Int, _ count: Int) -> Int? {
            guard at >= 0, at + count <= exif.count else { return nil }
            return little ? littleEndian(exif, at, count) : bigEndian(exif, at, count)
        }
        guard number(tiff + 2, 2) == 42, let first = number(tiff + 4, 4), let entries = number(tiff + first, 2) else { return nil }
        for entry in 0..<min(entries, 1_000) {
            let at = tiff + first + 2 + entry * 12
            guard let tag = number(at, 2) else { return nil }
            // A SHORT (type 3), one of it, held in the entry's value field.
            guard tag == 0x0112 else { continue }
            guard number(at + 2, 2) == 3, let value = number(at + 8, 2), (1...8).contains(value) else { return nil }
            return value
        }
        return nil
    }

    private static func bigEndian(_ bytes: [UInt8], _ at: Int, _ count: Int) -> Int {
        bytes[at..<(at + count)].reduce(0) { $0 << 8 | Int($1) }
    }

    private static func littleEndian(_ bytes: [UInt8], _ at: Int, _ count: Int) -> Int {
        bytes[at..<(at + count)].reversed().reduce(0) { $0 << 8 | Int($1) }
    }
}
