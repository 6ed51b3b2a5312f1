@_exported import RoomLinkRuntime
