import Nearby
import Glibc
import TestWorld
import Testing
@testable import Chat

@Suite struct PlaneTests {
    @Test(arguments: [(100, Plane.human), (51, .human), (50, .dying), (26, .dying), (25, .hollow), (11, .hollow),
                      (10, .undead), (6, .undead), (5, .ghost), (0, .ghost)])
    func levelsAtTheirBoundaries(level: Int, plane: Plane) {
        #expect(Plane(batteryLevel: level) == plane)
    }

    /// The table of SPEC §4, row = the one acting, column = the one reached: all 25 pairs.
    @Test func visibilityTable() {
        let table: [Plane: String] = [
            .human: "✓✕✕✕✕",
            .dying: "✕✓✕✕✕",
            .hollow: "✕✓✓✕✕",
            .undead: "✕✓✓✓✓",
            .ghost: "✓✓✓✓✓",
        ]
        for actor in Plane.allCases {
            let row = Array(table[actor]!)
            for (column, reached) in Plane.allCases.enumerated() {
                #expect(actor.canReach(reached) == (row[column] == "✓"), "\(actor) → \(reached)")
            }
        }
    }

    @Test func theTableIsOneWay() {
        #expect(Plane.hollow.canReach(.dying))
        #expect(!Plane.dying.canReach(.hollow))
        #expect(Plane.ghost.canReach(.human) && !Plane.human.canReach(.ghost))
    }
}

@Suite struct BatteryTests {
    /// A fake /sys/class/power_supply in a temporary directory.
    func fakeSysfs(_ supplies: [String: [String: String]]) -> String {
        let root = temporaryDirectory("sysfs")
        for (name, files) in supplies {
            mkdir(root + "/" + name, 0o755)
            for (file, text) in files {
                let fd = open(root + "/" + name + "/" + file, O_WRONLY | O_CREAT, 0o644)
                _ = Array((text + "\n").utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                close(fd)
            }
        }
        return root
    }

    @Test func readsTheBatteryAndIgnoresTheAdapter() {
        let root = fakeSysfs(["AC": ["type": "Mains", "online": "1"],
                              "BAT0": ["type": "Battery", "capacity": "42", "status": "Discharging"]])
        defer { removeDirectory(root) }
        #expect(SysfsBattery(root: root).read() == BatteryReading(level: 42, charging: false, source: .battery))
    }

    @Test func averagesSeveralBatteriesAndSeesCharging() {
        let root = fakeSysfs(["BAT0": ["type": "Battery", "capacity": "30", "status": "Charging"],
                              "BAT1": ["type": "Battery", "capacity": "10", "status": "Discharging"]])
        defer { removeDirectory(root) }
        let reading = SysfsBattery(root: root).read()
        #expect(reading == BatteryReading(level: 20, charging: true, source: .battery))
        #expect(reading.plane == .hollow)
    }

    @Test func noBatteryMeansMainsAtFullPower() {
        let root = fakeSysfs(["AC": ["type": "Mains"]])
        defer { removeDirectory(root) }
        #expect(SysfsBattery(root: root).read() == BatteryReading(level: 100, charging: false, source: .mains))
        #expect(SysfsBattery(root: "/nonexistent").read().source == .mains)
    }

    @Test func overrideWinsUntilAuto() throws {
        let root = fakeSysfs(["BAT0": ["type": "Battery", "capacity": "80", "status": "Full"]])
        defer { removeDirectory(root) }
        let battery = Battery(source: SysfsBattery(root: root), override: 4)
        #expect(battery.reading.plane == .ghost)
        try battery.setOverride(nil)
        #expect(battery.reading == BatteryReading(level: 80, charging: true, source: .battery))
        #expect(throws: BatteryError.outOfRange(101)) { try battery.setOverride(101) }
    }
}

/// `nearby` at a terminal: a crowd that does not fit the window comes a page at a time, with a
/// count of everyone in sight; what fits (and what a script asks) comes whole.
@Suite struct NearbyPageTests {
    let rows = (1...50).map { "peer \($0)" }

    @Test func aCrowdIsPagedToTheWindow() {
        let first = NearbyCommands.nearbyPage(rows, page: 1, windowRows: 24)
        #expect(first.first == "50 in sight, page 1 of 3" && first.count == 23)
        #expect(first[1] == "peer 1" && first[21] == "peer 21" && first.last == "… 'nearby 2' shows more")
        let last = NearbyCommands.nearbyPage(rows, page: 3, windowRows: 24)
        #expect(last == ["50 in sight, page 3 of 3"] + (43...50).map { "peer \($0)" })
        #expect(NearbyCommands.nearbyPage(rows, page: 4, windowRows: 24) == ["50 in sight, 3 pages: there is no page 4"])
    }

    @Test func whatFitsOrGoesToAScriptComesWhole() {
        #expect(NearbyCommands.nearbyPage(Array(rows.prefix(20)), page: 1, windowRows: 24) == Array(rows.prefix(20)))
        #expect(NearbyCommands.nearbyPage(rows, page: 1, windowRows: .max) == rows)
    }
}
