import Foundation
import TestSupport
import Glibc
import Testing

/// Input that would crash, hang or mislead a careless shell: huge lines, FIFOs, files of the
/// wrong kind, locked databases, killed password checks.
@Suite struct HostileInputTests {
    /// Runs `command` under /usr/bin/time; returns the result and the peak memory in KB.
    func measured(_ arguments: [String], stdin: String, scratch: Scratch) throws -> (RunResult, Int) {
        let script = scratch.write("measure.sh", "exec /usr/bin/time -f 'peak %M' -o '\(scratch.path)/time.out' \"$@\"\n")
        let result = try runSeance([], stdin: stdin, environment: [:], scratch: scratch, launcher: ["/bin/sh", script] + [seanceBinary] + arguments)
        let peak = try String(contentsOfFile: scratch.path + "/time.out", encoding: .utf8)
            .split(separator: "\n").last { $0.hasPrefix("peak ") }.flatMap { Int($0.dropFirst(5)) } ?? .max
        return (result, peak)
    }

    /// `zombies zombies … stats`: 80 KB and 800 KB of mode prefixes run the command once, in
    /// memory that does not grow with the number of prefixes (it used to recurse and copy, and
    /// crash after 0.8 GB).
    @Test func aLineOfManyModePrefixesRunsInSmallMemory() throws {
        let scratch = Scratch()
        var peaks: [Int] = []
        for count in [10_000, 100_000] {
            let line = String(repeating: "zombies ", count: count) + "stats\n"
            let (result, peak) = try measured(["--data-dir", scratch.dataDir], stdin: line, scratch: scratch)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("wins: 0"), "\(result.stdout.prefix(200))")
            peaks.append(peak)
        }
        // Ten times the prefixes: far less than ten times the memory (the line itself is 0.8 MB).
        #expect(peaks[1] < 200_000, "peaks \(peaks) KB")
        #expect(peaks[1] < peaks[0] * 3, "peaks \(peaks) KB")
    }

    /// A FIFO (or a device, or a directory) where a file is expected is refused at once, in
    /// every place a path is read.
    @Test func fifosAreRefusedAtOnceNotWaitedOn() throws {
        let scratch = Scratch()
        let fifo = scratch.path + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let password = scratch.write("password", "correct horse\n")
        // (A password file may be a FIFO: it is read once, as a pipe is; ProfileEndToEndTests.)
        for command in ["visions add Will --new-rescuer --image \(fifo)",
                        "profile new ann --password-file \(password) --avatar \(fifo)", "visions add Will --new-rescuer --image /dev/zero"] {
            let result = try runSeance(["--data-dir", scratch.dataDir, "-c", command], scratch: scratch, timeout: 10)
            #expect(result.status == 1, "\(command)")
            #expect(result.stderr.contains("not a regular file") || result.stderr.contains("neither one emoji"), "\(command): \(result.stderr)")
        }
        // The history file too (interactive only), and a script that is a directory.
        let directory = try runSeance([scratch.path], scratch: scratch)
        #expect(directory.status != 0 && directory.stderr.contains("it is a directory, not a script"), "\(directory.stderr)")
    }

    @Test func theDatabaseAndItsJournalsArePrivate() throws {
        let scratch = Scratch()
        try FileManager.default.createDirectory(atPath: scratch.dataDir, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        let result = try runSeance(["--data-dir", scratch.dataDir, "-c", "zombies variant blocker"], scratch: scratch)
        #expect(result.status == 0, "\(result.stderr)")
        for name in ["seance.sqlite", "seance.sqlite-wal", "seance.sqlite-shm"] {
            let path = scratch.dataDir + "/" + name
            guard let mode = (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int else { continue }
            #expect(mode & 0o077 == 0, "\(name) is \(String(mode, radix: 8))")
        }
        let main = try FileManager.default.attributesOfItem(atPath: scratch.dataDir + "/seance.sqlite")[.posixPermissions] as? Int
        #expect(main == 0o600)
    }

    /// WAL lets a reader go on while another process writes: a read-only command does not
    /// wait for (and fail on) the write lock.
    @Test func readOnlyCommandsDoNotWaitForAWriter() throws {
        let scratch = Scratch()
        #expect(try runSeance(["--data-dir", scratch.dataDir, "-c", "zombies stats"], scratch: scratch).status == 0)
        let holder = try Child(["/usr/bin/python3", "-c", """
            import sqlite3, sys, time
            db = sqlite3.connect(sys.argv[1], isolation_level=None)
            db.execute("BEGIN IMMEDIATE")
            db.execute("UPDATE setting SET value = value")
            print("locked", flush=True)
            time.sleep(20)
            """, scratch.dataDir + "/seance.sqlite"], stdout: .pipe)
        defer { holder.kill(); waitForExit(holder, timeout: 10) }
        _ = holder.output!.availableData  // "locked"
        let started = Date()
        let result = try runSeance(["--data-dir", scratch.dataDir, "-c", "zombies stats; visions"], scratch: scratch)
        #expect(result.status == 0, "\(result.stderr) after \(Date().timeIntervalSince(started)) s")
        #expect(result.stdout.contains("wins: 0"), "\(result.stdout)")
    }

    @Test func messagesSayWhatIsWrong() throws {
        let scratch = Scratch()
        let file = scratch.write("not-a-directory", "x")
        let result = try runSeance(["--data-dir", file, "-c", "zombies stats"], scratch: scratch)
        #expect(result.status != 0)
        #expect(result.stderr == "seance: \(file) is not a directory (use --data-dir to choose another place)\n", "\(result.stderr)")
        // A PNG whose header promises 400 megapixels: its size, not "unknown format".
        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8)
        png += [0, 0, 0x4E, 0x20, 0, 0, 0x4E, 0x20, 8, 6, 0, 0, 0, 0, 0, 0, 0]
        let huge = scratch.path + "/huge.png"
        _ = FileManager.default.createFile(atPath: huge, contents: Data(png))
        let image = try runSeance(["--data-dir", scratch.dataDir, "-c", "visions add Will --new-rescuer --image \(huge)"], scratch: scratch)
        #expect(image.stderr.contains("the image is 20000x20000"), "\(image.stderr)")
    }

    /// The failed attempt is on disk before the answer: killing the process while it waits out
    /// the delay does not reset anything.
    @Test func killingAPasswordCheckSkipsNoDelay() throws {
        let scratch = Scratch()
        let right = scratch.write("right", "correct horse\n"), wrong = scratch.write("wrong", "wrong horse\n")
        #expect(try runSeance(["--data-dir", scratch.dataDir, "-c", "profile new ann --password-file \(right)"], scratch: scratch).status == 0)
        for _ in 0..<2 { _ = try runSeance(["--data-dir", scratch.dataDir, "-c", "login ann --password-file \(wrong)"], scratch: scratch) }
        let process = try Child([seanceBinary, "--data-dir", scratch.dataDir, "-c", "login ann --password-file \(right)"],
                                stdout: .null, stderr: .null)
        // The attempt is booked before its delay (0.5 s after the second failure) is waited out:
        // it is killed as soon as the booking shows, while it waits.
        #expect(eventually(timeout: 10) { (try? sh("sqlite3 '\(scratch.dataDir)/seance.sqlite' 'SELECT failedLogins FROM profile'")) == "3\n" })
        process.kill()
        waitForExit(process, timeout: 10)
        let counted = try sh("sqlite3 '\(scratch.dataDir)/seance.sqlite' 'SELECT failedLogins FROM profile'")
        #expect(counted == "3\n", "failed logins recorded: \(counted)")
    }
}

/// The fuzz corpus (real packets, lines, images, and every crash found and fixed) replayed
/// through the plain build of the fuzz targets: a finding, once fixed, stays fixed.
@Suite struct FuzzCorpusTests {
    @Test func everyCorpusInputPassesEveryTarget() throws {
        let replayer = (seanceBinary as NSString).deletingLastPathComponent + "/SeanceFuzz"
        let corpus = packageRoot + "/fuzz/corpus"
        let result = try runSeance([], scratch: Scratch(), launcher: [replayer, corpus + "/packet", corpus + "/tokenizer", corpus + "/image", corpus + "/broker"])
        #expect(result.status == 0, "\(result.stderr.suffix(2_000))")
        #expect(result.stdout.contains("replayed") && !result.stdout.contains("replayed 0 "), "\(result.stdout)")
    }
}
