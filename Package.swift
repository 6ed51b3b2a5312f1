// swift-tools-version: 6.1
import PackageDescription

// One list of settings for every non-system target (see swift-log's Package.swift).
let swiftSettings: [SwiftSetting] = [
    // https://github.com/swiftlang/swift-evolution/blob/main/proposals/0335-existential-any.md
    .enableUpcomingFeature("ExistentialAny"),
    // https://github.com/swiftlang/swift-evolution/blob/main/proposals/0444-member-import-visibility.md
    .enableUpcomingFeature("MemberImportVisibility"),
    // https://github.com/swiftlang/swift-evolution/blob/main/proposals/0409-access-level-on-imports.md
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "RoomLink",
    products: [
        .library(name: "RoomLink", targets: ["RoomLink"]),
        .executable(name: "roomlink", targets: ["RoomLinkCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        // The wire protocol's messages: code generated from docs/roomlink.proto and committed.
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // `roomlink serve`'s /metrics, in Prometheus's text format.
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // Documentation only (`swift package generate-documentation`); a plugin is built when it is run, so
        // `swift build` and `swift test` do not pay for it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // MARK: - Targets

        .systemLibrary(
            name: "CLibevent",
            pkgConfig: "libevent_pthreads",
            providers: [.apt(["libevent-dev"]), .brew(["libevent"])]
        ),
        // `__builtin_prefetch` for Swift: one header, so the engine reaches it without libevent.
        .systemLibrary(name: "CRoomLinkPrefetch"),
        // `mallopt` for the CLI (Swift's Glibc module leaves <malloc.h> out): one header, like the prefetch.
        .systemLibrary(name: "CRoomLinkMalloc"),
        .target(
            name: "RoomLinkRuntime",
            dependencies: [
                "CRoomLinkPrefetch",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            exclude: ["CMakeLists.txt"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "RoomLinkLibevent",
            dependencies: [
                "CLibevent",
                "RoomLinkRuntime",
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            exclude: ["CMakeLists.txt"],
            swiftSettings: swiftSettings
        ),
        // The engine: clients and rooms, their state machines, dialects, transport protocols. It imports no
        // libevent: it runs on any `RuntimeLoop`, and it names no simulation.
        .target(
            name: "RoomLinkEngine",
            dependencies: [
                "RoomLinkRuntime",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "OrderedCollections", package: "swift-collections"),
            ],
            exclude: ["CMakeLists.txt"],
            swiftSettings: swiftSettings
        ),
        // The simulation: the in-process network and the lanes that batch the engine's timers in virtual time,
        // behind the seam the engine defines (`InProcessTransport`, `BatchingLoop`). The engine never names it.
        .target(
            name: "RoomLinkSimulation",
            dependencies: ["RoomLinkEngine", "RoomLinkRuntime"],
            exclude: ["CMakeLists.txt"],
            swiftSettings: swiftSettings
        ),
        // Above the engine: scenarios and their runner, load tests, spec oracles, the event log.
        .target(
            name: "RoomLinkScenarios",
            dependencies: [
                "RoomLinkEngine",
                "RoomLinkSimulation",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            exclude: ["CMakeLists.txt"],
            swiftSettings: swiftSettings
        ),
        // The wire protocol: frames, and RoomLink's messages to and from them. No sockets: it runs anywhere.
        .target(
            name: "RoomLinkWire",
            dependencies: ["RoomLinkEngine", .product(name: "SwiftProtobuf", package: "swift-protobuf")],
            exclude: ["CMakeLists.txt"],
            swiftSettings: swiftSettings
        ),
        // RoomLink on a real network: `roomlink serve`'s server, clients over TCP, on the libevent loops.
        .target(
            name: "RoomLinkNetwork",
            dependencies: [
                "CLibevent", "CLibeventTLS", "RoomLinkLibevent", "RoomLinkEngine", "RoomLinkWire", "RoomLinkTokens",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            exclude: ["CMakeLists.txt"],
            swiftSettings: swiftSettings
        ),
        // hiredis, with its libevent adapter: Redis I/O on the loops that run the rooms. Linked by name, not through
        // pkg-config, whose flags for hiredis (-D_FILE_OFFSET_BITS) SwiftPM refuses.
        .systemLibrary(name: "CHiredis", providers: [.apt(["libhiredis-dev"])]),
        // Presence shared by several `roomlink serve` nodes in Redis. Only the CLI links it: an embedder's RoomLink
        // does not need hiredis.
        .target(
            name: "RoomLinkRedis",
            dependencies: [
                "CHiredis", "CLibevent", "RoomLinkLibevent", "RoomLinkEngine", "RoomLinkRuntime", "RoomLinkNetwork",
            ],
            exclude: ["CMakeLists.txt"],
            swiftSettings: swiftSettings
        ),
        // wslay, an event-driven WebSocket library (frames, masking, control frames) over any transport: here a
        // libevent bufferevent. Debian ships no pkg-config file for it: linked by name.
        .systemLibrary(name: "CWslay", providers: [.apt(["libwslay-dev"])]),
        // Node's http-parser: the HTTP/1.1 requests of LiveKit's port (the WebSocket upgrade, Twirp), parsed
        // incrementally as they arrive on a bufferevent.
        .systemLibrary(name: "CHTTPParser", providers: [.apt(["libhttp-parser-dev"])]),
        // OpenSSL's libcrypto: LiveKit's access tokens (HMAC-SHA256), webhook digests (SHA-256) and the WebSocket
        // handshake (SHA-1) — the system's, where swift-crypto would compile BoringSSL into every build.
        .systemLibrary(
            name: "CLibcrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"]), .brew(["openssl"])]
        ),
        // TLS: OpenSSL's libssl under libevent's OpenSSL bufferevents (`libevent_openssl`), for every socket RoomLink
        // opens or accepts, and the HTTPS it calls.
        .systemLibrary(
            name: "CLibeventTLS",
            pkgConfig: "libevent_openssl",
            providers: [.apt(["libevent-dev", "libssl-dev"])]
        ),
        // zlib: Agora's AccessToken2 is a zlib stream, and its older AccessToken names a channel by CRC-32.
        .systemLibrary(name: "CZlib", providers: [.apt(["zlib1g-dev"])]),
        // The vendors' own tokens — Agora's AccessToken2 and AccessToken, ZEGO's token04 — read, verified and made, on
        // libcrypto and zlib, and the engine's token verifiers of each. No sockets: it runs anywhere.
        .target(
            name: "RoomLinkTokens",
            dependencies: ["CLibcrypto", "CZlib", "RoomLinkEngine"],
            exclude: ["CMakeLists.txt"],
            swiftSettings: swiftSettings
        ),
        // `roomlink serve --protocol livekit`: LiveKit's signalling (protobuf over WebSocket), access tokens and
        // server API, in front of the same rooms. Only the CLI links it: an embedder's RoomLink needs no WebSocket.
        .target(
            name: "RoomLinkLiveKit",
            dependencies: [
                "CLibevent", "CWslay", "CHTTPParser", "CLibcrypto", "RoomLinkLibevent", "RoomLinkEngine",
                "RoomLinkRuntime", "RoomLinkNetwork", "RoomLinkTokens",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["CMakeLists.txt"],
            swiftSettings: swiftSettings
        ),
        // The umbrella embedders import: every module above, re-exported.
        .target(
            name: "RoomLink",
            dependencies: [
                "RoomLinkRuntime", "RoomLinkLibevent", "RoomLinkEngine", "RoomLinkSimulation", "RoomLinkScenarios",
                "RoomLinkWire", "RoomLinkNetwork", "RoomLinkTokens",
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            exclude: ["CMakeLists.txt"],
            swiftSettings: swiftSettings
        ),

        // MARK: - Executables

        .executableTarget(
            name: "RoomLinkCLI",
            dependencies: [
                "RoomLink", "RoomLinkRedis", "RoomLinkLiveKit", "RoomLinkTokens", "CRoomLinkMalloc",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["CMakeLists.txt"],
            swiftSettings: swiftSettings
        ),

        // MARK: - Tests

        .target(
            name: "RoomLinkTestSupport",
            dependencies: ["RoomLinkRuntime"],
            path: "Tests/RoomLinkTestSupport",
            swiftSettings: swiftSettings
        ),
        // The storage types' memory invariants as checks (`EngineFenceTests` runs them), and a process that runs them
        // all: CI builds it alone with AddressSanitizer, which the whole suite would take minutes more to build.
        .target(
            name: "RoomLinkFenceChecks",
            dependencies: ["RoomLinkRuntime", "RoomLinkEngine", "RoomLinkSimulation"],
            path: "Tests/RoomLinkFenceChecks",
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "roomlink-fence-checks",
            dependencies: ["RoomLinkFenceChecks"],
            path: "Tests/RoomLinkFenceCheckRunner",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RoomLinkRuntimeTests",
            dependencies: [
                "RoomLinkRuntime", "RoomLinkTestSupport", .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RoomLinkTests",
            dependencies: [
                "RoomLink", "RoomLinkEngine", "RoomLinkSimulation", "RoomLinkScenarios", "RoomLinkRuntime",
                "RoomLinkTestSupport", "RoomLinkFenceChecks", "RoomLinkTokens",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RoomLinkWireTests",
            dependencies: [
                "RoomLinkWire", "RoomLinkEngine", "RoomLinkRuntime", "RoomLinkTestSupport",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RoomLinkNetworkTests",
            dependencies: ["RoomLink", "RoomLinkNetwork", "RoomLinkWire", "RoomLinkTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RoomLinkRedisTests",
            dependencies: [
                "RoomLink", "RoomLinkRedis", "RoomLinkNetwork", "RoomLinkLibevent", "RoomLinkRuntime",
                "RoomLinkTestSupport",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RoomLinkLiveKitTests",
            dependencies: [
                "RoomLinkLiveKit", "RoomLinkNetwork", "RoomLinkEngine", "RoomLinkRuntime",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RoomLinkTokensTests",
            dependencies: ["RoomLinkTokens", "RoomLinkEngine", "RoomLinkSimulation", "RoomLinkRuntime"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RoomLinkLibeventTests",
            dependencies: [
                "RoomLink", "RoomLinkEngine", "RoomLinkScenarios", "RoomLinkLibevent", "RoomLinkRuntime",
                "RoomLinkTestSupport",
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
