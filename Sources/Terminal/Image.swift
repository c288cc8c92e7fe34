import CStbImage
import Glibc

/// An image decoded to 8-bit RGBA, row by row from the top.
package struct RGBAImage: Equatable, Sendable {
    package let width: Int
    package let height: Int
    package let pixels: [UInt8]

    package init(width: Int, height: Int, pixels: [UInt8]) {
        precondition(pixels.count == width * height * 4)
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    package struct Pixel: Equatable, Sendable {
        package var r, g, b, a: UInt8
        package init(_ r: UInt8, _ g: UInt8, _ b: UInt8, _ a: UInt8 = 255) {
            self.r = r; self.g = g; self.b = b; self.a = a
        }
    }

    package subscript(x: Int, y: Int) -> Pixel {
        let i = (y * width + x) * 4
        return Pixel(pixels[i], pixels[i + 1], pixels[i + 2], pixels[i + 3])
    }
}

extension RGBAImage {
    /// The image turned and mirrored as EXIF's `orientation` asks (1 to 8; anything else is
    /// left as it is): 6 is a quarter turn clockwise, 8 one anticlockwise, 3 a half turn, and
    /// 2, 4, 5 and 7 mirror them.
    package func turned(_ orientation: Int) -> RGBAImage {
        guard (2...8).contains(orientation) else { return self }
        let sideways = orientation >= 5
        let (outWidth, outHeight) = sideways ? (height, width) : (width, height)
        var out = [UInt8](repeating: 0, count: pixels.count)
        // A pixel is four bytes: moved as one 32-bit word.
        pixels.withUnsafeBytes { source in
            out.withUnsafeMutableBytes { target in
                for y in 0..<outHeight {
                    for x in 0..<outWidth {
                        // Where the pixel drawn at (x, y) is stored.
                        let (sx, sy): (Int, Int)
                        switch orientation {
                        case 2: (sx, sy) = (width - 1 - x, y)
                        case 3: (sx, sy) = (width - 1 - x, height - 1 - y)
                        case 4: (sx, sy) = (x, height - 1 - y)
                        case 5: (sx, sy) = (y, x)
                        case 6: (sx, sy) = (y, height - 1 - x)
                        case 7: (sx, sy) = (width - 1 - y, height - 1 - x)
                        default: (sx, sy) = (width - 1 - y, x)
                        }
                        let pixel = source.loadUnaligned(fromByteOffset: (sy * width + sx) * 4, as: UInt32.self)
                        target.storeBytes(of: pixel, toByteOffset: (y * outWidth + x) * 4, as: UInt32.self)
                    }
                }
            }
        }
        return RGBAImage(width: outWidth, height: outHeight, pixels: out)
    }
}

package enum ImageError: Error, Equatable, CustomStringConvertible {
    case unreadable(path: String, reason: String)
    case notAnImage(reason: String)
    case tooLarge(width: Int, height: Int)
    case empty(width: Int, height: Int)

    /// The most a picture may be on each side (a 1x16,000,000 strip is small in area but not to
    /// draw), and the most its decoding may take, counting the source's bytes a pixel (a 16-bit
    /// channel is two): over either, it is never decoded. A picture as large as a phone's camera
    /// takes fits (4,032 × 3,024 is 47 MiB).
    package static let maximumSide = 4_096
    package static let maximumDecodedBytes = 64 << 20

    package var description: String {
        switch self {
        case .unreadable(let path, let reason): return "cannot read \(path): \(reason)"
        case .notAnImage(let reason): return "not a PNG, JPEG, GIF or BMP image (\(reason))"
        case .tooLarge(let width, let height) where max(width, height) > ImageError.maximumSide:
            return "the image is \(width)x\(height); at most \(ImageError.maximumSide) pixels a side are accepted"
        case .tooLarge(let width, let height):
            return "the image is \(width)x\(height), over the \(ImageError.maximumDecodedBytes >> 20) MiB a picture may take decoded"
        case .empty(let width, let height):
            return "the image is \(width)x\(height): it has no pixels"
        }
    }
}

/// PNG, JPEG, GIF (first frame) and BMP through stb_image.
package enum ImageDecoder {
    /// Decodes `bytes`, refusing anything that is not a whole image of an accepted format or is
    /// over the budget (checked from the header, before any pixel is decoded), and stands it
    /// upright as its EXIF orientation says.
    package static func decode(_ bytes: [UInt8]) throws(ImageError) -> RGBAImage {
        guard !bytes.isEmpty else { throw .notAnImage(reason: "the file is empty") }
        guard bytes.count < Int(Int32.max) else { throw .notAnImage(reason: "the file is too large") }
        let header = try check(bytes)
        var width: Int32 = 0, height: Int32 = 0, channels: Int32 = 0
        let known = bytes.withUnsafeBufferPointer {
            stbi_info_from_memory($0.baseAddress, Int32($0.count), &width, &height, &channels)
        }
        guard known == 1 else { throw .notAnImage(reason: failureReason()) }
        guard Int(width) * Int(height) * 4 <= ImageError.maximumDecodedBytes,
              max(width, height) <= ImageError.maximumSide else {
            throw .tooLarge(width: Int(width), height: Int(height))
        }
        // No buffer of an honest image is larger than its pixels at 16 bits and 4 channels (plus
        // a filter byte a row, and the file itself): anything more is refused, not allocated.
        seance_stbi_set_allocation_limit(Int(width) * Int(height) * 8 + Int(height) + bytes.count + (1 << 20))
        defer { seance_stbi_set_allocation_limit(0) }
        let decoded = bytes.withUnsafeBufferPointer {
            seance_stbi_load_from_memory($0.baseAddress, Int32($0.count), &width, &height, &channels, 4)
        }
        guard let decoded else { throw .notAnImage(reason: failureReason()) }
        defer { stbi_image_free(decoded) }
        let count = Int(width) * Int(height) * 4
        return RGBAImage(width: Int(width), height: Int(height),
                         pixels: Array(UnsafeBufferPointer(start: decoded, count: count))).turned(header.orientation)
    }

    /// The limits, checked on the header alone: the format is one of the four, and the size is
    /// neither empty nor over the budget. The header read.
    @discardableResult
    package static func check(_ bytes: [UInt8]) throws(ImageError) -> ImageHeader {
        guard let header = ImageHeader.parse(bytes) else {
            throw .notAnImage(reason: ImageHeader.format(of: bytes) == nil ? "unknown format" : "truncated or damaged")
        }
        guard header.width > 0, header.height > 0 else { throw .empty(width: header.width, height: header.height) }
        guard header.width <= ImageError.maximumSide, header.height <= ImageError.maximumSide,
              header.decodedBytes <= ImageError.maximumDecodedBytes else {
            throw .tooLarge(width: header.width, height: header.height)
        }
        return header
    }

    private static func failureReason() -> String {
        guard let reason = stbi_failure_reason() else { return "unknown format" }
        let text = String(cString: reason)
        if text.isEmpty { return "truncated or damaged" }
        // stb's reasons are terse; the common ones read better spelled out.
        switch text {
        case "unknown image type": return "unknown format"
        case "bad png sig", "not BMP", "not GIF", "no SOI": return "unknown format"
        case "outofdata", "bad huffman code", "bad zlib header", "EOF", "premature end of data", "no IDAT", "corrupt", "outofmem",
             "bad IHDR len", "first not IHDR", "too large":
            return "truncated or damaged"
        default: return text
        }
    }

    /// Reads an image file's bytes.
    package static func readFile(_ path: String) throws(ImageError) -> [UInt8] {
        do { return try FileContents.read(path) } catch { throw .unreadable(path: error.path, reason: error.reason) }
    }
}
