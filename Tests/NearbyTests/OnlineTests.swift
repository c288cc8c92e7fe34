import Foundation
import Nearby
import Runtime
import Storage
import Testing
import TestWorld

@Suite struct OnlineTests {
    /// A shell gone offline lets go of everything it was online with: the features register
    /// readers, rules, observers and alarms with what they hold, and going offline takes them
    /// back, so a long-running seance that goes online and offline does not keep an engine and
    /// a database each time (test worlds kept hundreds, and their descriptors with them).
    @Test func goingOfflineFreesTheEngineAndTheDatabase() throws {
        weak var engine: Engine?, otherEngine: Engine?
        weak var database: SeanceDatabase?
        weak var scheduler: ManualScheduler?
        weak var network: MemoryNetwork?
        do {
            let world = try ChatWorld([("ann", .human), ("ben", .human)])
            world.step(3)
            try #require(world.nodes[0].service.peer(world.nodes[1].identity.signingPublicKey) != nil)
            (engine, otherEngine, database) = (world.nodes[0].engine, world.nodes[1].engine, world.nodes[0].database)
            (scheduler, network) = (world.scheduler, world.network)
        }
        #expect(engine == nil && otherEngine == nil && database == nil)
        #expect(scheduler == nil && network == nil)
    }
}
