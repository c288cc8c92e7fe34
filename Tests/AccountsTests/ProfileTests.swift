import Foundation
import Glibc
import Storage
import TestSupport
import Testing
@testable import Accounts

func temporaryStore() throws -> (ProfileStore, String) {
    let dir = temporaryDirectory("profiles")
    return (ProfileStore(database: try testDatabase(dir + "/seance.sqlite", schema: Schema([.settings] + AccountsSchema.migrations)), rounds: 1 << 10), dir)
}

@Suite struct VaultTests {
    @Test func theRightPasswordOpensTheKeys() throws {
        let identity = Identity()
        let vault = try PasswordVault.seal(identity, password: "correct horse", rounds: 1 << 10)
        let opened = try vault.open(password: "correct horse")
        #expect(opened.signingPublicKey == identity.signingPublicKey)
        #expect(opened.agreementPublicKey == identity.agreementPublicKey)
        #expect(throws: PasswordVault.Failure.wrongPassword) { try vault.open(password: "correct horsE") }
    }

    @Test func nothingSecretIsStoredInTheClear() throws {
        let identity = Identity()
        let vault = try PasswordVault.seal(identity, password: "correct horse", rounds: 1 << 10)
        let stored = vault.salt + vault.passwordHash + vault.sealedKeys
        for secret in [identity.signing.rawRepresentation, identity.agreement.rawRepresentation, Data("correct horse".utf8)] {
            #expect(stored.range(of: secret) == nil)
        }
        // Salted: the same password twice gives different hashes.
        let again = try PasswordVault.seal(identity, password: "correct horse", rounds: 1 << 10)
        #expect(again.passwordHash != vault.passwordHash)
    }

    @Test func tamperedKeysAreDamagedNotWrong() throws {
        var vault = try PasswordVault.seal(Identity(), password: "correct horse", rounds: 1 << 10)
        vault.sealedKeys[vault.sealedKeys.count - 1] ^= 1
        #expect(throws: PasswordVault.Failure.damaged) { try vault.open(password: "correct horse") }
    }

    @Test func fingerprintsAreShortAndStable() {
        let key = Data(repeating: 7, count: 32)
        #expect(Identity.fingerprint(of: key) == Identity.fingerprint(of: key))
        #expect(Identity.fingerprint(of: key).count == 4)
        #expect(Identity.fingerprint(of: key) != Identity.fingerprint(of: Data(repeating: 8, count: 32)))
    }
}

@Suite struct ProfileStoreTests {
    @Test func usernames() throws {
        #expect(try ProfileStore.validate(name: "  alice ") == "alice")
        #expect(try ProfileStore.validate(name: String(repeating: "x", count: 32)).count == 32)
        #expect(throws: ProfileError.badName("it is empty")) { try ProfileStore.validate(name: " ") }
        #expect(throws: ProfileError.badName("it has more than 32 characters")) { try ProfileStore.validate(name: String(repeating: "x", count: 33)) }
        #expect(throws: ProfileError.badName("it contains control characters")) { try ProfileStore.validate(name: "a\u{7}b") }
        #expect(throws: ProfileError.self) { try ProfileStore.validate(name: "a#b") }
        #expect(try ProfileStore.validate(name: "Ünïcode 👻") == "Ünïcode 👻")
    }

    @Test func createUniqueAndUnlock() throws {
        let (store, dir) = try temporaryStore()
        defer { removeDirectory(dir) }
        let (alice, identity) = try store.create(name: "alice", password: "password1", avatar: .emoji("👻"), gift: true, now: 5)
        #expect(alice.handle == "alice#" + identity.fingerprint)
        #expect(alice.avatar == .emoji("👻") && alice.gift && alice.createdAt == 5)
        #expect(throws: ProfileError.nameTaken("ALICE")) { try store.create(name: "ALICE", password: "password2", avatar: nil, gift: false, now: 6) }
        #expect(throws: ProfileError.passwordTooShort) { try store.create(name: "bob", password: "1234567", avatar: nil, gift: false, now: 6) }
        let unlocked = try store.unlock(alice, password: "password1", now: 0)
        #expect(unlocked.signingPublicKey == identity.signingPublicKey)
    }

    @Test func failuresAreCountedAndReset() throws {
        let (store, dir) = try temporaryStore()
        defer { removeDirectory(dir) }
        let (alice, _) = try store.create(name: "alice", password: "password1", avatar: nil, gift: false, now: 0)
        for _ in 0..<3 { #expect(throws: ProfileError.wrongPassword) { try store.unlock(alice, password: "nope nope", now: 0) } }
        #expect(try store.profile(named: "alice")?.failedLogins == 3)
        _ = try store.unlock(alice, password: "password1", now: 100)
        #expect(try store.profile(named: "alice")?.failedLogins == 0)
    }

    /// Every attempt waits for its slot, right or wrong, so how long an answer takes says
    /// nothing; the slot is booked before the check, so an attempt killed while it waits still
    /// counts; attempts made at the same moment (parallel processes) queue behind each other.
    @Test func everyAttemptWaitsForItsSlotBookedBeforeTheCheck() throws {
        let (store, dir) = try temporaryStore()
        defer { removeDirectory(dir) }
        let (alice, _) = try store.create(name: "alice", password: "password1", avatar: nil, gift: false, now: 0)
        var waits: [Double] = []
        // Six wrong guesses all made at t = 10: each waits behind the one before.
        for _ in 0..<6 {
            #expect(throws: ProfileError.wrongPassword) {
                try store.unlock(alice, password: "guess guess", now: 10) { waits.append($0) }
            }
        }
        #expect(waits == [0.5, 1.5, 3.5, 7.5])  // 0, 0, then 0.5, 1, 2, 4 added up.
        // An attempt whose waiting is cut short (the process killed): its failure is on disk.
        struct Killed: Error {}
        #expect(throws: Killed.self) { try store.unlock(alice, password: "password1", now: 10) { _ in throw Killed() } }
        #expect(try store.profile(named: "alice")?.failedLogins == 7)
        // The right password waits its turn like a wrong one, then clears everything.
        waits = []
        _ = try store.unlock(alice, password: "password1", now: 10) { waits.append($0) }
        #expect(waits == [23.5])  // 7.5, + 8 after the sixth, + 8 after the seventh (killed).
        #expect(try store.profile(named: "alice")?.failedLogins == 0)
        waits = []
        _ = try store.unlock(alice, password: "password1", now: 11) { waits.append($0) }
        #expect(waits.isEmpty)
    }

    @Test func theDelayGrows() {
        #expect(ProfileStore.delay(afterFailures: 1) == 0)
        #expect(ProfileStore.delay(afterFailures: 2) == 0.5)
        #expect(ProfileStore.delay(afterFailures: 3) == 1)
        #expect(ProfileStore.delay(afterFailures: 5) == 4)
        #expect(ProfileStore.delay(afterFailures: 50) == 8)
    }

    @Test func avatars() throws {
        #expect(Avatar.emoji(from: "👻") == .emoji("👻"))
        #expect(Avatar.emoji(from: " 🚶‍♂️ ") == .emoji("🚶‍♂️"))
        #expect(Avatar.emoji(from: "❤️") == .emoji("❤️"))
        #expect(Avatar.emoji(from: "a") == nil)
        #expect(Avatar.emoji(from: "👻👻") == nil)
        let (store, dir) = try temporaryStore()
        defer { removeDirectory(dir) }
        let (bob, _) = try store.create(name: "bob", password: "password1", avatar: nil, gift: false, now: 0)
        let picture = Avatar.image(from: .init(width: 2, height: 2, pixels: [UInt8](repeating: 200, count: 16)))
        try store.setAvatar(picture, of: bob)
        #expect(try store.profile(named: "bob")?.avatar == picture)
    }
}

@Suite struct LoginSessionTests {
    /// A purchase asks the password again: the same check and delay as a login.
    @Test func reauthenticationChecksThePasswordOfWhoIsLoggedIn() throws {
        let (store, dir) = try temporaryStore()
        defer { removeDirectory(dir) }
        let session = LoginSession()
        var told = 0
        session.onChange.append { told += 1 }
        #expect(throws: ProfileError.notLoggedIn) { try session.reauthenticate(password: "password1", store: store, now: 0) }
        let created = try store.create(name: "ann", password: "password1", avatar: nil, gift: false, now: 0)
        session.set(created)
        session.set(created)  // The same profile again: nobody is told twice.
        #expect(told == 1)
        #expect(throws: ProfileError.wrongPassword) { try session.reauthenticate(password: "nope nope", store: store, now: 1) }
        #expect(try session.reauthenticate(password: "password1", store: store, now: 2).identity.signingPublicKey
                    == created.1.signingPublicKey)
        session.set(nil)
        #expect(told == 2 && session.current == nil)
    }
}
