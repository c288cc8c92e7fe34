import Nearby
import Testing
@testable import App

@Suite struct ConfigFileTests {
    /// Issue 52's `notify` keeps its choice: the key's line changed in place, comments and
    /// the other lines kept; a file without it gets it at the end, and reads back.
    @Test func aSettingIsKeptInPlace() throws {
        let text = "# mine\nnotify = bell   # loud\nport = 5000\n"
        #expect(ConfigFile.setting("notify", to: "off", in: text) == "# mine\nnotify = off\nport = 5000\n")
        #expect(ConfigFile.setting("notify", to: "desktop", in: "port = 5000") == "port = 5000\nnotify = desktop\n")
        #expect(ConfigFile.setting("notify", to: "off", in: "") == "notify = off\n")
        let values = try ConfigFile.parse(ConfigFile.setting("notify", to: "desktop", in: text), path: "seance.conf")
        #expect(values["notify"] == ["desktop"] && values["port"] == ["5000"])
    }

    @Test func readsKeysAndComments() throws {
        let values = try ConfigFile.parse("""
            # chat settings
            group = 239.1.2.3
            port=5000   # a comment after a value
            interface = eth0, wlan0

            announce-interval = 2.5
            """, path: "seance.conf")
        #expect(values == SettingValues([("group", "239.1.2.3"), ("port", "5000"), ("interface", "eth0"), ("interface", "wlan0"),
                                         ("announce-interval", "2.5")]))
        let resolved = try Settings.resolve(flags: SettingValues(), file: values)
        #expect(resolved.lan.group == "239.1.2.3" && resolved.lan.port == 5000 && resolved.lan.interfaces == ["eth0", "wlan0"])
        #expect(resolved.timing.interval == 2.5)
    }

    @Test func namesTheBadLine() {
        #expect(throws: SettingsError(description: "seance.conf:2: port must be a number, not 'many'")) {
            try ConfigFile.parse("group = 239.1.1.1\nport = many\n", path: "seance.conf")
        }
        #expect(throws: SettingsError(description: "seance.conf:1: unknown setting 'colour' (group, port, interface, announce-interval, broker, broker-ca, broker-prefix, linger, conversation, notify, notify-text, no-lan)")) {
            try ConfigFile.parse("colour = red", path: "seance.conf")
        }
        #expect(throws: SettingsError(description: "seance.conf:1: expected 'key = value'")) {
            try ConfigFile.parse("just words", path: "seance.conf")
        }
    }

    @Test func flagsWinOverTheFileOverDefaults() throws {
        let file = SettingValues([("group", "239.9.9.9"), ("port", "6000"), ("announce-interval", "2")])
        let resolved = try Settings.resolve(flags: SettingValues([("port", "7000")]), file: file)
        #expect(resolved.lan.group == "239.9.9.9" && resolved.lan.port == 7000 && resolved.timing.interval == 2)
        let defaults = try Settings.resolve(flags: SettingValues(), file: SettingValues())
        #expect(defaults.lan.group == "239.255.77.77" && defaults.lan.port == 47_777 && defaults.timing.interval == 5)
        #expect(defaults.lan.interfaces == nil && defaults.conversationLayout == .bubbles)
        let compact = try Settings.resolve(flags: SettingValues(), file: try ConfigFile.parse("conversation = Compact", path: "seance.conf"))
        #expect(compact.conversationLayout == .compact)
    }

    /// The same check whichever source a value comes from.
    @Test func valuesAreChecked() {
        for (key, value) in [("group", "198.18.0.1"), ("group", "239.1.1"), ("port", "0"), ("port", "x"), ("announce-interval", "0.001"),
                             ("linger", "-1"), ("linger", "soon"), ("linger", "nan"), ("conversation", "irc"),
                             ("notify", "loud"), ("notify-text", "maybe")] {
            #expect(throws: SettingsError.self) { try Settings.resolve(flags: SettingValues([(key, value)]), file: SettingValues()) }
            #expect(throws: SettingsError.self) { try ConfigFile.parse("\(key) = \(value)", path: "seance.conf") }
        }
    }

    /// The bell by default; a desktop notification, with the text only when asked; or nothing.
    @Test func notificationSettings() throws {
        let defaults = try Settings.resolve(flags: SettingValues(), file: SettingValues())
        #expect(defaults.notify == .bell && !defaults.notifyText)
        let file = try ConfigFile.parse("notify = Desktop\nnotify-text = yes\n", path: "seance.conf")
        let desktop = try Settings.resolve(flags: SettingValues(), file: file)
        #expect(desktop.notify == .desktop && desktop.notifyText)
        let silenced = try Settings.resolve(flags: SettingValues([("notify", "off")]), file: file)
        #expect(silenced.notify == .off)
        #expect(throws: SettingsError(description: "--notify must be bell, desktop or off, not 'loud'", fromFlag: true)) {
            try Settings.resolve(flags: SettingValues([("notify", "loud")]), file: SettingValues())
        }
    }

    /// Every setting's help says what it is; a default, where there is one, is the real one.
    @Test func helpComesFromTheDeclaration() throws {
        #expect(Settings.all.map(\.key) == ["group", "port", "interface", "announce-interval", "broker", "broker-ca", "broker-prefix", "linger",
                                             "conversation", "notify", "notify-text", "no-lan"])
        #expect(try #require(Settings.named("linger")).help.contains("default 2)"))
        #expect(try #require(Settings.named("port")).help.contains("47777"))
        #expect(try #require(Settings.named("announce-interval")).help.contains("default 5)"))
    }

    /// The broker's settings, from either source, and what only makes sense together.
    @Test func brokerSettings() throws {
        let file = try ConfigFile.parse("broker = mqtts://ann:secret@198.18.0.1\nbroker-ca = /etc/ca.pem\nbroker-prefix = town\nno-lan = yes\n",
                                        path: "seance.conf")
        let resolved = try Settings.resolve(flags: SettingValues(), file: file)
        #expect(resolved.mqtt?.address.description == "mqtts://ann:***@198.18.0.1:8883")
        #expect(resolved.mqtt?.caFile == "/etc/ca.pem" && resolved.mqtt?.prefix == "town/" && !resolved.lanEnabled)
        #expect(try Settings.resolve(flags: SettingValues(), file: SettingValues()).mqtt == nil)
        #expect(throws: SettingsError(description: "broker-ca is for an mqtts:// broker")) {
            try Settings.resolve(flags: SettingValues([("broker", "mqtt://h"), ("broker-ca", "/ca.pem")]), file: SettingValues())
        }
        #expect(throws: SettingsError.self) { try Settings.resolve(flags: SettingValues([("no-lan", "yes")]), file: SettingValues()) }
        #expect(throws: SettingsError.self) { try ConfigFile.parse("broker-prefix = a/+/b", path: "seance.conf") }
        do {
            _ = try Settings.resolve(flags: SettingValues([("broker", "mqtt://ann:secret@h:99999")]), file: SettingValues())
            Issue.record("a bad port was taken")
        } catch {
            #expect(error.description.hasPrefix("--broker: ") && !error.description.contains("secret"), "\(error)")
        }
    }
}
