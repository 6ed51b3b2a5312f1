import Foundation
import RoomLinkTokens
import Testing

/// ZEGO's token04: made and opened, each refusal by name, and the older CBC form read. (The referee — a second
/// implementation in Python, written from ZEGO's description — runs in `Tests/python/test_tokens.py`.)
@Suite struct ZegoTokenTests {
    static let secret = "fa94dd0f974cf2e293728a526b028271"
    static func claims(user: String = "alice", expire: Int64 = 2_000, payload: String = "") -> ZegoToken04.Claims {
        ZegoToken04.Claims(appID: 1_234, userID: user, nonce: -5, created: 1_000, expire: expire, payload: payload)
    }

    @Test func aTokenOpensToItsClaimsAndVerifies() throws {
        let made = try ZegoToken04.make(claims: Self.claims(), secret: Self.secret)
        #expect(made.hasPrefix("04"))
        let token = try ZegoToken04(made)
        #expect(token.mode == .gcm && token.expire == 2_000)
        #expect(try token.open(secret: Self.secret) == Self.claims())
        #expect(try token.verify(secret: Self.secret, appID: 1_234, user: "alice", room: "r", now: 1_999) == 2_000)
    }

    @Test func eachWrongThingIsRefusedByName() throws {
        let token = try ZegoToken04(ZegoToken04.make(claims: Self.claims(), secret: Self.secret))
        func refusal(
            secret: String = Self.secret,
            appID: UInt32 = 1_234,
            user: String = "alice",
            now: Int64 = 1_500
        )
            -> TokenError?
        {
            do {
                try token.verify(secret: secret, appID: appID, user: user, room: "r", now: now)
                return nil
            } catch { return error }
        }
        #expect(refusal() == nil)
        #expect(refusal(secret: String(Self.secret.reversed())) == .badSignature)
        #expect(refusal(secret: "short") == .badSignature)
        #expect(refusal(appID: 9) == .wrongApp("1234"))
        #expect(refusal(user: "bob") == .wrongUser("alice"))
        #expect(refusal(now: 2_000) == .expired(at: 2_000))
    }

    @Test func aRoomPayloadBindsTheRoomAndTheLoginPrivilege() throws {
        func verdict(_ payload: String, room: String = "r1") throws -> TokenError? {
            let token = try ZegoToken04(
                ZegoToken04.make(claims: Self.claims(payload: payload), secret: Self.secret)
            )
            do {
                try token.verify(secret: Self.secret, appID: 1_234, user: "alice", room: room, now: 1_500)
                return nil
            } catch { return error }
        }
        #expect(try verdict(ZegoToken04.roomPayload("r1")) == nil)
        #expect(try verdict(ZegoToken04.roomPayload("r1"), room: "r2") == .wrongRoom("r1"))
        #expect(try verdict(#"{"room_id":"r1","privilege":{"1":0,"2":1}}"#) == .noJoinPrivilege)
        #expect(try verdict("not json") == .malformed("the payload is not ZEGO's room payload"))
    }

    @Test func theOlderCBCFormIsRead() throws {
        // As ZEGO's earlier generators packed it: the expiry, a 16-byte IV, the AES-CBC ciphertext; no mode byte.
        let iv = Data("0123456789abcdef".utf8)
        let plain = try JSONEncoder().encode(Self.claims())
        let sealed = try #require(Ciphers.aesCBC(plain, key: Data(Self.secret.utf8), iv: iv, encrypting: true))
        var body = Data()
        body.append(contentsOf: withUnsafeBytes(of: Int64(2_000).bigEndian) { Array($0) })
        body.append(contentsOf: withUnsafeBytes(of: UInt16(16).bigEndian) { Array($0) })
        body.append(iv)
        body.append(contentsOf: withUnsafeBytes(of: UInt16(sealed.count).bigEndian) { Array($0) })
        body.append(sealed)
        let token = try ZegoToken04("04" + body.base64EncodedString())
        #expect(token.mode == .cbc)
        #expect(try token.open(secret: Self.secret) == Self.claims())
        #expect(throws: TokenError.badSignature) { try token.open(secret: String(Self.secret.reversed())) }
    }

    @Test func malformedTokensAreRefusedNeverAccepted() throws {
        let valid = try ZegoToken04.make(claims: Self.claims(), secret: Self.secret)
        for length in 0..<valid.count {
            let cut = String(valid.prefix(length))
            let refused: Bool
            if let token = try? ZegoToken04(cut) {
                refused = (try? token.open(secret: Self.secret)) == nil
            } else {
                refused = true
            }
            #expect(refused, "\(length) characters opened")
        }
        var body = [UInt8](Data(base64Encoded: String(valid.dropFirst(2)))!)
        var opened = 0
        for index in body.indices.dropFirst(8) {  // the clear expiry is checked against the sealed one
            body[index] ^= 0x01
            if let token = try? ZegoToken04("04" + Data(body).base64EncodedString()),
                (try? token.open(secret: Self.secret)) != nil
            {
                opened += 1
            }
            body[index] ^= 0x01
        }
        #expect(opened == 0, "an altered token opened")
        #expect(throws: TokenError.wrongVersion(expected: "04")) { try ZegoToken04("03abc") }
        #expect(throws: TokenError.malformed("the body is not base64")) { try ZegoToken04("04%%%") }
        // The clear expiry altered: the seal still opens, and the two expiries disagree.
        body[7] ^= 0x01
        let token = try ZegoToken04("04" + Data(body).base64EncodedString())
        #expect(throws: TokenError.malformed("the expiry in the clear is not the sealed one")) {
            try token.verify(secret: Self.secret, appID: 1_234, user: "alice", room: "r", now: 1_500)
        }
    }
}
