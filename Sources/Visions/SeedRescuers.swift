import Foundation

/// The rescuers a new database starts with: the series' main characters, described in the
/// project's own words, with the project's own pixel-art portraits.
enum SeedRescuers {
    static let all: [(name: String, description: String)] = [
        ("Mike", "The friend who never stops looking for Will and keeps the party together. "
            + "He draws the plans, gives the speeches, and refuses to call anyone lost."),
        ("Eleven", "A girl who escaped the lab with powers she is still learning to control. "
            + "She can find people in the dark, and she can shut a door that should never have opened."),
        ("Dustin", "Curious, loud and loyal, he knows a little about everything and a lot about science. "
            + "He reaches the others by radio when nobody else can."),
        ("Lucas", "The practical one of the party, with a slingshot and a scout's eye. "
            + "He asks the hard questions, then goes anyway."),
        ("Max", "A skateboarder who arrived as the new kid and stayed as family. "
            + "Fast, stubborn and braver than she lets anyone see."),
        ("Joyce", "Will's mother, who believed the lights when no one believed her. "
            + "She talks to her son through a wall of Christmas bulbs and will not give up."),
        ("Hopper", "The town's police chief, tired of small crimes until a big one found him. "
            + "He follows the trail into places no map shows."),
        ("Jonathan", "Will's older brother, a quiet photographer who notices what others miss. "
            + "His pictures show the thing that hides in the woods."),
        ("Nancy", "A sharp student who turns into a fearless investigator. "
            + "She reads the files, loads the gun and walks into the Upside Down."),
        ("Steve", "The popular boy who becomes the best babysitter in Hawkins. "
            + "He brings a nail-studded bat and keeps the kids alive."),
    ]

    /// The portrait of `name` as PNG bytes.
    static func portrait(_ name: String) -> Data? {
        SeedPortraits.png[name].flatMap { Data(base64Encoded: $0) }
    }
}
