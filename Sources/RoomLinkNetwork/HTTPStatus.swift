/// The reason phrases of the HTTP statuses RoomLink's servers answer (the admin API, LiveKit's port).
package enum HTTPStatus {
    /// `status`'s reason phrase (RFC 9110), "Error" for one RoomLink does not answer.
    package static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 413: "Content Too Large"
        default: "Error"
        }
    }
}
