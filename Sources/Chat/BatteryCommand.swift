import Nearby
import Shell
import Terminal

/// `battery [PCT|auto]`: shows the level, charging state and plane, or sets a pretend level
/// (announced at once when online).
struct BatteryCommand {
    let online: Online

    func register(in shell: Shell) {
        let battery = online.battery
        let choices = [Candidate("auto", "return to the real reading"), Candidate("100", "Human"),
                       Candidate("40", "Dying"), Candidate("20", "Hollow"), Candidate("8", "Undead"), Candidate("3", "Ghost")]
        shell.register(Command("battery", scope: .global,
                               arguments: [.positional("level", .choice(choices), optional: true,
                                                       help: "a percentage from 0 to 100, or 'auto'")],
                               summary: "show the battery and your plane, or pretend a level",
                               details: "Planes: above 50 % Human, 26-50 Dying, 11-25 Hollow, 6-10 Undead, 5 and below Ghost.") { invocation in
            if let text = invocation.arguments["level"] {
                if text.lowercased() == "auto" {
                    try battery.setOverride(nil)
                } else {
                    guard let level = Int(text.hasSuffix("%") ? String(text.dropLast()) : text) else {
                        throw BatteryError.notALevel(text)
                    }
                    try battery.setOverride(level)
                }
                online.batteryChanged()
            }
            invocation.console.print(Self.describe(battery.reading, styler: invocation.shell.styler))
        })
    }

    static func describe(_ reading: BatteryReading, styler: Styler) -> String {
        let state: String
        switch reading.source {
        case .battery: state = reading.charging ? "charging" : "on battery"
        case .mains: state = "mains power, no battery found"
        case .override: state = "set by you; '\(Advice.command("battery auto"))' reads the real one"
        }
        return "battery: \(reading.level) % (\(state))  plane: " + styler.bold(reading.plane.name)
    }
}
