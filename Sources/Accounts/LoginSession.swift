import Runtime

/// Who is logged in to this shell, with their unlocked keys. Every feature that acts as the
/// user (chat announces them, the store signs their receipts) asks here.
package final class LoginSession {
    package typealias Login = (profile: Profile, identity: Identity)

    /// The profile in use and its unlocked keys.
    package private(set) var current: Login?
    /// Told when the profile in use changes or goes (chat then goes offline: it announced that one).
    package var onChange: [() -> Void] = []

    package init() {}

    /// Waits out a login delay (the `wait` of `ProfileStore.unlock`); tests put their own.
    package static func sleep(_ seconds: Double) { SystemTime.sleep(seconds) }

    /// Makes `login` current (nil: logs out), telling the observers when that changes who it is.
    package func set(_ login: Login?) {
        let changed = login?.profile.id != current?.profile.id
        current = login
        if changed { onChange.forEach { $0() } }
    }

    /// The logged-in user confirms it is them (before a purchase): the password is checked
    /// with the same booked, growing delay as a login, and a wrong one changes nothing else.
    package func reauthenticate(password: String, store: ProfileStore, now: Double,
                               wait: (Double) throws -> Void = { _ in }) throws -> Login {
        guard let current else { throw ProfileError.notLoggedIn }
        let identity = try store.unlock(current.profile, password: password, now: now, wait: wait)
        return (current.profile, identity)
    }
}
