import Accounts
import Foundation
import Nearby
import Shell
import Terminal
import Wire

/// `verify` and `unverify`: checking a key beyond trust on first use. The four hex digits of a
/// handle are 16 bits (a stranger grinds a key with the same four in a moment); the safety
/// number is the pair's 60 digits, as Signal shows them, with a QR code of the same beside it
/// for two people to compare screen to screen. A verified key is marked wherever its name is
/// shown, and another key using its name is a loud warning whose messages wait (`TrustStore`,
/// `Rules.isHeld`).
struct VerifyCommands {
    let chat: ChatMode
    var online: Online { chat.online }

    func register(in shell: Shell) {
        let seen = ArgumentKind.dynamic { [chat] in chat.presentPeers().map { Candidate($0.shownHandle, "nearby") } }
        shell.register(Command("verify", scope: .global,
                               arguments: [.positional("peer", seen, optional: true,
                                                       help: "a name, or name#fingerprint (default: the open conversation's)"),
                                           .switch("--yes", help: "mark the key verified: the numbers match on both screens")],
                               summary: "compare your safety number with someone's, and mark their key verified",
                               details: "Both of you run verify (each naming the other) and compare the 60 digits, or the QR codes, "
                                   + "side by side: the same on both screens means each holds the other's real key. Then verify NAME --yes "
                                   + "(at a terminal, verify asks). A verified key is marked \u{2713} in nearby, chats and Tab; another "
                                   + "key using its name is a loud warning, and what you write to it waits until you decide.") {
            invocation in try self.verify(invocation.arguments["peer"], confirmed: invocation.arguments.isSet("--yes"), invocation.shell)
        })
        shell.register(Command("unverify", scope: .global,
                               arguments: [.positional("peer", seen, optional: true,
                                                       help: "a name, or name#fingerprint (default: the open conversation's)")],
                               summary: "forget that you verified someone's key (it stays trusted for its name)") { invocation in
            let person = try BlockCommands(chat: self.chat).person(invocation.arguments["peer"], invocation.shell)
            let changed = try TrustStore(database: try invocation.shell.session.openDatabase()).unverify(person.signingKey)
            self.online.choicesChanged()
            invocation.shell.console.print(changed ? "\(SafeText.visible(person.handle)) is no longer marked verified"
                                                   : "\(SafeText.visible(person.handle)) was not verified")
        })
    }

    private func verify(_ wanted: String?, confirmed: Bool, _ shell: Shell) throws {
        guard let login = chat.profiles.current else { throw ProfileError.notLoggedIn }
        let person = try BlockCommands(chat: chat).person(wanted, shell)
        let handle = SafeText.visible(person.handle)
        let database = try shell.session.openDatabase()
        // Their agreement key: from their announcement now, or the conversation that kept it.
        let present = chat.presentPeers().first { $0.signingKey == person.signingKey }
        let kept = try MessageStore(database: database).existingConversation(myKey: login.identity.signingPublicKey, peerKey: person.signingKey)
        guard let agreement = present?.announcement.agreementKey ?? kept?.peerAgreementKey else {
            throw UserError("\(handle) is not nearby and you have no conversation with them: their keys are not known here yet")
        }
        let digits = SafetyNumber.between(signing: login.identity.signingPublicKey, agreement: login.identity.agreementPublicKey,
                                          and: person.signingKey, agreement: agreement)
        shell.console.print("safety number with \(handle) (the same on both screens when each has the other's real key):")
        for line in SafetyNumber.lines(digits) { shell.console.print("  " + line) }
        if let code = QRCode(digits) { code.lines(shell.capabilities).forEach { shell.console.print($0) } }
        var marking = confirmed
        if !confirmed {
            guard shell.isInteractive else {
                return shell.console.print("compare it with what \(SafeText.visible(PeerIdentity.split(person.handle).name)) sees (verify "
                                           + "\(SafeText.visible(login.profile.name)) there); if they match: verify \(handle) --yes")
            }
            let answer = try shell.ask("do both screens show these numbers? mark \(handle) verified? [y/N]", field: Shell.confirmation)
            marking = answer.lowercased().hasPrefix("y")
        }
        guard marking else { return shell.console.print("not marked verified") }
        try TrustStore(database: database).verify(person.signingKey, name: person.name, now: shell.session.clock())
        online.choicesChanged()
        shell.console.print("\(handle) is verified \(shell.capabilities.ascii ? "(v)" : "\u{2713}"): another key using the name will be "
                            + "a loud warning, and what you write to it will wait for you")
    }
}
