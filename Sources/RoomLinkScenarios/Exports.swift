// Scenarios, load tests and oracles are built on the engine: their API names its types.
@_exported public import RoomLinkEngine
// Its runs go through the simulation's network and lanes when they run in one process.
@_exported public import RoomLinkSimulation
