import Foundation
import Testing

@Suite struct VisionsEndToEndTests {
    let scratch = Scratch()
    let portrait = packageRoot + "/assets/portraits/max.png"

    func run(_ stdin: String, _ arguments: [String] = []) throws -> RunResult {
        try runSeance(["--data-dir", scratch.dataDir, "--ascii"] + arguments, stdin: stdin, scratch: scratch)
    }

    @Test func aBatchSessionAddsOpensSavesAndDeletes() throws {
        let image = scratch.path + "/vision.png"
        try FileManager.default.copyItem(atPath: portrait, toPath: image)
        let script = """
            visions
            add Max --image \(image)
            add "  Jim Hopper " --new-rescuer --image \(image)
            save Max
            open 1
            save Lucas
            save max
            save Max
            next
            open "jim hopper"
            prev
            delete 1
            """
        let result = try run(script + "\n")
        #expect(result.stderr == """
            line 4: open a vision first: open N
            line 6: Will can only be saved by Max
            line 8: vision #1 is already rescued, by Max

            """)
        let out = result.stdout
        #expect(out.hasPrefix("Visions - 0 in all\nNo visions yet. Add one: add NAME --image PATH\n"))
        #expect(out.contains("added vision #1, assigned to Max\n"))
        #expect(out.contains("added vision #2, assigned to Jim Hopper\n"))
        #expect(out.contains("Vision #1  rescuer: Max  Save Me\n[ Save Me ]  save NAME\n"))
        #expect(out.contains("Max rescued Will! (vision #1)\n"))
        #expect(out.contains("Rescuers - 11 in all\n"))
        #expect(out.contains("Jim Hopper  rescues: 0\n"))
        #expect(out.contains("#1  Max\n") && out.contains("Rescued\n"))
        #expect(out.hasSuffix("deleted vision #1\n"))
        // The image lives in the database: removing the file changes nothing.
        try FileManager.default.removeItem(atPath: image)
        let later = try run("visions open 2\nvisions page 2\n")
        #expect(later.stderr == "")
        #expect(later.stdout.contains("Vision #2  rescuer: Jim Hopper  Save Me"))
        #expect(later.stdout.contains("Max\n") && !later.stdout.contains("rescues: 1"))  // The deleted rescue was taken back.
    }

    @Test func badImagesAreRefusedAndNothingIsStored() throws {
        let text = scratch.write("notes.png", "these are notes, not pixels")
        let truncated = scratch.path + "/half.png"
        let bytes = try Data(contentsOf: URL(fileURLWithPath: portrait))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: truncated))
        let result = try run("visions add Max --image \(text)\nvisions add Max --image \(truncated)\nvisions add Max --image /nope.png\nvisions add Max\nvisions add '' --image \(portrait)\nvisions list\n")
        #expect(result.stderr == """
            line 1: \(text): not a PNG, JPEG, GIF or BMP image (unknown format)
            line 2: \(truncated): not a PNG, JPEG, GIF or BMP image (truncated or damaged)
            line 3: cannot read /nope.png: No such file or directory
            line 4: missing --image PATH (batch input cannot be asked for; give it as an argument)
            line 5: the rescuer's name cannot be empty

            """)
        #expect(result.stdout.contains("Visions - 0 in all"))
    }

    /// A script's unknown name is an error, not a second Joyce; rescuers are renamed, deleted
    /// (not while a vision names them), and given a portrait and a description (issue 31, item 9).
    @Test func rescuersAreKeptByName() throws {
        let script = """
            visions
            add "Joyce Byers" --image \(portrait)
            add Murray --new-rescuer --image \(portrait)
            rescuer describe Murray a journalist with a theory about everything
            rescuer portrait murray \(portrait)
            rescuer portrait Murray /nope.png
            rescuer rename Murray Joyce
            rescuer rename Murray "Murray Bauman"
            rescuer delete "murray bauman"
            rescuer delete Steve
            rescuer delete Steve
            open "Murray Bauman"
            add Joice --image \(portrait)
            """
        let result = try run(script + "\n")
        #expect(result.stderr == """
            line 2: there is no rescuer named 'Joyce Byers' (did you mean 'Joyce'?); add --new-rescuer to create one
            line 6: cannot read /nope.png: No such file or directory
            line 7: there is already a rescuer named 'Joyce'
            line 9: Murray Bauman is assigned to a vision: delete it first, or rename Murray Bauman
            line 11: there is no rescuer named 'Steve'
            line 13: there is no rescuer named 'Joice' (did you mean 'Joyce'?); add --new-rescuer to create one

            """)
        let out = result.stdout
        #expect(out.contains("added vision #1, assigned to Murray\n") && !out.contains("Joyce Byers"))
        #expect(out.contains("Murray is described\n") && out.contains("Murray has a new portrait"))
        #expect(out.contains("Murray is now Murray Bauman\n") && out.contains("deleted rescuer Steve\n"))
        #expect(out.contains("Murray Bauman  rescues: 0\na journalist with a theory about everything\n"))
        let lines = out.split(separator: "\n")
        let name = try #require(lines.firstIndex { $0.hasPrefix("Murray Bauman  rescues") })
        #expect(lines[name - 8].count == 16)  // The portrait given, above the name.
        let later = try run("visions open 1\nvisions page 2\n")
        #expect(later.stdout.contains("rescuer: Murray Bauman") && !later.stdout.contains("Steve"))
    }

    @Test func theRescuerPageShowsPortraitAndDescription() throws {
        let result = try run("visions\nnext\nopen eleven\n")
        #expect(result.stdout.contains("Eleven  rescues: 0\nA girl who escaped the lab"))
        let lines = result.stdout.split(separator: "\n")
        let portraitStart = try #require(lines.firstIndex { $0.hasPrefix("Eleven  rescues") }) - 9
        #expect(lines[portraitStart + 1].count == 16)  // 16 pixels wide, drawn at its own size.
    }
}
