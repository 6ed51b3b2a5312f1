// The engine runs on the runtime's loops and clocks: its API names them, so its importers see them too.
@_exported public import RoomLinkRuntime
