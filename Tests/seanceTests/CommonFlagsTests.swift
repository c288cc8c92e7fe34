import App
import Testing
@testable import seance

/// The common flags are read by hand at start-up (`LaunchOptions(commonFlags:)`); whatever it
/// reads must come out as the full parser reads it, and whatever it cannot read goes to the
/// full parser.
@Suite struct CommonFlagsTests {
    static let agreeing: [[String]] = [
        [],
        ["-c", "quit"],
        ["--data-dir", "/tmp/d", "-c", "login ann; chat", "-c", "quit"],
        ["--seed", "42", "--color", "never", "--ascii", "--bail", "--echo", "--no-anim", "--battery", "7"],
        ["script.seance", "--battery", "100"],
        ["--battery", "0", "script.seance"],
        ["--interface", "lo", "--interface", "veth0", "--port", "47000", "--group", "239.1.2.3", "--announce-interval", "0.2"],
        ["--broker", "mqtt://u:p@198.18.0.1:1883", "--broker-ca", "/etc/ca.pem", "--broker-prefix", "x/", "--no-lan"],
        ["--linger", "0.5", "-c", "chat"],
        ["--conversation", "compact", "-c", "chat"],
        ["--color", "always", "-c", ""],
    ]

    @Test(arguments: agreeing)
    func commonFlagsReadAsTheFullParserReadsThem(_ arguments: [String]) throws {
        let quick = try #require(LaunchOptions(commonFlags: arguments))
        #expect(quick == (try Seance.options(parsing: arguments)))
    }

    static let leftToTheFullParser: [[String]] = [
        ["--help"], ["-h"], ["--version"],
        ["--data-dir=/tmp/d"],           // The = form.
        ["--data-dir"],                  // No value.
        ["-c", "--bail"],                // A value that looks like a flag.
        ["--seed", "x"], ["--seed", "-1"],
        ["--color", "sometimes"],
        ["--battery", "101"], ["--battery", "-5"],
        ["--ascii", "--ascii"],          // Given twice.
        ["--data-dir", "a", "--data-dir", "b"],
        ["one.seance", "two.seance"],    // Two scripts.
        ["-c", "echo a", "extra.seance"], // Commands and a script.
        ["--frobnicate"], ["-x"], ["--"], ["-"],
    ]

    @Test(arguments: leftToTheFullParser)
    func anythingElseGoesToTheFullParser(_ arguments: [String]) {
        #expect(LaunchOptions(commonFlags: arguments) == nil)
    }

    /// Commands with -c and a script: which would run? Neither; the mistake is said.
    @Test func commandsAndAScriptTogetherAreRefused() {
        #expect(throws: (any Error).self) { try Seance.options(parsing: ["-c", "echo a", "extra.seance"]) }
    }
}
