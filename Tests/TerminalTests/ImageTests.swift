import Foundation
import TestSupport
import Testing
@testable import Terminal

@Suite struct ImageDecoderTests {
    let quad = TestPictures.bitmap(width: 2, height: 2) { x, y in [(255, 0, 0), (0, 255, 0), (0, 0, 255), (10, 20, 30)][y * 2 + x] }

    @Test func decodesKnownPixels() throws {
        let image = try ImageDecoder.decode(quad)
        #expect(image.width == 2 && image.height == 2)
        #expect(image[0, 0] == .init(255, 0, 0))
        #expect(image[1, 0] == .init(0, 255, 0))
        #expect(image[0, 1] == .init(0, 0, 255))
        #expect(image[1, 1] == .init(10, 20, 30))
    }

    @Test func refusesWhatIsNotAnImage() {
        #expect(throws: ImageError.notAnImage(reason: "the file is empty")) { try ImageDecoder.decode([]) }
        #expect(throws: ImageError.notAnImage(reason: "unknown format")) { try ImageDecoder.decode(Array("just text".utf8)) }
        #expect(throws: ImageError.self) { try ImageDecoder.decode(Array(quad.prefix(40))) }
    }

    @Test func refusesMoreThanFourThousandPixelsASide() {
        // A BMP header claiming 10000x6000 pixels: refused before any pixel is decoded.
        var header = TestPictures.bitmap(width: 1, height: 1) { _, _ in (0, 0, 0) }
        header.replaceSubrange(18..<22, with: [0x10, 0x27, 0, 0])  // width 10000
        header.replaceSubrange(22..<26, with: [0x70, 0x17, 0, 0])  // height 6000
        #expect(throws: ImageError.tooLarge(width: 10_000, height: 6_000)) { try ImageDecoder.decode(header) }
    }

    @Test func readsFilesAndNamesMissingOnes() {
        #expect(throws: ImageError.unreadable(path: "/nonexistent.png", reason: "No such file or directory")) {
            try ImageDecoder.readFile("/nonexistent.png")
        }
        #expect(throws: ImageError.unreadable(path: "/tmp", reason: "it is a directory, not a regular file")) { try ImageDecoder.readFile("/tmp") }
    }

    /// stb_image checks itself with assert(), and a file can break a check: a Huffman table whose
    /// 256th symbol has a code of 9 bits (255 of 8 bits before it) takes the decoder's slow path,
    /// which finds another symbol than the code's. That ended the process; it is a damaged file.
    @Test func aFileThatBreaksTheDecodersOwnCheckIsDamaged() throws {
        let table: (counts: [UInt8], symbols: [UInt8]) = ([0, 0, 0, 0, 0, 0, 0, 255, 1], [UInt8](repeating: 0, count: 256))
        // DC "0", then the AC code 111111110 (the 256th symbol's) read as 10 bits: 1111111100
        // finds symbol 254 (a code of 8 bits), 1111111101 symbol 255, the one it is.
        let broken = TestPictures.greyJPEG(acTable: table, scan: [0b0111_1111, 0b1001_1111])
        let sound = TestPictures.greyJPEG(acTable: table, scan: [0b0111_1111, 0b1011_1111])
        #expect(try ImageDecoder.decode(sound).width == 8, "the same file is otherwise whole")
        #expect(throws: ImageError.notAnImage(reason: "truncated or damaged")) { try ImageDecoder.decode(broken) }
    }

    /// A scan may name a Huffman table the file never defined, and stb 2.27 reads it all the same:
    /// it is all zeros (every block ends at once), not what an allocation left there before.
    @Test func aTableNeverDefinedIsZeros() throws {
        // DC "0"; then, were the table the chroma AC table, 01 (a coefficient of one bit), 1, 00.
        let undefined = TestPictures.greyJPEG(acTable: nil, acTableNamed: 0x01, scan: [0b0011_0011])
        // glibc's M_PERTURB fills what malloc returns (not calloc) with the complement of the
        // byte given: what an earlier allocation may have left there, made certain.
        typealias MallocOption = @convention(c) (Int32, Int32) -> Int32
        let mallopt = unsafeBitCast(try #require(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt")), to: MallocOption.self)
        let perturb: Int32 = -6
        _ = mallopt(perturb, 0xA5)
        defer { _ = mallopt(perturb, 0) }
        let image = try ImageDecoder.decode(undefined)
        #expect(image.pixels.enumerated().allSatisfy { $0.offset % 4 == 3 || $0.element == 128 }, "a flat grey block")
    }
}

@Suite struct ImageRendererTests {
    let quad = RGBAImage(width: 2, height: 2, pixels: [255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255, 10, 20, 30, 255])

    @Test func trueColourHalfBlocksCarryExactPixels() {
        let lines = ImageRenderer(depth: .trueColor, ascii: false).render(quad, columns: 2)
        #expect(lines == ["\u{1B}[0;38;2;255;0;0;48;2;0;0;255m▀\u{1B}[0;38;2;0;255;0;48;2;10;20;30m▀\u{1B}[0m"])
    }

    @Test func twoFiftySixColoursUseThePalette() {
        let lines = ImageRenderer(depth: .ansi256, ascii: false).render(quad, columns: 2)
        #expect(lines == ["\u{1B}[0;38;5;196;48;5;21m▀\u{1B}[0;38;5;46;48;5;233m▀\u{1B}[0m"])
        #expect(ImageRenderer.xterm256(.init(128, 128, 128)) == 244)
    }

    @Test func plainTextUsesALuminanceRamp() {
        let black = RGBAImage(width: 1, height: 2, pixels: [0, 0, 0, 255, 0, 0, 0, 255])
        let white = RGBAImage(width: 1, height: 2, pixels: [255, 255, 255, 255, 255, 255, 255, 255])
        let plain = ImageRenderer(depth: .none, ascii: true)
        #expect(plain.render(black, columns: 1) == [" "])
        #expect(plain.render(white, columns: 1) == ["@"])
    }

    @Test func scalesToTheWidthKeepingTheAspect() {
        let wide = RGBAImage(width: 100, height: 50, pixels: [UInt8](repeating: 200, count: 100 * 50 * 4))
        let lines = ImageRenderer(depth: .none, ascii: true).render(wide, columns: 20)
        #expect(lines.count == 5)  // 20x10 pixels, two a cell.
        #expect(lines.allSatisfy { $0.count == 20 })
        // Never wider than the image: a 4-pixel image at 80 columns stays 4 wide.
        let small = RGBAImage(width: 4, height: 4, pixels: [UInt8](repeating: 255, count: 64))
        #expect(ImageRenderer(depth: .none, ascii: true).render(small, columns: 80).map(\.count) == [4, 4])
    }

    @Test func shrinkingAveragesAndTransparencyIsBlack() {
        let halfRed = RGBAImage(width: 2, height: 1, pixels: [255, 0, 0, 255, 0, 0, 0, 255])
        #expect(halfRed.scaled(width: 1, height: 1)[0, 0] == .init(127, 0, 0))
        let clear = RGBAImage(width: 1, height: 1, pixels: [255, 255, 255, 0])
        #expect(clear.scaled(width: 1, height: 1)[0, 0] == .init(0, 0, 0))
    }

    /// Found by fuzzing: a 16x16 PNG whose compressed data expands without end made stb_image
    /// ask for 2 GB. Its allocations are now held to what the header's size justifies.
    @Test func aDecompressionBombIsRefusedNotAllocated() throws {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        let bomb = [UInt8](try Data(contentsOf: url.appendingPathComponent("fuzz/corpus/image/zlib-bomb.png")))
        #expect(throws: ImageError.notAnImage(reason: "truncated or damaged")) { try ImageDecoder.decode(bomb) }
    }

    /// Issue 50: a phone's photo states its size after its EXIF and colour profile, tens of
    /// kilobytes in, and says how to turn it; it is read there and drawn upright.
    @Test func aPhotoIsReadPastItsEXIFAndStoodUpright() throws {
        let photo = TestPictures.cameraJPEG(orientation: 6, profile: 120_000)
        #expect(photo.count > 120_000)
        #expect(ImageHeader.parse(photo) == ImageHeader(format: .jpeg, width: 16, height: 8, orientation: 6))
        #expect(ImageHeader.parse(Array(photo.prefix(64))) == nil, "what the sender read before")
        /// Red or blue, as far as a JPEG keeps them.
        func colour(_ image: RGBAImage, _ x: Int, _ y: Int) -> String {
            let pixel = image[x, y]
            return pixel.r > 180 && pixel.b < 80 ? "red" : pixel.b > 180 && pixel.r < 80 ? "blue" : "\(pixel)"
        }
        // Stored with red on the left: where red is drawn, each way it may be turned.
        let cases: [(orientation: Int, size: (Int, Int), red: (Int, Int), blue: (Int, Int))] = [
            (1, (16, 8), (1, 4), (14, 4)), (2, (16, 8), (14, 4), (1, 4)), (3, (16, 8), (14, 4), (1, 4)),
            (4, (16, 8), (1, 4), (14, 4)), (5, (8, 16), (4, 1), (4, 14)), (6, (8, 16), (4, 1), (4, 14)),
            (7, (8, 16), (4, 14), (4, 1)), (8, (8, 16), (4, 14), (4, 1)),
        ]
        for (orientation, size, red, blue) in cases {
            for bigEndian in [true, false] {
                let image = try ImageDecoder.decode(TestPictures.cameraJPEG(orientation: orientation, bigEndian: bigEndian))
                #expect(image.width == size.0 && image.height == size.1, "orientation \(orientation)")
                #expect(colour(image, red.0, red.1) == "red" && colour(image, blue.0, blue.1) == "blue", "orientation \(orientation)")
            }
        }
        // Mirrored ones differ from turned ones in the corners: orientation 2 flips the top row only sideways.
        let turned = try ImageDecoder.decode(TestPictures.cameraJPEG(orientation: 6))
        let plain = try ImageDecoder.decode(TestPictures.sideways)
        #expect(turned[7, 0] == plain[0, 0] && turned[0, 15] == plain[15, 7])
    }

    @Test func aDamagedEXIFLeavesThePictureAsStored() {
        var exif = Array("Exif".utf8) + [0, 0] + Array("MM".utf8) + [0, 42, 0xFF, 0xFF, 0xFF, 0xF0]
        #expect(ImageHeader.exifOrientation(exif[...]) == nil, "a directory past the end")
        exif = Array("Exif".utf8) + [0, 0] + Array("II".utf8) + [42, 0, 8, 0, 0, 0, 0xFF, 0xFF]
        #expect(ImageHeader.exifOrientation(exif[...]) == nil, "65,535 entries that are not there")
        exif = Array("Exif".utf8) + [0, 0] + Array("II".utf8) + [42, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, 9, 0, 0, 0]
        #expect(ImageHeader.exifOrientation(exif[...]) == nil, "orientation 9")
        exif[exif.count - 4] = 8
        #expect(ImageHeader.exifOrientation(exif[...]) == 8)
    }
}
