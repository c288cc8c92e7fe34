import Foundation
import Runtime
import Testing
@testable import Terminal

@Suite struct SafeTextTests {
    @Test func controlSequencesBecomeVisibleText() {
        #expect(SafeText.visible("\u{1B}[2Jhi") == "^[[2Jhi")
        #expect(SafeText.visible("\u{1B}]0;title\u{7}") == "^[]0;title^G")
        #expect(SafeText.visible("\u{1B}]52;c;aGVsbG8=\u{1B}\\") == "^[]52;c;aGVsbG8=^[\\")
        #expect(SafeText.visible("a\u{7F}b\u{0}c") == "a^?b^@c")
        #expect(SafeText.visible("\u{9B}31m") == "\\x9b31m")  // C1 CSI, which some terminals obey.
        #expect(SafeText.visible("tab\there") == "tab^Ihere")
    }

    @Test func newlinesOnlyWhereParagraphsAreLaidOut() {
        #expect(SafeText.visible("a\nb") == "a^Jb")
        #expect(SafeText.visible("a\nb", keepNewlines: true) == "a\nb")
        #expect(SafeText.visible("a\r\nb", keepNewlines: true) == "a^M\nb")
    }

    @Test func bidiControlsAreNeutralised() {
        #expect(SafeText.visible("abc\u{202E}fed") == "abc<U+202E>fed")
        #expect(SafeText.visible("\u{2066}x\u{2069}") == "<U+2066>x<U+2069>")
        #expect(SafeText.visible("line\u{2028}sep") == "line<U+2028>sep")
    }

    @Test func ordinaryTextIsUntouched() {
        for text in ["hello", "Ünïcode 👻", "🚶‍♂️ and 🏴󠁧󠁢󠁳󠁣󠁴󠁿", "日本語", ""] { #expect(SafeText.visible(text) == text) }
        #expect(!SafeText.containsUnsafe("🚶‍♂️"))
    }

    /// Whatever comes in, nothing below U+0020 (but a kept newline), no DEL, no C1 comes out,
    /// and widths are those of the shown text.
    @Test func nothingUnsafeSurvivesAnyInput() {
        let seed = UInt64.random(in: 0...UInt64.max)
        var generator = SeededRandom(seed: seed)
        for _ in 0..<500 {
            let scalars = (0..<40).compactMap { _ in Unicode.Scalar(UInt32.random(in: 0...0x3000, using: &generator)) }
            let shown = SafeText.visible(String(String.UnicodeScalarView(scalars)))
            #expect(!shown.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || SafeText.isBidiControl($0.value) },
                    "seed \(seed)")
            // What is shown lays out by its widths: cut to 12 columns it fits them, padded it fills them.
            #expect(DisplayWidth.truncate(shown, to: 12).displayWidth <= 12, "seed \(seed)")
            #expect(DisplayWidth.pad(shown, to: shown.displayWidth + 3).displayWidth == shown.displayWidth + 3, "seed \(seed)")
        }
        #expect(SafeText.visible("\u{1B}x").displayWidth == 3)
    }
}

@Suite struct ImageHeaderTests {
    /// A PNG signature and IHDR chunk claiming `width` x `height`, and nothing else.
    static func pngHeader(width: UInt32, height: UInt32, depth: UInt8 = 8, colourType: UInt8 = 6) -> [UInt8] {
        var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8)
        for value in [width, height] { bytes += (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
        return bytes + [depth, colourType, 0, 0, 0, 0, 0, 0, 0]
    }

    @Test func readsTheSizeOfEachFormat() throws {
        #expect(ImageHeader.parse(Self.pngHeader(width: 3, height: 5)) == ImageHeader(format: .png, width: 3, height: 5))
        #expect(ImageHeader.parse(Array("GIF89a".utf8) + [7, 0, 9, 0]) == ImageHeader(format: .gif, width: 7, height: 9))
        var bmp = Array("BM".utf8) + [UInt8](repeating: 0, count: 24)
        bmp[14] = 40; bmp[18] = 4; bmp[22] = 0xFE; bmp[23] = 0xFF; bmp[24] = 0xFF; bmp[25] = 0xFF  // Height -2: top-down.
        #expect(ImageHeader.parse(bmp) == ImageHeader(format: .bmp, width: 4, height: 2))
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0, 4, 0, 0, 0xFF, 0xC0, 0, 11, 8, 0, 6, 0, 10, 3]
        #expect(ImageHeader.parse(jpeg) == ImageHeader(format: .jpeg, width: 10, height: 6))
        #expect(ImageHeader.parse(Array("hello".utf8)) == nil)
        #expect(ImageHeader.parse([0xFF, 0xD8, 0xFF]) == nil)
    }

    @Test func limitsAreCheckedOnTheHeaderWithClearWords() {
        #expect(throws: ImageError.tooLarge(width: 1, height: 16_000_000)) {
            try ImageDecoder.decode(Self.pngHeader(width: 1, height: 16_000_000))
        }
        #expect(ImageError.tooLarge(width: 1, height: 16_000_000).description
                    == "the image is 1x16000000; at most 4096 pixels a side are accepted")
        // The budget counts the source's bytes: 4,096 × 2,048 is 64 MiB as 16-bit RGBA, the
        // bomb of issue 49 (7,000 × 7,000 at 16 bits) far over, 4,096 × 4,096 at 8 bits just in.
        #expect(ImageHeader.parse(Self.pngHeader(width: 7_000, height: 7_000, depth: 16))?.decodedBytes == 7_000 * 7_000 * 8)
        #expect(throws: ImageError.tooLarge(width: 7_000, height: 7_000)) {
            try ImageDecoder.check(Self.pngHeader(width: 7_000, height: 7_000, depth: 16))
        }
        #expect(throws: ImageError.tooLarge(width: 4_096, height: 2_049)) {
            try ImageDecoder.check(Self.pngHeader(width: 4_096, height: 2_049, depth: 16))
        }
        #expect(throws: Never.self) { try ImageDecoder.check(Self.pngHeader(width: 4_096, height: 2_048, depth: 16)) }
        #expect(throws: Never.self) { try ImageDecoder.check(Self.pngHeader(width: 4_096, height: 4_096)) }
        #expect(throws: Never.self) { try ImageDecoder.check(Self.pngHeader(width: 4_096, height: 4_096, depth: 16, colourType: 0)) }
        #expect(ImageError.tooLarge(width: 4_096, height: 2_049).description.contains("over the 64 MiB a picture may take decoded"))
        // A header and nothing more: a reason, never an empty one.
        do {
            _ = try ImageDecoder.decode(Self.pngHeader(width: 2, height: 2))
            Issue.record("decoded a header-only PNG")
        } catch {
            #expect(error == .notAnImage(reason: "truncated or damaged"))
        }
        #expect(throws: ImageError.empty(width: 0, height: 5)) { try ImageDecoder.decode(Self.pngHeader(width: 0, height: 5)) }
    }

    @Test func drawingFitsTheWindowHeight() {
        let tall = RGBAImage(width: 2, height: 400, pixels: [UInt8](repeating: 128, count: 2 * 400 * 4))
        #expect(ImageRenderer(.plain).render(tall, columns: 80, rows: 20).count <= 20)
        let wide = RGBAImage(width: 100, height: 10, pixels: [UInt8](repeating: 128, count: 100 * 10 * 4))
        #expect(ImageRenderer(.plain).render(wide, columns: 40, rows: 20).first?.count == 40)
    }
}

@Suite struct FileContentsTests {
    /// A FIFO with no writer would block an ordinary open() forever: it is refused at once.
    @Test func refusesWhatIsNotARegularFileWithoutBlocking() throws {
        let directory = NSTemporaryDirectory() + "seance-fifo-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fifo = directory + "/pipe"
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(throws: FileContents.Failure(path: fifo, reason: "it is a named pipe (FIFO), not a regular file", isMissing: false)) {
            try FileContents.read(fifo)
        }
        #expect(throws: FileContents.Failure(path: "/dev/zero", reason: "it is a device, not a regular file", isMissing: false)) {
            try FileContents.read("/dev/zero")
        }
        // Read as a stream (a password from a pipe), a FIFO nobody writes to is a clear error in
        // time, not a hang.
        #expect(throws: FileContents.Failure(path: fifo, reason: "nothing came, or it did not end, within 0.2 s", isMissing: false)) {
            try FileContents.readStream(fifo, timeout: 0.2)
        }
        let big = directory + "/big"
        #expect(FileManager.default.createFile(atPath: big, contents: Data(count: 2 << 20)))
        #expect(throws: FileContents.Failure.self) { try FileContents.text(big) }
    }
}
