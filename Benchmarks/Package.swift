// swift-tools-version: 6.1
import PackageDescription

// Benchmark-only dependencies (SwiftNIO, swift-async-algorithms, hdrhistogram) live in this nested package, so that `swift build` and
// `swift test` of RoomLink itself stay fast.
let package = Package(
    name: "RoomLinkBenchmarks",
    products: [
        .executable(name: "roomlink-bench", targets: ["RoomLinkBench"])
    ],
    dependencies: [
        // `name:` fixes the path dependency's identity, which would otherwise be its folder's name.
        .package(name: "RoomLink", path: ".."),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/apple/swift-async-algorithms", from: "1.1.4"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
    ],
    targets: [
        // MARK: - Targets

        /// Raw C libevent timers, the baseline the runtime is measured against.
        .target(
            name: "CRawLibevent",
            linkerSettings: [.linkedLibrary("event")]
        ),

        /// Raw C libevent sockets (an echo server, a login storm, ping-pong), the baseline of the network benchmarks.
        .target(
            name: "CRawNet",
            linkerSettings: [.linkedLibrary("event"), .linkedLibrary("pthread")]
        ),

        // MARK: - Executables

        .executableTarget(
            name: "RoomLinkBench",
            dependencies: [
                "CRawLibevent",
                "CRawNet",
                .product(name: "RoomLink", package: "RoomLink"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
    ]
)
