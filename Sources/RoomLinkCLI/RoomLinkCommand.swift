import RoomLink
@main struct Main { static func main() {} }
