import Chat
import Curses
import Foundation
import Nearby
import TestWorld
import Testing
@testable import Spectres

@Suite struct SpectreScheduleTests {
    /// Over many simulated gaps the mean is ten minutes, five with the gift.
    @Test func gapsAverageTenMinutesAndFiveWithTheGift() {
        var random = SeededRandom(seed: 11)
        let plain = (0..<20_000).map { _ in SpectreSchedule.gap(gift: false, using: &random) }
        let gifted = (0..<20_000).map { _ in SpectreSchedule.gap(gift: true, using: &random) }
        let mean = plain.reduce(0, +) / Double(plain.count), giftMean = gifted.reduce(0, +) / Double(gifted.count)
        #expect(abs(mean - 600) < 600 * 0.03, "mean \(mean)")
        #expect(abs(giftMean - 300) < 300 * 0.03, "gift mean \(giftMean)")
        #expect(plain.allSatisfy { $0 > 0 })
    }

    /// The whole feature on a manual clock, online for 200 simulated hours: about six spectres an
    /// hour, and twice as many for a profile with the gift.
    @Test func theGiftDoublesTheSpectresOverManySimulatedHours() throws {
        let world = try ChatWorld([("will", .human), ("eleven", .human)], gifted: ["eleven"], seed: 3, network: false)
        let (will, eleven) = (world.nodes[0], world.nodes[1])
        for _ in 0..<(200 * 60) { world.step(60) }
        let plain = Double(will.spectres.arrivals), gifted = Double(eleven.spectres.arrivals)
        #expect(abs(plain / 200 - 6) < 0.6, "\(plain) in 200 h")
        #expect(abs(gifted / plain - 2) < 0.25, "\(gifted) with the gift against \(plain)")
    }

    /// Spectres come to the living only, appear in the list as local peers, and fade.
    @Test func aSpectreComesLingersAndFades() throws {
        let world = try ChatWorld([("will", .human), ("nancy", .dying)], seed: 4)
        let (will, nancy) = (world.nodes[0], world.nodes[1])
        var waited = 0.0
        while will.spectres.present().isEmpty, waited < 36_000 { world.step(10); waited += 10 }
        let spectre = try #require(will.spectres.present().first)
        #expect(spectre.kind == "spectre")
        #expect(will.notices().contains { $0.contains("\(spectre.name) drifts into sight") })
        #expect(nancy.spectres.present().isEmpty && nancy.spectres.arrivals == 0, "none for the Dying")
        world.step(SpectreSchedule.lingering.upperBound + 1)
        #expect(!will.spectres.present().contains { $0.name == spectre.name } || will.spectres.arrivals > 1)
        #expect(will.notices().contains { $0.contains("\(spectre.name) fades away") })
        #expect(spectre.answer("how many ghosts are near?") == nil, "a faded spectre says nothing")
    }
}

@Suite struct SpectreMindTests {
    @Test func plainQuestionsFindTheirTopic() {
        #expect(SpectreMind.topic(of: "How many ghosts are nearby?") == .ghosts)
        #expect(SpectreMind.topic(of: "are there any dead around here") == .ghosts)
        #expect(SpectreMind.topic(of: "What is the afterlife like?") == .afterlife)
        #expect(SpectreMind.topic(of: "what happens when you die") == .afterlife)
        #expect(SpectreMind.topic(of: "teach me a spell") == .spell)
        #expect(SpectreMind.topic(of: "nice weather") == .other)
        #expect(SpectreMind.topic(of: "hello") == .other, "whole words: hello is not hell")
    }

    @Test func answersSayWhatTheyKnow() {
        var random = SeededRandom(seed: 1)
        #expect(SpectreMind.answer("how many ghosts?", ghosts: 3, using: &random).text.hasPrefix("3 ghosts"))
        #expect(SpectreMind.answer("how many ghosts?", ghosts: 0, using: &random).text.hasPrefix("No ghost"))
        #expect(Lore.afterlife.contains(SpectreMind.answer("what is the afterlife like", ghosts: 0, using: &random).text))
        let spell = SpectreMind.answer("a spell, please", ghosts: 0, using: &random)
        #expect(spell.spell.map(Spells.phrases.contains) == true)
        #expect(SpectreMind.answer("hello", ghosts: 0, using: &random).text.contains("how many ghosts are near"))
    }

    /// The count is of every Ghost peer in range, seen or not: a Human cannot see a Ghost.
    @Test func theCountIsTheRealOne() throws {
        let world = try ChatWorld([("will", .human), ("ghost", .ghost), ("other", .ghost), ("mike", .human)], seed: 4)
        let will = world.nodes[0]
        var waited = 0.0
        while will.spectres.present().isEmpty, waited < 36_000 { world.step(10); waited += 10 }
        let spectre = try #require(will.spectres.present().first)
        #expect(spectre.answer("how many ghosts are near me?") == "2 ghosts are near you. They know you are here.")
    }

    /// The lore the spectres speak is the project's text in assets/ (make_lore.py writes it).
    @Test func theLoreMatchesItsAssets() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        func lines(_ name: String) throws -> [String] {
            try String(contentsOf: root.appendingPathComponent("assets/afterlife/" + name), encoding: .utf8)
                .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && !$0.hasPrefix("#") }
        }
        #expect(try lines("spectres.txt") == Lore.names)
        #expect(try lines("afterlife.txt") == Lore.afterlife)
        #expect(try lines("spells.txt") == Spells.phrases)
    }
}
