import Crypto
import Foundation

/// One shell's network layer, assembled: the engine's one alarm (`Deadlines`), the router with
/// its gate and sessions, the directory of peers, and presence (with its questions and
/// avatars) as the first owner of kinds. `Online` makes one each time the user goes online;
/// tests and the fuzzer make one for a peer of their own.
package final class NearbyNode: Sendable {
    package let engine: Engine
    package let deadlines: Deadlines
    package let directory: PeerDirectory
    package let router: Router
    package let presence: Presence

    /// On the engine: every piece registers its kinds and deadlines there.
    ///
    /// - Parameters:
    ///   - transports: the preferred first; the same frames go out on each.
    ///   - announcement: what we announce; its interval, keys and version are filled in.
    ///   - ownAvatarPixels: the 16x16 RGBA avatar to hand out when asked, if it is an image.
    ///   - onEvent: told (on the engine) of every arrival, change and departure, and of what
    ///     the network notices (a flood, an older seance, a transport down).
    package init(transports: [Transport], timing: PresenceTiming, identity: Identity, announcement: Announcement,
                 ownAvatarPixels: Data? = nil, deadlines: Deadlines, random: SeededRandom = SeededRandom(),
                 sessionTiming: SessionTiming = SessionTiming(), floodLimits: FloodLimits.Settings = FloodLimits.Settings(),
                 onEvent: @escaping @Sendable (PresenceEvent) -> Void) {
        engine = deadlines.engine
        engine.assertCurrent()
        self.deadlines = deadlines
        directory = PeerDirectory(timing: timing, engine: engine)
        // A copy of the generator, so that presence's own draws stay what they were.
        var sequences = random
        router = Router(transports: transports, timing: timing, identity: identity, directory: directory, deadlines: deadlines,
                        sessionTiming: sessionTiming, floodLimits: floodLimits,
                        firstSequence: UInt32(truncatingIfNeeded: sequences.next() >> 32), onEvent: onEvent)
        presence = Presence(router: router, directory: directory, deadlines: deadlines, announcement: announcement,
                            agreementKey: identity.agreementPublicKey, ownAvatarPixels: ownAvatarPixels, random: random, onEvent: onEvent)
        router.announcing { [unowned presence] in presence.announcement }
    }

    /// Starts every transport, then announcing and the alarm. When a transport cannot start,
    /// those already started are stopped again and the error is thrown. From the shell's thread.
    package func start() throws {
        try router.startTransports()
        engine.sync {
            router.open()
            presence.start()
            deadlines.start()
        }
    }

    /// Says goodbye and stops the transports, but leaves the alarm to the features: for
    /// simulating many hours of a feature alone (tests). From the shell's thread.
    package func silence() {
        engine.sync {
            presence.stop()
            router.close()
        }
        router.stopTransports()
    }

    /// Says goodbye and stops the transports, and lets go of the features' readers and alarms
    /// (they hold the features, which hold this). Safe to call twice. From the shell's thread.
    package func stop() {
        let wasOpen = engine.sync { () -> Bool in
            let wasOpen = router.isOpen
            deadlines.stop()
            // The mailbox's session outlives us: it listens, while we are away, on every topic
            // mail may come on, a conversation begun a moment ago included.
            router.post.mailChanged()
            router.post.check(now: engine.now)
            if wasOpen {
                presence.stop()
                router.close()
            }
            router.release()
            return wasOpen
        }
        if wasOpen { router.stopTransports() }
    }
}
