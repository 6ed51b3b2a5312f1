// RoomLink is an umbrella: `import RoomLink` brings the runtime and its libevent loops, the engine, and the
// scenarios, load tests and oracles above it, the wire protocol and the network server and clients, as one import
// did before they were modules of their own.
@_exported public import RoomLinkEngine
@_exported public import RoomLinkLibevent
@_exported public import RoomLinkNetwork
@_exported public import RoomLinkRuntime
@_exported public import RoomLinkScenarios
@_exported public import RoomLinkSimulation
@_exported public import RoomLinkTokens
@_exported public import RoomLinkWire
