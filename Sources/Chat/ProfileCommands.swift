import Nearby
import Accounts
import Foundation
import Glibc
import Shell
import Terminal

/// The commands that manage profiles and the login (the session itself is `Accounts`').
package final class Profiles {
    /// Who is logged in: shared with every feature that acts as the user.
    package let session: LoginSession
    /// The profile in use and its unlocked keys.
    package var current: LoginSession.Login? { session.current }
    /// Pauses before answering a wrong password; tests replace it.
    var sleep: (Double) -> Void = LoginSession.sleep
    /// scrypt's N for new profiles.
    let rounds: Int

    package init(session: LoginSession = LoginSession(), rounds: Int = PasswordVault.defaultRounds) {
        self.session = session
        self.rounds = rounds
    }

    private func setCurrent(_ new: LoginSession.Login?, _ shell: Shell) { session.set(new) }

    func store(_ shell: Shell) throws -> ProfileStore {
        ProfileStore(database: try shell.session.openDatabase(), rounds: rounds)
    }

    /// The profile logged in, or an error that names the ones there are to log in as.
    func requireLogin(_ shell: Shell) throws -> LoginSession.Login {
        if let current { return current }
        let names = ((try? store(shell).profiles()) ?? []).map { SafeText.visible($0.name) }
        let slash = shell.takesMessages ? "/" : ""
        switch names.count {
        case 0: throw UserError("no profile is logged in, and there is none here yet: \(slash)profile new NAME")
        case 1: throw UserError("no profile is logged in: \(slash)login \(names[0]) (or \(slash)profile new NAME)")
        default:
            let shown = names.count <= 6 ? names.joined(separator: ", ") : names.prefix(6).joined(separator: ", ") + ", …"
            throw UserError("no profile is logged in: \(slash)login NAME, one of \(shown) (or \(slash)profile new NAME)")
        }
    }

    package func register(in shell: Shell) {
        shell.promptUser = { [unowned self] in self.current.map { SafeText.visible($0.profile.name) } }
        let names = ArgumentKind.dynamic { [unowned shell, unowned self] in
            ((try? self.store(shell).profiles()) ?? []).map { Candidate($0.name, $0.handle) }
        }
        let actions = [Candidate("new", "create a profile (username, password, avatar)"),
                       Candidate("list", "every profile in this data directory"),
                       Candidate("show", "the logged-in profile, or NAME"),
                       Candidate("avatar", "change your avatar: an emoji or an image file"),
                       Candidate("password", "change your password (your keys are sealed again under it)"),
                       Candidate("delete", "delete a profile (asks for its password)")]
        shell.register(Command(
            "profile", scope: .global,
            arguments: [.positional("action", .choice(actions), help: "new, list, show, avatar or delete"),
                        .positional("name", names, optional: true, help: "a username (or, for avatar, the emoji or image)"),
                        .option("--password-file", "file", .path, help: "a file whose first line is the password (for scripts; - is standard input, a pipe is read once)"),
                        .option("--avatar", "avatar", .path, help: "an emoji, or an image file"),
                        .option("--new-password-file", "new", .path, help: "for password in a script: a file whose first line is the new password")],
            summary: "create, list, show, change or delete profiles",
            details: "In a script: profile new NAME --password-file FILE [--avatar EMOJI|PATH]; "
                + "profile password --password-file OLD --new-password-file NEW") { invocation in
            let arguments = invocation.arguments
            let shell = invocation.shell
            switch arguments["action"]! {
            case "new": try self.create(arguments["name"], passwordFile: arguments["file"], avatar: arguments["avatar"], shell)
            case "list": try self.list(shell)
            case "show": try self.show(arguments["name"], shell)
            case "avatar": try self.changeAvatar(arguments["name"] ?? arguments["avatar"], shell)
            case "delete": try self.delete(arguments["name"], passwordFile: arguments["file"], shell)
            case "password": try self.changePassword(passwordFile: arguments["file"], newPasswordFile: arguments["new"], shell)
            case let other: throw UserError("unknown profile action '\(other)': new, list, show, avatar or delete")
            }
        })
        shell.register(Command(
            "login", scope: .global,
            arguments: [.positional("name", names, help: "the username"),
                        .option("--password-file", "file", .path, help: "a file whose first line is the password")],
            summary: "use a profile (asks for its password)") { invocation in
            try self.login(invocation.arguments["name"]!, passwordFile: invocation.arguments["file"], invocation.shell)
        })
        shell.register(Command("logout", scope: .global, summary: "stop using the current profile") { invocation in
            guard let current = self.current else { throw ProfileError.notLoggedIn }
            self.setCurrent(nil, invocation.shell)
            invocation.console.status("logged out of \(current.profile.handle)")
        })
    }

    // MARK: Actions

    private func create(_ givenName: String?, passwordFile: String?, avatar givenAvatar: String?, _ shell: Shell) throws {
        let store = try store(shell)
        let name = try ProfileStore.validate(name: givenName ?? shell.ask("Username:", field: "NAME"))
        if try store.profile(named: name) != nil { throw ProfileError.nameTaken(name) }
        let password: String
        if let passwordFile {
            password = try Self.readPassword(passwordFile, shell)
        } else {
            password = try Self.askNewPassword(shell)
        }
        try ProfileStore.validate(password: password)
        func parsed(_ text: String) throws -> Avatar? {
            text.trimmingCharacters(in: .whitespaces).isEmpty ? nil : try Self.avatar(from: text)
        }
        var avatar = try givenAvatar.flatMap(parsed)
        if givenAvatar == nil && shell.isInteractive {
            // An avatar that cannot be read is asked again, as a password is: the name and the
            // password typed are not lost to it.
            for attempt in 1...3 {
                let text = try shell.ask("Avatar (an emoji or an image file, Enter for none):", field: "--avatar",
                                         completions: { PathCompletion.candidates(for: $0) })
                do {
                    avatar = try parsed(text)
                    break
                } catch where attempt < 3 {
                    shell.console.printProse(shell.styler.dim("\(error); try again"))
                }
            }
        }
        let gift = shell.session.random.next() % 4 == 0
        let created = try store.create(name: name, password: password, avatar: avatar, gift: gift, now: shell.session.clock())
        setCurrent(created, shell)
        shell.console.status("created \(created.0.handle) and logged in")
    }

    /// Asks a new password twice. A password that is too short, or a confirmation that differs,
    /// is said at once and asked again (three tries), so the form never ends with the user
    /// typing the next secret at the command prompt, into the history.
    static func askNewPassword(_ shell: Shell) throws -> String {
        var lastProblem = ProfileError.passwordTooShort
        for _ in 0..<3 {
            let password = try shell.ask("New password (8 characters or more):", field: "--password-file FILE", secret: true)
            do { try ProfileStore.validate(password: password) } catch {
                lastProblem = error
                shell.console.printProse(shell.styler.dim("\(error); try again"))
                continue
            }
            if try shell.ask("Password again:", field: "--password-file FILE", secret: true) == password { return password }
            lastProblem = .passwordsDiffer
            shell.console.printProse(shell.styler.dim("the two passwords differ; try again"))
        }
        throw lastProblem
    }

    private func list(_ shell: Shell) throws {
        let profiles = try store(shell).profiles()
        guard !profiles.isEmpty else { return shell.console.print("no profiles yet: profile new") }
        for profile in profiles {
            let mark = profile.id == current?.profile.id ? "*" : " "
            let avatar = profile.avatar?.glyph(ascii: shell.capabilities.ascii) ?? " "
            shell.console.print("\(mark) \(DisplayWidth.pad(avatar, to: 2)) \(profile.handle)")
        }
    }

    private func show(_ name: String?, _ shell: Shell) throws {
        let profile: Profile
        if let name {
            guard let found = try store(shell).profile(named: name) else { throw ProfileError.noSuchProfile(name) }
            profile = found
        } else {
            guard let current else { throw ProfileError.notLoggedIn }
            profile = try store(shell).profile(named: current.profile.name) ?? current.profile
        }
        let console = shell.console
        if case .image(let image) = profile.avatar {
            for line in ImageRenderer(shell.capabilities).render(image, columns: Avatar.imageSize) { console.print(line) }
        }
        let avatar = profile.avatar.map { $0.glyph(ascii: shell.capabilities.ascii) + " " } ?? ""
        console.print(avatar + shell.styler.bold(profile.handle) + (profile.id == current?.profile.id ? "  (logged in)" : ""))
        console.print("signing key:   " + profile.signingKey.map { String(format: "%02x", $0) }.joined())
        console.print("agreement key: " + profile.agreementKey.map { String(format: "%02x", $0) }.joined())
        // The gift is private: only its owner, logged in, learns of it.
        if profile.id == current?.profile.id {
            console.print(profile.gift ? "you have the gift: spectres find you twice as often" : "you do not have the gift")
        }
    }

    private func changeAvatar(_ text: String?, _ shell: Shell) throws {
        guard let current else { throw ProfileError.notLoggedIn }
        let text = try text ?? shell.ask("Avatar (an emoji or an image file):", field: "EMOJI|PATH",
                                         completions: { PathCompletion.candidates(for: $0) })
        let avatar = try Self.avatar(from: text)
        try store(shell).setAvatar(avatar, of: current.profile)
        var profile = current.profile
        profile.avatar = avatar
        session.set((profile, current.identity))  // The same profile: observers are not told.
        shell.console.print("avatar of \(profile.handle) changed")
    }

    private func delete(_ givenName: String?, passwordFile: String?, _ shell: Shell) throws {
        let store = try store(shell)
        guard let name = givenName ?? current?.profile.name else { throw ProfileError.notLoggedIn }
        guard let profile = try store.profile(named: name) else { throw ProfileError.noSuchProfile(name) }
        _ = try unlock(profile, passwordFile: passwordFile, store: store, shell)
        try store.delete(profile)
        if current?.profile.id == profile.id { setCurrent(nil, shell) }
        shell.console.print("deleted \(profile.handle)")
    }

    /// `profile password`: the current password checked (with login's delays), the new one
    /// asked twice (or read), the keys sealed again; the profile stays logged in.
    private func changePassword(passwordFile: String?, newPasswordFile: String?, _ shell: Shell) throws {
        guard let current else { throw ProfileError.notLoggedIn }
        let store = try store(shell)
        guard let profile = try store.profile(named: current.profile.name) else { throw ProfileError.noSuchProfile(current.profile.name) }
        let identity = try unlock(profile, passwordFile: passwordFile, store: store, shell)
        let password = try newPasswordFile.map { try Self.readPassword($0, shell) } ?? Self.askNewPassword(shell)
        try store.changePassword(of: profile, identity: identity, to: password)
        shell.console.print("\(profile.handle)'s password is changed: the old one opens nothing from now on")
    }

    private func login(_ name: String, passwordFile: String?, _ shell: Shell) throws {
        let store = try store(shell)
        guard let profile = try store.profile(named: name) else { throw Self.noProfile(name, existing: try store.profiles()) }
        let identity = try unlock(profile, passwordFile: passwordFile, store: store, shell)
        setCurrent((profile, identity), shell)
        shell.console.status("logged in as \(profile.handle)")
    }

    /// `login NAME` where no profile has that name: the names there are, and how to make it.
    static func noProfile(_ name: String, existing: [Profile]) -> UserError {
        let made = Advice.command("profile new " + Tokenizer.quote(name)) + " makes one"
        guard !existing.isEmpty else { return UserError("there is no profile here yet: " + made) }
        let names = Wording.list(existing.map { "'\($0.name)'" }, "and")
        return UserError("there is no profile named '\(name)' (there \(existing.count == 1 ? "is" : "are") \(names)); " + made)
    }

    /// Asks for (or reads) the password and unlocks the keys; after wrong passwords every
    /// attempt waits longer before it is answered (see `ProfileStore.unlock`).
    private func unlock(_ profile: Profile, passwordFile: String?, store: ProfileStore, _ shell: Shell) throws -> Identity {
        let password = try passwordFile.map { try Self.readPassword($0, shell) }
            ?? shell.ask("Password for \(profile.name):", field: "--password-file FILE", secret: true)
        return try store.unlock(profile, password: password, now: shell.session.clock(), wait: sleep)
    }

    /// The first line of a password file.
    static func readPassword(_ path: String, _ shell: Shell) throws -> String {
        try PasswordFile.read(path, standardInputIsCommands: shell.standardInputIsCommands)
    }

    static func avatar(from text: String) throws -> Avatar {
        if let emoji = Avatar.emoji(from: text) { return emoji }
        let path = text.trimmingCharacters(in: .whitespaces)
        do {
            return Avatar.image(from: try ImageDecoder.decode(try ImageDecoder.readFile(path)))
        } catch {
            throw ProfileError.badAvatar("'\(text)' is neither one emoji nor a readable image (\(error))")
        }
    }
}
