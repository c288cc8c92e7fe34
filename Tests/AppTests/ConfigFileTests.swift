import Nearby
import Testing
@testable import App

@Suite struct ConfigFileTests {
    @Test func readsKeysAndComments() throws {
        let settings = try ConfigFile.parse("""
            # chat settings
            group = 239.1.2.3
            port=5000   # a comment after a value
            interface = eth0, wlan0

            announce-interval = 2.5
            """, path: "seance.conf")
        #expect(settings == NearbySettings(group: "239.1.2.3", port: 5000, interfaces: ["eth0", "wlan0"], announceInterval: 2.5))
    }

    @Test func namesTheBadLine() {
        #expect(throws: SettingsError(description: "seance.conf:2: port must be a number")) {
            try ConfigFile.parse("group = 239.1.1.1\nport = many\n", path: "seance.conf")
        }
        #expect(throws: SettingsError(description: "seance.conf:1: unknown setting 'colour' (group, port, interface, announce-interval)")) {
            try ConfigFile.parse("colour = red", path: "seance.conf")
        }
        #expect(throws: SettingsError(description: "seance.conf:1: expected 'key = value'")) {
            try ConfigFile.parse("just words", path: "seance.conf")
        }
    }

    @Test func flagsWinOverTheFileOverDefaults() throws {
        let file = NearbySettings(group: "239.9.9.9", port: 6000, announceInterval: 2)
        let resolved = try ConfigFile.resolve(flags: NearbySettings(port: 7000), file: file)
        #expect(resolved.group == "239.9.9.9" && resolved.port == 7000 && resolved.timing.interval == 2)
        let defaults = try ConfigFile.resolve(flags: NearbySettings(), file: NearbySettings())
        #expect(defaults.group == "239.255.77.77" && defaults.port == 47_777 && defaults.timing.interval == 5)
        #expect(defaults.interfaces == nil)
    }

    @Test func valuesAreChecked() {
        #expect(throws: SettingsError.self) { try ConfigFile.resolve(flags: NearbySettings(group: "198.18.0.1"), file: NearbySettings()) }
        #expect(throws: SettingsError.self) { try ConfigFile.resolve(flags: NearbySettings(port: 0), file: NearbySettings()) }
        #expect(throws: SettingsError.self) { try ConfigFile.resolve(flags: NearbySettings(announceInterval: 0.001), file: NearbySettings()) }
    }
}
