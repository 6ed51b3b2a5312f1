// Scenarios, load tests and oracles are built on the engine: their API names its types.
@_exported public import RoomLinkEngine
