import Foundation
import RoomLinkTokens
import Testing

/// Agora's tokens against Agora's own test vectors (AgoraIO/Tools, `python3/test/AccessToken2Test.py` and
/// `AccessTokenTest.py`: the same app, certificate, channel, uid, salt and times give the same token, byte for byte),
/// and a token's checks, each refusal by name.
@Suite struct AgoraTokenTests {
    static let appID = "970CA35de60c44645bbae8a215061b33"
    static let certificate = "5CFd2fd1755d40ecb72977518be15d3b"
    static let channel = "7d72365eb983485397e3e3f9d460bdda"
    static let uid = "2882341273"

    /// `AccessToken2Test.test_service_rtc`: issued at 1,111,111, 600 s, salt 1, join for 600 s.
    static let vectorRTC =
        "007eJxTYBBbsMMnKq7p9Hf/HcIX5kce9b518kCiQgSr5Zrp4X1Tu6UUGCzNDZwdjU1TUs0Mkk1MzExMk5ISUy0SjQxNDcw"
        + "Mk4yN3b8IMEQwMTAwMoAwBIL4CgzmKeZGxmamqUmWFsYmFqbGluapxqnGaZYpJmYGSSkpiVwMRhYWRsYmhkbmxgDCaiTj"
    /// `AccessToken2Test.test_service_rtc_uid_0`.
    static let vectorRTCAnyUID =
        "007eJxTYLhzZP08Lxa1Pg57+TcXb/3cZ3wi4V6kbpbOog0G2dOYk20UGCzNDZwdjU1TUs0Mkk1MzExMk5ISUy0SjQxNDcw"
        + "Mk4yN3b8IMEQwMTAwMoAwBIL4CgzmKeZGxmamqUmWFsYmFqbGluapxqnGaZYpJmYGSSkpiQwMADacImo="
    /// `AccessToken2Test.test_multi_service`: RTC, RTM, streaming, a privilege-less type 4 and chat.
    static let vectorMulti =
        "007eJxTYAh5UWu1drfhsnu9etvupS0v/iFs+3PC/Sbl8gdht55xSusqMFiaGzg7GpumpJoZJJuYmJmYJiUlplokGhmaGpg"
        + "ZJhkbu38RYIhgYmBgZGBgYAWSLEAM4jOBSWYwyQImFRjMU8yNjM1MU5MsLYxNLEyNLc1TjVON0yxTTMwMklJSErkYjCwsj"
        + "IxNDI3MjZmA5kBM4mQoSS0uiS8tTi1iZmBCMZ40I1mgToSYgCwDAGL1OcI="
    /// `AccessTokenTest.test_token`: salt 1, time stamp 1,111,111, join until 1,446,455,471.
    static let vector006 =
        "006970CA35de60c44645bbae8a215061b33IACV0fZUBw+72cVoL9eyGGh3Q6Poi8bgjwVLnyKSJyOXR7dIfRBXoFHlE"
        + "AABAAAAR/QQAAEAAQCvKDdW"
    static let vector006AnyUID =
        "006970CA35de60c44645bbae8a215061b33IACw1o7htY6ISdNRtku3p9tjTPi0jCKf9t49UHJhzCmL6bdIfRAAAAAAE"
        + "AABAAAAR/QQAAEAAQCvKDdW"

    @Test func accessToken2IsMadeByteForByteAsAgorasBuilder() throws {
        for (user, expected) in [(Self.uid, Self.vectorRTC), ("0", Self.vectorRTCAnyUID)] {
            let token = try AgoraAccessToken2.make(
                appID: Self.appID,
                certificate: Self.certificate,
                channel: Self.channel,
                user: user,
                issuedAt: 1_111_111,
                lifetime: 600,
                privileges: [.joinChannel: 600],
                salt: 1
            )
            #expect(token == expected, "user \(user)")
        }
    }

    @Test func accessToken2ReadsEveryServiceAndVerifiesTheJoin() throws {
        let token = try AgoraAccessToken2(Self.vectorMulti)
        #expect(token.appID == Self.appID)
        #expect(token.issuedAt == 1_111_111 && token.lifetime == 600 && token.salt == 1)
        #expect(token.services.map(\.type) == [1, 2, 3, 4, 5])
        #expect(token.rtc?.name == Self.channel && token.rtc?.user == Self.uid)
        #expect(token.rtc?.privileges == [1: 600, 2: 600, 3: 600, 4: 600])
        #expect(token.isSigned(withCertificate: Self.certificate))
        let expiry = try token.verify(
            certificate: Self.certificate,
            appID: Self.appID,
            channel: Self.channel,
            user: Self.uid,
            now: 1_111_111 + 599
        )
        #expect(expiry == 1_111_711)
    }

    @Test func accessToken2RefusesEachWrongThingByName() throws {
        let token = try AgoraAccessToken2(Self.vectorRTC)
        func refusal(
            certificate: String = Self.certificate,
            appID: String = Self.appID,
            channel: String = Self.channel,
            user: String = Self.uid,
            now: UInt64 = 1_111_200
        ) -> TokenError? {
            do {
                try token.verify(certificate: certificate, appID: appID, channel: channel, user: user, now: now)
                return nil
            } catch { return error }
        }
        #expect(refusal() == nil)
        #expect(refusal(certificate: "0" + Self.certificate.dropFirst()) == .badSignature)
        #expect(refusal(appID: "0" + Self.appID.dropFirst()) == .wrongApp(Self.appID))
        #expect(refusal(channel: "another") == .wrongRoom(Self.channel))
        #expect(refusal(user: "42") == .wrongUser(Self.uid))
        #expect(refusal(now: 1_111_711) == .expired(at: 1_111_711), "expired on the second it ends")
        // A token for uid 0 takes any user.
        let any = try AgoraAccessToken2(Self.vectorRTCAnyUID)
        #expect(throws: Never.self) {
            try any.verify(
                certificate: Self.certificate,
                appID: Self.appID,
                channel: Self.channel,
                user: "42",
                now: 1_111_200
            )
        }
    }

    @Test func theJoinPrivilegeIsBoundedByTheToken() throws {
        func expiry(lifetime: UInt32, join: UInt32) throws -> UInt64? {
            try AgoraAccessToken2(
                AgoraAccessToken2.make(
                    appID: Self.appID,
                    certificate: Self.certificate,
                    channel: "c",
                    user: "u",
                    issuedAt: 1_000,
                    lifetime: lifetime,
                    privileges: [.joinChannel: join]
                )
            ).joinExpiry
        }
        #expect(try expiry(lifetime: 600, join: 300) == 1_300)
        #expect(try expiry(lifetime: 600, join: 900) == 1_600, "a privilege past the token ends with it")
        #expect(try expiry(lifetime: 600, join: 0) == 1_600, "0: the token's own lifetime")
        let noJoin = try AgoraAccessToken2(
            AgoraAccessToken2.make(
                appID: Self.appID,
                certificate: Self.certificate,
                channel: "c",
                user: "u",
                issuedAt: 1_000,
                lifetime: 600,
                privileges: [.publishAudioStream: 600]
            )
        )
        #expect(noJoin.joinExpiry == nil)
        #expect(throws: TokenError.noJoinPrivilege) {
            try noJoin.verify(certificate: Self.certificate, appID: Self.appID, channel: "c", user: "u", now: 1_001)
        }
    }

    @Test func accessTokenIsMadeByteForByteAndVerified() throws {
        for (user, expected) in [(Self.uid, Self.vector006), ("0", Self.vector006AnyUID)] {
            let made = try AgoraAccessToken.make(
                appID: Self.appID,
                certificate: Self.certificate,
                channel: Self.channel,
                user: user,
                timestamp: 1_111_111,
                privileges: [.joinChannel: 1_446_455_471],
                salt: 1
            )
            #expect(made == expected, "user \(user)")
            let token = try AgoraAccessToken(expected)
            #expect(token.appID == Self.appID && token.salt == 1 && token.timestamp == 1_111_111)
            #expect(token.privileges == [1: 1_446_455_471])
            let expiry = try token.verify(
                certificate: Self.certificate,
                appID: Self.appID,
                channel: Self.channel,
                user: Self.uid,
                now: 1_000_000
            )
            #expect(expiry == 1_111_111, "the time stamp bounds the privilege")
        }
        let token = try AgoraAccessToken(Self.vector006)
        #expect(throws: TokenError.wrongUser("42")) {
            try token.verify(
                certificate: Self.certificate,
                appID: Self.appID,
                channel: Self.channel,
                user: "42",
                now: 1_000_000
            )
        }
        #expect(throws: TokenError.wrongRoom("other")) {
            try token.verify(
                certificate: Self.certificate,
                appID: Self.appID,
                channel: "other",
                user: Self.uid,
                now: 1_000_000
            )
        }
        #expect(throws: TokenError.badSignature) {
            try token.verify(
                certificate: String(Self.certificate.reversed()),
                appID: Self.appID,
                channel: Self.channel,
                user: Self.uid,
                now: 1_000_000
            )
        }
    }

    /// Hostile tokens: every prefix of a valid one, each byte flipped, not base64, oversized, another version — each
    /// refused with an error, never a crash, and never accepted.
    @Test func malformedTokensAreRefusedByName() throws {
        let valid = Self.vectorMulti
        for length in 0..<valid.count {
            let cut = String(valid.prefix(length))
            #expect(throws: TokenError.self, "\(length) characters") { try AgoraAccessToken2(cut) }
        }
        // Each byte of the compressed body flipped: none that reads as other content verifies. (A flip in the
        // padding bits of the last deflate block reads as the same content, byte for byte: the same token.)
        let original = try AgoraAccessToken2(valid)
        var accepted = 0
        var body = [UInt8](Data(base64Encoded: String(valid.dropFirst(3)))!)
        for index in body.indices {
            body[index] ^= 0x20
            let altered = "007" + Data(body).base64EncodedString()
            if let token = try? AgoraAccessToken2(altered), token != original,
                token.isSigned(withCertificate: Self.certificate)
            {
                accepted += 1
            }
            body[index] ^= 0x20
        }
        #expect(accepted == 0, "an altered token verified")
        #expect(throws: TokenError.wrongVersion(expected: "007")) { try AgoraAccessToken2(Self.vector006) }
        #expect(throws: TokenError.malformed("the body is not base64")) { try AgoraAccessToken2("007!!!") }
        #expect(throws: TokenError.oversized(limit: 4_096)) {
            try AgoraAccessToken2("007" + String(repeating: "A", count: 5_000))
        }
        // A zlib stream that would inflate past the limit is refused, not allocated.
        let bomb = "007" + Ciphers.deflate(Data(count: 100_000)).base64EncodedString()
        #expect(throws: TokenError.self) { try AgoraAccessToken2(bomb) }
        for length in 0..<Self.vector006.count {
            let cut = String(Self.vector006.prefix(length))
            #expect(throws: TokenError.self, "\(length) characters") { try AgoraAccessToken(cut) }
        }
    }
}
