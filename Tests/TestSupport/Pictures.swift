import Foundation

/// Pictures made for tests without an encoder: PNGs of zeros as large as asked yet small on
/// disk, the picture bombs of issue 49 (a 7,000 × 7,000 16-bit RGBA PNG is 2.4 MB; 4,096 ×
/// 2,048, 64 MiB decoded, 0.4 MB), BMPs written by hand, and a JPEG laid out as a camera's.
package enum TestPictures {
    /// A 24-bit BMP (rows from the top).
    package static func bitmap(width: Int, height: Int, _ pixel: (Int, Int) -> (UInt8, UInt8, UInt8)) -> [UInt8] {
        let rowSize = (width * 3 + 3) / 4 * 4
        func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(v >> ($0 * 8) & 0xFF) } }
        func le16(_ v: Int) -> [UInt8] { (0..<2).map { UInt8(v >> ($0 * 8) & 0xFF) } }
        var bytes: [UInt8] = Array("BM".utf8) + le32(54 + rowSize * height) + le32(0) + le32(54)
        bytes += le32(40) + le32(width) + le32(height) + le16(1) + le16(24) + le32(0) + le32(rowSize * height)
        bytes += le32(2835) + le32(2835) + le32(0) + le32(0)
        for y in (0..<height).reversed() {
            var row: [UInt8] = []
            for x in 0..<width { let (r, g, b) = pixel(x, y); row += [b, g, r] }
            bytes += row + [UInt8](repeating: 0, count: rowSize - row.count)
        }
        return bytes
    }

    /// A 16 × 8 JPEG (stb_image_write's, quality 95), its left half red and its right half blue.
    package static let sideways = [UInt8](Data(base64Encoded: """
        /9j/4AAQSkZJRgABAQAAAQABAAD/2wCEAAIBAQEBAQIBAQECAgICAgQDAgICAgUEBAMEBgUGBgYFBgYGBwkIBgcJBwYGCAsI
        CQoKCgoKBggLDAsKDAkKCgoBAgICAgICBQMDBQoHBgcKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoK
        CgoKCgoKCgoKCv/AABEIAAgAEAMBEQACEQEDEQH/xAGiAAABBQEBAQEBAQAAAAAAAAAAAQIDBAUGBwgJCgsQAAIBAwMCBAMF
        BQQEAAABfQECAwAEEQUSITFBBhNRYQcicRQygZGhCCNCscEVUtHwJDNicoIJChYXGBkaJSYnKCkqNDU2Nzg5OkNERUZHSElK
        U1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6g4SFhoeIiYqSk5SVlpeYmZqio6Slpqeoqaqys7S1tre4ubrCw8TFxsfIycrS09TV
        1tfY2drh4uPk5ebn6Onq8fLz9PX29/j5+gEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoLEQACAQIEBAMEBwUEBAABAncA
        AQIDEQQFITEGEkFRB2FxEyIygQgUQpGhscEJIzNS8BVictEKFiQ04SXxFxgZGiYnKCkqNTY3ODk6Q0RFRkdISUpTVFVWV1hZ
        WmNkZWZnaGlqc3R1dnd4eXqCg4SFhoeIiYqSk5SVlpeYmZqio6Slpqeoqaqys7S1tre4ubrCw8TFxsfIycrS09TV1tfY2dri
        4+Tl5ufo6ery8/T19vf4+fr/2gAMAwEAAhEDEQA/APjCv5TP9/j5Cr/qqP8AmuP/2Q==
        """, options: .ignoreUnknownCharacters)!)

    /// `sideways` as a phone writes a photo: after its start, an EXIF segment saying how to turn
    /// it (`orientation`, in the byte order asked) and `profile` bytes of colour profile (APP2),
    /// so that its size comes only that far in.
    package static func cameraJPEG(orientation: Int, bigEndian: Bool = true, profile: Int = 60_000) -> [UInt8] {
        func number(_ value: Int, _ count: Int) -> [UInt8] {
            let bytes = (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
            return bigEndian ? bytes.reversed() : bytes
        }
        // A TIFF header, then one directory: a resolution entry to step over, the orientation.
        var tiff: [UInt8] = bigEndian ? Array("MM".utf8) : Array("II".utf8)
        tiff += number(42, 2) + number(8, 4) + number(2, 2)
        tiff += number(0x011A, 2) + number(5, 2) + number(1, 4) + number(38, 4)
        tiff += number(0x0112, 2) + number(3, 2) + number(1, 4) + number(orientation, 2) + [0, 0]
        tiff += number(0, 4) + number(72, 4) + number(1, 4)
        let exif = Array("Exif".utf8) + [0, 0] + tiff
        func segment(_ marker: UInt8, _ body: [UInt8]) -> [UInt8] {
            [0xFF, marker, UInt8((body.count + 2) >> 8), UInt8((body.count + 2) & 0xFF)] + body
        }
        var profileSegments: [UInt8] = []
        var left = profile
        while left > 0 {
            let size = min(left, 65_000)
            profileSegments += segment(0xE2, Array("ICC_PROFILE".utf8) + [0] + [UInt8](repeating: 0x5A, count: size))
            left -= size
        }
        return [0xFF, 0xD8] + segment(0xE1, exif) + profileSegments + sideways.dropFirst(2)
    }

    /// An 8 × 8 grey baseline JPEG with its quantisation table all ones, a DC table 0 of one
    /// code ("0" for 0), the AC table 0 given (`acTable`: the counts of codes of each length, then
    /// the symbols), its scan naming AC table `acTableNamed`, and `scan` as the entropy-coded data.
    package static func greyJPEG(acTable: (counts: [UInt8], symbols: [UInt8])?, acTableNamed: UInt8 = 0, scan: [UInt8]) -> [UInt8] {
        func segment(_ marker: UInt8, _ body: [UInt8]) -> [UInt8] {
            [0xFF, marker, UInt8((body.count + 2) >> 8), UInt8((body.count + 2) & 0xFF)] + body
        }
        var bytes: [UInt8] = [0xFF, 0xD8]
        bytes += segment(0xDB, [0] + [UInt8](repeating: 1, count: 64))
        bytes += segment(0xC0, [8, 0, 8, 0, 8, 1, 1, 0x11, 0])
        bytes += segment(0xC4, [0x00, 1] + [UInt8](repeating: 0, count: 15) + [0])
        if let acTable {
            bytes += segment(0xC4, [0x10] + acTable.counts + [UInt8](repeating: 0, count: 16 - acTable.counts.count) + acTable.symbols)
        }
        bytes += segment(0xDA, [1, 1, acTableNamed, 0, 63, 0])
        return bytes + scan + [0xFF, 0xD9]
    }

    /// A black (all zero) PNG, RGBA at 8 or 16 bits a channel.
    package static func zeros(width: Int, height: Int, sixteenBit: Bool = false) -> [UInt8] {
        let raw = height * (1 + width * (sixteenBit ? 8 : 4))
        var header: [UInt8] = []
        header += bigEndian(UInt32(width)) + bigEndian(UInt32(height))
        header += [sixteenBit ? 16 : 8, 6, 0, 0, 0]
        let adler = UInt32(raw % 65_521) << 16 | 1  // Of zeros alone: a stays 1, b counts them.
        let zlib = [0x78, 0x01] + deflateZeros(raw) + bigEndian(adler)
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", header) + chunk("IDAT", zlib) + chunk("IEND", [])
    }

    /// `count` zero bytes as one deflate block with the fixed codes: a literal 0, then copies of
    /// 258 bytes at distance 1 (13 bits each), then literals for what is left.
    static func deflateZeros(_ count: Int) -> [UInt8] {
        var bits = BitWriter()
        bits.put(1, count: 1)  // The last block,
        bits.put(1, count: 2)  // with the fixed codes.
        let literalZero = (code: UInt32(0x30), length: 8), copy258 = (code: UInt32(0xC5), length: 8)
        var left = count
        if left > 0 {
            bits.putCode(literalZero.code, length: literalZero.length)
            left -= 1
        }
        while left >= 258 {
            bits.putCode(copy258.code, length: copy258.length)
            bits.putCode(0, length: 5)  // Distance 1.
            left -= 258
        }
        for _ in 0..<left { bits.putCode(literalZero.code, length: literalZero.length) }
        bits.putCode(0, length: 7)  // The end of the block.
        return bits.bytes
    }

    struct BitWriter {
        var bytes: [UInt8] = []
        var used = 8

        /// A value's bits, least significant first (deflate's header fields).
        mutating func put(_ value: UInt32, count: Int) {
            for bit in 0..<count { append((value >> UInt32(bit)) & 1) }
        }

        /// A Huffman code, most significant bit first.
        mutating func putCode(_ code: UInt32, length: Int) {
            for bit in stride(from: length - 1, through: 0, by: -1) { append((code >> UInt32(bit)) & 1) }
        }

        private mutating func append(_ bit: UInt32) {
            if used == 8 {
                bytes.append(0)
                used = 0
            }
            bytes[bytes.count - 1] |= UInt8(bit) << UInt8(used)
            used += 1
        }
    }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        return bigEndian(UInt32(data.count)) + body + bigEndian(crc32(body))
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
}
