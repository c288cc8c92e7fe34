import Foundation
#if FUZZING
/// libFuzzer's entry: the target is chosen by `SEANCE_FUZZ_TARGET` (packet, tokenizer, image,
/// broker, engine, reassembly).
private let target: FuzzTarget = {
    let name = getenv("SEANCE_FUZZ_TARGET").map { String(cString: $0) } ?? "packet"
    guard let target = FuzzTarget(rawValue: name) else { fatalError("SEANCE_FUZZ_TARGET: " + FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")) }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
package func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    target.run(size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
#else
/// Without the fuzzer: replays files (a corpus, a crash found earlier) through every target,
/// so a finding, once fixed, stays fixed. `seance-fuzz FILE…`
@main struct Replay {
    static func main() {
        if CommandLine.arguments.count == 3, CommandLine.arguments[1] == "--write-corpus" {
            return Corpus.write(to: CommandLine.arguments[2])
        }
        var count = 0
        for path in CommandLine.arguments.dropFirst() {
            var files = [path]
            if let names = try? FileManager.default.contentsOfDirectory(atPath: path) { files = names.sorted().map { path + "/" + $0 } }
            for file in files {
                guard let bytes = FileManager.default.contents(atPath: file) else { continue }
                for target in FuzzTarget.allCases { target.run([UInt8](bytes)) }
                count += 1
            }
        }
        print("replayed \(count) inputs through \(FuzzTarget.allCases.count) targets")
    }
}
#endif
