// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "seance",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "seance", targets: ["seance"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.0.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
    ],
    targets: [
        // libedit through a system library target; shim.h wraps its variadic calls.
        .systemLibrary(name: "CEditLine", pkgConfig: "libedit", providers: [.apt(["libedit-dev"])]),
        .systemLibrary(name: "CQREncode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
        // libmosquitto (Debian libmosquitto-dev), the MQTT client: its header, and calls that load
        // it on first use (it brings libssl and libcrypto, which every start-up would pay for).
        .target(name: "CMosquitto", linkerSettings: [.linkedLibrary("dl")]),
        // stb_image from Debian's libstb-dev, compiled once in this target.
        .target(name: "CStbImage"),
        .target(name: "Terminal", dependencies: ["CStbImage", "CQREncode", "Runtime"]),
        // SQLite's process-wide settings (sqlite3_config is variadic: C only).
        .target(name: "CSQLiteSetup", linkerSettings: [.linkedLibrary("sqlite3")]),
        .target(name: "Storage", dependencies: ["Runtime", "CSQLiteSetup", .product(name: "GRDB", package: "GRDB.swift"),
                                                .product(name: "GRDBSQLite", package: "GRDB.swift")]),
        .target(name: "Shell", dependencies: ["CEditLine", "Terminal", "Storage", "Runtime"]),
        .target(name: "Zombies", dependencies: ["Shell", "Terminal", "Storage", .product(name: "GRDB", package: "GRDB.swift")]),
        .target(name: "Visions", dependencies: ["Shell", "Terminal", "Storage", .product(name: "GRDB", package: "GRDB.swift")]),
        // One clock and one scheduler for everything that waits (a manual one in tests).
        .target(name: "Runtime"),
        // The signed frame codec, name rules, fingerprints and message sealing: what any
        // transport and any feature agree on, with no sockets and no storage.
        .target(name: "Wire", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),
        // The Noise Protocol Framework's handshake and ciphers (Noise_XX_25519_ChaChaPoly_SHA256)
        // on swift-crypto's primitives, in the specification's own vocabulary: sessions use it. Its
        // cipher calls the BoringSSL inside swift-crypto (CCryptoBoringSSL) with the key set up once.
        .target(name: "Noise", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),
        // Signal's X3DH key agreement, in its specification's vocabulary: mail's forward secrecy.
        .target(name: "X3DH", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),
        // Profiles, their sealed keys and login: what the store needs, without the network.
        .target(name: "Accounts", dependencies: [
            "Runtime", "Wire", "Storage", "Terminal",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "_CryptoExtras", package: "swift-crypto"),
        ]),
        // The local network as a transport: UDP multicast and unicast on swift-nio, bytes only.
        .target(name: "LAN", dependencies: [
            "Runtime", "Wire",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
        ]),
        // A broker as a transport: MQTT 3.1.1 through libmosquitto, bytes only.
        .target(name: "MQTT", dependencies: ["Runtime", "Wire", "CMosquitto"]),
        // The engine and what plugs into it: being online (`Online`), the feature contract, the
        // peer directory across transports, presence, planes, trust, delivery and the message store.
        .target(name: "Nearby", dependencies: [
            "Wire", "Noise", "X3DH", "Runtime", "Storage", "Accounts",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // How conversations look: bubbles, pages, headers; rooms draw their lines with it too.
        .target(name: "ChatViews", dependencies: ["Nearby", "Shell", "Terminal"]),
        .target(name: "Chat", dependencies: [
            "Nearby", "ChatViews", "Accounts",
            "Shell", "Terminal", "Storage",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "_CryptoExtras", package: "swift-crypto"),
        ]),
        // The store: catalogue, signed receipts, inventory, candles and medallions.
        .target(name: "Store", dependencies: [
            "Accounts", "Shell", "Storage", "Terminal",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // Ghost curses: their packet kinds, rules, commands and table; a candle lifts them.
        .target(name: "Curses", dependencies: [
            "Nearby", "ChatViews", "Accounts", "Shell", "Store", "Storage", "Terminal",
            .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        // Spectres: local spirits that answer questions and teach spells.
        .target(name: "Spectres", dependencies: ["Curses", "Nearby", "ChatViews", "Shell", "Terminal"]),
        // Rooms: a host's beacon, guests that join and leave by range, lines to every member.
        .target(name: "Rooms", dependencies: [
            "ChatViews", "Nearby", "Wire", "Accounts", "Shell", "Storage", "Terminal",
            .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        // Transfers: pictures and files in conversations, fragmented, acknowledged and resumed.
        .target(name: "Transfers", dependencies: [
            "ChatViews", "Nearby", "Wire", "Accounts", "Shell", "Storage", "Terminal",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // Search: the full-text index of every conversation and room, and `search`.
        .target(name: "Search", dependencies: [
            "Accounts", "ChatViews", "Nearby", "Shell", "Storage", "Terminal",
            .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        .target(name: "App", dependencies: ["Shell", "Terminal", "Storage", "Zombies", "Visions", "Chat", "ChatViews", "Nearby", "Store", "Accounts", "LAN", "MQTT", "Curses", "Spectres", "Rooms", "Search", "Transfers"]),
        .executableTarget(name: "seance", dependencies: [
            "App",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ], linkerSettings: [
            // The static stdlib's link arguments export every symbol of the program (25,000),
            // and at start-up the runtime's dladdr walks them: a fifth of `seance -c quit`.
            // Nothing looks our symbols up by name (libmosquitto is loaded, not loading).
            .unsafeFlags(["-Xlinker", "--no-export-dynamic"]),
        ]),
        // libFuzzer targets for what is parsed by hand (`make fuzz`); a corpus replayer otherwise.
        .executableTarget(name: "SeanceFuzz", dependencies: [
            "Wire", "Nearby", "Shell", "Terminal", "MQTT", "App", "Accounts", "Curses", "Spectres", "Rooms", "Transfers", "Runtime", "Storage",
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // What the test targets share: temporary directories, a database of a given schema, sockets.
        .target(name: "TestSupport", dependencies: ["Storage"], path: "Tests/TestSupport"),
        // The one harness of the tests that run engines: a manual clock, in-memory networks, and
        // shells online as the program goes online; and a database with every feature's tables.
        .target(name: "TestWorld", dependencies: ["TestSupport", "App", "Nearby", "Curses", "Spectres", "Rooms", "Transfers", "Accounts", "Shell", "Terminal"],
                path: "Tests/TestWorld"),
        .testTarget(name: "RoomsTests", dependencies: ["TestWorld", "Rooms", "Chat", "Nearby", "Wire", "Shell", "Terminal", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "TransfersTests", dependencies: ["TestWorld", "App", "TestSupport", "Transfers", "Nearby", "Wire", "Storage", "Runtime", "Terminal", "Shell",
                                                         .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "TerminalTests", dependencies: ["TestSupport", "Terminal", "Runtime"]),
        // The engine, what is bound to it, the schedulers and the one alarm.
        .testTarget(name: "RuntimeTests", dependencies: ["Runtime"]),
        .testTarget(name: "ShellTests", dependencies: ["TestSupport", "Shell", "Terminal", "Storage"]),
        .testTarget(name: "StorageTests", dependencies: ["TestSupport", "Storage", "Runtime"]),
        .testTarget(name: "ZombiesTests", dependencies: ["Zombies", "Terminal"]),
        .testTarget(name: "LANTests", dependencies: ["TestSupport", "LAN", "Wire"]),
        .testTarget(name: "MQTTTests", dependencies: ["TestSupport", "MQTT", "Wire"]),
        .testTarget(name: "NoiseTests", dependencies: ["TestSupport", "Noise", .product(name: "Crypto", package: "swift-crypto")],
                    exclude: ["Vectors", "noise_peer.py"]),
        .testTarget(name: "X3DHTests", dependencies: ["TestSupport", "X3DH", .product(name: "Crypto", package: "swift-crypto")],
                    exclude: ["x3dh_peer.py"]),
        .testTarget(name: "WireTests", dependencies: ["Wire", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(name: "NearbyTests", dependencies: ["TestWorld", "TestSupport", "Nearby", "Wire", "LAN", "Runtime", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(name: "SearchTests", dependencies: ["TestWorld", "App", "Search", "Rooms", "Nearby", "Storage", "Terminal",
                                                      .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "AppTests", dependencies: ["TestWorld", "App", "Nearby", "Storage"]),
        // The executable's own: the common flags read by hand agree with the full parser.
        .testTarget(name: "seanceTests", dependencies: ["seance", "App"]),
        .testTarget(name: "StoreTests", dependencies: ["TestSupport", "Runtime", "Store", "Accounts", "Storage", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(name: "AccountsTests", dependencies: ["TestSupport", "Accounts", "Storage"]),
        .testTarget(name: "CursesTests", dependencies: ["TestWorld", "Curses", "Chat", "Nearby", "Store", "Accounts", "Shell", "Terminal"]),
        .testTarget(name: "SpectresTests", dependencies: ["TestWorld", "Spectres", "Curses", "Chat", "Nearby", "Accounts", "Shell", "Terminal"]),
        .testTarget(name: "ChatTests", dependencies: ["TestWorld", "Chat", "ChatViews", "Accounts", "Storage", "Shell", "Nearby"]),
        .testTarget(name: "VisionsTests", dependencies: ["TestSupport", "Visions", "Zombies", "Storage", "Terminal", "Shell"]),
        // The end-to-end tests run the built binary; they link the wire code only to play a
        // hostile peer (forged, flooding, replaying packets) against it.
        .testTarget(name: "EndToEndTests", dependencies: ["TestSupport", "Nearby", "Noise", "Wire", .product(name: "Crypto", package: "swift-crypto")],
                    exclude: ["Fixtures"]),
    ]
)

// Exclusivity is checked at run time in debug builds, which the tests and the fuzzers run;
// release builds leave it to them, as they leave the engine's queue (`assertCurrent`). Kept in
// our modules, the checks were some 6,000 of a received message's 203,000 instructions: every
// access to a class's stored property, Foundation's `Data` storage (inlined here) among them.
// The Makefile's release builds pass the same flag to every module, the dependencies' too
// (`RELEASE_FLAGS`): a package cannot set it for another's targets.
let cTargets: Set = ["CMosquitto", "CStbImage", "CSQLiteSetup"]
for target in package.targets where (target.type == .regular || target.type == .executable) && !cTargets.contains(target.name) {
    target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]
}
