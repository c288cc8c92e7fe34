import Foundation
import Testing

@Suite struct ProfileEndToEndTests {
    let scratch = Scratch()

    func run(_ stdin: String) throws -> RunResult {
        try runSeance(["--data-dir", scratch.dataDir, "--seed", "1"], stdin: stdin, scratch: scratch)
    }

    /// The password from a password manager: standard input (`-`, when it does not carry the
    /// commands), `/dev/stdin` under a pipe, a FIFO; each read once.
    @Test func aPasswordComesFromStandardInputAPipeOrAFIFO() throws {
        let good = scratch.write("good", "correct horse\n")
        #expect(try run("profile new ann --password-file \(good)\n").status == 0)
        let dash = try runSeance(["--data-dir", scratch.dataDir, "-c", "login ann --password-file -"], stdin: "correct horse\n", scratch: scratch)
        #expect(dash.status == 0 && dash.stderr.contains("logged in as ann#") && dash.stdout.isEmpty, "\(dash.stderr)")
        let data = scratch.dataDir
        let piped = try sh("printf 'correct horse\\n' | \(seanceBinary) --data-dir \(data) -c 'login ann --password-file /dev/stdin' 2>&1")
        #expect(piped.contains("logged in as ann#"), "\(piped)")
        let fifo = scratch.path + "/fifo"
        let named = try sh("mkfifo \(fifo) && (printf 'correct horse\\n' > \(fifo) &) && \(seanceBinary) --data-dir \(data) -c 'login ann --password-file \(fifo)' 2>&1")
        #expect(named.contains("logged in as ann#"), "\(named)")
        // Where standard input carries the commands, it cannot carry the password too.
        let both = try run("login ann --password-file -\n")
        #expect(both.status == 1 && both.stderr.contains("standard input carries the commands here"), "\(both.stderr)")
    }

    /// Issue 52: `profile password` seals the same keys under a new password; the old one
    /// opens nothing after.
    @Test func aPasswordIsChangedAndTheKeysStay() throws {
        let good = scratch.write("good", "correct horse\n"), new = scratch.write("new", "battery staple\n")
        let made = try run("profile new ann --password-file \(good)\n")
        let handle = try #require(made.stderr.split(separator: " ").dropFirst().first)
        let changed = try run("login ann --password-file \(good)\nprofile password --password-file \(good) --new-password-file \(new)\n")
        #expect(changed.status == 0 && changed.stdout.contains("\(handle)'s password is changed"), "\(changed.stderr)")
        let old = try run("login ann --password-file \(good)\n")
        #expect(old.status == 1 && old.stderr.contains("wrong password"))
        let now = try run("login ann --password-file \(new)\n")
        #expect(now.status == 0 && now.stderr == "logged in as \(handle)\n", "the same keys: \(now.stderr)")
        let short = scratch.write("short", "short\n")
        let refused = try run("login ann --password-file \(new)\nprofile password --password-file \(new) --new-password-file \(short)\n")
        #expect(refused.status == 1 && refused.stderr.contains("line 2:"), "\(refused.stderr)")
    }

    /// Issue 52: `chat` before a login names the profiles there are to log in as.
    @Test func chatBeforeALoginNamesTheProfiles() throws {
        #expect(try run("chat\n").stderr == "line 1: no profile is logged in, and there is none here yet: profile new NAME\n")
        let good = scratch.write("good", "correct horse\n")
        #expect(try run("profile new ann --password-file \(good)\n").status == 0)
        #expect(try run("chat\n").stderr == "line 1: no profile is logged in: login ann (or profile new NAME)\n")
        #expect(try run("profile new ben --password-file \(good)\n").status == 0)
        #expect(try run("chat\n").stderr == "line 1: no profile is logged in: login NAME, one of ann, ben (or profile new NAME)\n")
    }

    @Test func scriptsCreateLogInAndDelete() throws {
        let good = scratch.write("good", "correct horse\nsecond line is ignored\n")
        let bad = scratch.write("bad", "battery staple\n")
        let first = try run("""
            profile new alice --password-file \(good) --avatar 👻
            profile list
            logout
            login alice --password-file \(bad)
            login Alice --password-file \(good)
            profile new bob
            profile show bob
            login bob --password-file \(good)
            """ + "\n")
        let handle = try #require(first.stderr.split(separator: "\n").first?.split(separator: " ").dropFirst().first)
        #expect(handle.hasPrefix("alice#") && handle.count == 10)
        // Standard output is what was asked for; what the commands did is said on standard error.
        #expect(first.stdout == """
            * 👻 \(handle)

            """)
        #expect(first.stderr == """
            created \(handle) and logged in
            logged out of \(handle)
            line 4: wrong password
            logged in as \(handle)
            line 6: missing --password-file FILE (batch input cannot be asked for; give it as an argument)
            line 7: there is no profile named 'bob'
            line 8: there is no profile named 'bob' (there is 'alice'); profile new bob makes one

            """)
        // The password is nowhere in the database file.
        let database = try Data(contentsOf: URL(fileURLWithPath: scratch.dataDir + "/seance.sqlite"))
        #expect(database.range(of: Data("correct horse".utf8)) == nil)
        let second = try run("profile show alice\nprofile delete alice --password-file \(good)\nprofile list\n")
        #expect(second.stdout.contains("👻 \(handle)\nsigning key:"))
        #expect(!second.stdout.contains("gift"))  // Only the logged-in owner learns about the gift.
        #expect(second.stdout.hasSuffix("deleted \(handle)\nno profiles yet: profile new\n"))
    }
}
