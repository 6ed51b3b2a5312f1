@_exported public import RoomLinkLibevent
@_exported public import RoomLinkRuntime
