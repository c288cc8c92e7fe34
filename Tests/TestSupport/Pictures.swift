/// Pictures made for tests without an encoder: PNGs of zeros as large as asked yet small on
/// disk, the picture bombs of issue 49 (a 7,000 × 7,000 16-bit RGBA PNG is 2.4 MB; 4,096 ×
/// 2,048, 64 MiB decoded, 0.4 MB).
package enum TestPictures {
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
