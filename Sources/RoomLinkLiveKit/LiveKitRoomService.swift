import Foundation
import RoomLinkEngine
import SwiftProtobuf

/// LiveKit's server API on `roomlink serve --protocol livekit`: Twirp's `POST /twirp/livekit.RoomService/{Method}`,
/// with protobuf (or JSON) bodies, an `Authorization: Bearer` access token granting `roomList`, `roomAdmin` (for its
/// room) or `roomCreate`, and Twirp's JSON errors — so that `livekit-api`'s `RoomServiceClient` works unchanged.
///
/// | Method | Grant | Does |
/// | --- | --- | --- |
/// | `ListRooms` | `roomList` | the rooms (of `names`, when given) with their participant counts |
/// | `ListParticipants` | `roomAdmin` of the room | its participants |
/// | `GetParticipant` | `roomAdmin` of the room | one participant, or `not_found` |
/// | `RemoveParticipant` | `roomAdmin` of the room | kicks it: `leave{PARTICIPANT_REMOVED, DISCONNECT}` |
/// | `DeleteRoom` | `roomCreate` | every participant gets `leave{ROOM_DELETED, DISCONNECT}` and is removed |
struct LiveKitRoomService: Sendable {
    let service: LiveKitProtocol

    /// An answer: an HTTP status, a body and its type.
    struct Answer: Sendable {
        var status: Int
        var body: [UInt8]
        var contentType: String

        /// Twirp's error: a JSON object of a code and a message, with the code's HTTP status.
        static func error(_ code: String, _ message: String) -> Answer {
            let status =
                switch code {
                case "unauthenticated": 401
                case "permission_denied": 403
                case "not_found", "bad_route": 404
                case "malformed", "invalid_argument": 400
                default: 500
                }
            let object = ["code": code, "msg": message]
            let body = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
            return Answer(status: status, body: Array(body), contentType: "application/json")
        }
    }

    static let prefix = "/twirp/livekit.RoomService/"

    /// Answers `request` (its path under ``prefix``), calling `reply` once, from any thread.
    func handle(_ request: HTTPRequest, reply: @escaping @Sendable (Answer) -> Void) {
        let method = String(request.path.dropFirst(Self.prefix.count))
        guard request.method == "POST" else { return reply(.error("bad_route", "use POST")) }
        let isJSON = request.header("content-type")?.hasPrefix("application/json") ?? false
        let token: LiveKitAccessToken
        do {
            guard let header = request.header("authorization"), header.hasPrefix("Bearer ") else {
                return reply(.error("unauthenticated", "no authorization header"))
            }
            token = try service.keys.verify(String(header.dropFirst(7)), at: Int64(Date().timeIntervalSince1970))
        } catch {
            return reply(.error("unauthenticated", error.description))
        }
        let body = Data(request.body)
        do {
            switch method {
            case "ListRooms":
                let list = try Self.decode(Livekit_ListRoomsRequest.self, body, isJSON)
                guard token.video.roomList == true else {
                    return reply(.error("permission_denied", "no roomList grant"))
                }
                Task { reply(Self.encode(await listRooms(list.names), isJSON)) }
            case "ListParticipants":
                let list = try Self.decode(Livekit_ListParticipantsRequest.self, body, isJSON)
                try Self.checkAdmin(token, of: list.room)
                Task {
                    let participants = await participants(in: list.room)
                    reply(Self.encode(Livekit_ListParticipantsResponse.with { $0.participants = participants }, isJSON))
                }
            case "GetParticipant":
                let get = try Self.decode(Livekit_RoomParticipantIdentity.self, body, isJSON)
                try Self.checkAdmin(token, of: get.room)
                Task {
                    guard
                        let participant = await participants(in: get.room).first(where: { $0.identity == get.identity })
                    else { return reply(.error("not_found", "participant not found")) }
                    reply(Self.encode(participant, isJSON))
                }
            case "RemoveParticipant":
                let removal = try Self.decode(Livekit_RoomParticipantIdentity.self, body, isJSON)
                try Self.checkAdmin(token, of: removal.room)
                Task {
                    guard await remove(removal.identity, from: removal.room) else {
                        return reply(.error("not_found", "participant not found"))
                    }
                    reply(Self.encode(Livekit_RemoveParticipantResponse(), isJSON))
                }
            case "DeleteRoom":
                let delete = try Self.decode(Livekit_DeleteRoomRequest.self, body, isJSON)
                guard token.video.roomCreate == true else {
                    return reply(.error("permission_denied", "no roomCreate grant"))
                }
                Task {
                    await deleteRoom(delete.room)
                    reply(Self.encode(Livekit_DeleteRoomResponse(), isJSON))
                }
            default:
                reply(.error("bad_route", "no method \(method) in livekit.RoomService (RoomLink serves a subset)"))
            }
        } catch let error as Answer.Refusal {
            reply(.error(error.code, error.message))
        } catch {
            reply(.error("malformed", "the body is not the method's request: \(error)"))
        }
    }

    // MARK: - Methods

    private func listRooms(_ names: [String]) async -> Livekit_ListRoomsResponse {
        guard let rooms = service.rooms else { return .init() }
        var response = Livekit_ListRoomsResponse()
        for roomID in rooms.roomIDs where names.isEmpty || names.contains(roomID) {
            guard let room = rooms.existingRoom(roomID) else { continue }
            let count = await room.memberIDs.count
            let life = await room.roomSessionID
            response.rooms.append(
                .with {
                    $0.sid = "RM_\(life)"
                    $0.name = roomID
                    $0.numParticipants = UInt32(count)
                }
            )
        }
        return response
    }

    private func participants(in roomID: String) async -> [Livekit_ParticipantInfo] {
        guard let room = service.rooms?.existingRoom(roomID) else { return [] }
        return await room.memberIDs.sorted().map { identity in
            .with {
                $0.identity = identity
                $0.sid = service.sid(of: identity, in: roomID)
                $0.state = .active
            }
        }
    }

    private func remove(_ identity: String, from roomID: String) async -> Bool {
        guard let room = service.rooms?.existingRoom(roomID) else { return false }
        return await room.removeMember(identity)
    }

    private func deleteRoom(_ roomID: String) async {
        guard let room = service.rooms?.existingRoom(roomID) else { return }
        await room.removeEveryone { channels in
            for case let connection as LiveKitConnection in channels { connection.roomDeleted() }
        }
    }

    // MARK: - Bodies and grants

    private static func decode<Message: SwiftProtobuf.Message>(
        _ type: Message.Type,
        _ body: Data,
        _ isJSON: Bool
    ) throws -> Message {
        isJSON ? try Message(jsonUTF8Data: body) : try Message(serializedBytes: body)
    }

    private static func encode(_ message: some SwiftProtobuf.Message, _ isJSON: Bool) -> Answer {
        if isJSON {
            let body = (try? message.jsonUTF8Data()) ?? Data("{}".utf8)
            return Answer(status: 200, body: Array(body), contentType: "application/json")
        }
        let body: [UInt8] = (try? message.serializedBytes()) ?? []
        return Answer(status: 200, body: body, contentType: "application/protobuf")
    }

    private static func checkAdmin(_ token: LiveKitAccessToken, of room: String) throws(Answer.Refusal) {
        guard token.video.roomAdmin == true, token.video.room == room else {
            throw Answer.Refusal(code: "permission_denied", message: "no roomAdmin grant for room '\(room)'")
        }
    }
}

extension LiveKitRoomService.Answer {
    /// A request refused before it is carried out.
    struct Refusal: Error {
        var code: String
        var message: String
    }
}

extension ServerRoom {
    /// Removes `identity` (the room service's removal, a kick by the admin): whether it was in.
    fileprivate func removeMember(_ identity: String) -> Bool {
        guard memberIDs.contains(identity) else { return false }
        kick(identity, reason: .admin)
        return true
    }

    /// Removes every member (the room service's `DeleteRoom`); each member's connection hears `notify` first, so that
    /// it says why before the removal's own answer reaches it (both hop to its loop in this order).
    fileprivate func removeEveryone(notify: ([any ClientChannel]) -> Void) {
        let identities = memberIDs
        notify(identities.compactMap { member($0)?.channel })
        for identity in identities { kick(identity, reason: .admin) }
    }
}
