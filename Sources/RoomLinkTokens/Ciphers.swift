internal import CLibcrypto
internal import CZlib
package import Foundation

/// The ciphers and the compression the vendors' tokens use, from the system's libcrypto (OpenSSL) and zlib: AES-GCM
/// seals a ZEGO `token04` (AES-CBC its older form), zlib compresses an Agora AccessToken2 and CRC-32 names an
/// AccessToken's channel and user.
package enum Ciphers {
    /// The bytes of a GCM tag (what a sealed message carries after its ciphertext).
    package static let gcmTagBytes = 16

    /// `plain` sealed with AES-GCM under `key` (16, 24 or 32 bytes: AES-128, -192, -256) and `nonce`: the ciphertext
    /// followed by its 16-byte tag. `nil` for a key of another length.
    package static func sealAESGCM(_ plain: Data, key: Data, nonce: Data) -> Data? {
        guard let cipher = gcm(forKeyBytes: key.count), !nonce.isEmpty else { return nil }
        return withContext { context in
            var output = [UInt8](repeating: 0, count: plain.count + 16)
            var written: Int32 = 0
            var total = 0
            var tag = [UInt8](repeating: 0, count: gcmTagBytes)
            let done =
                EVP_EncryptInit_ex(context, cipher, nil, nil, nil) == 1
                && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_IVLEN, Int32(nonce.count), nil) == 1
                && Digests.withBytes(of: key) { key, _ in
                    Digests.withBytes(of: nonce) { nonce, _ in EVP_EncryptInit_ex(context, nil, nil, key, nonce) }
                } == 1
                && Digests.withBytes(of: plain) { plain, count in
                    EVP_EncryptUpdate(context, &output, &written, plain, Int32(count))
                } == 1
            guard done else { return nil }
            total = Int(written)
            let finished = output.withUnsafeMutableBufferPointer { buffer in
                EVP_EncryptFinal_ex(context, buffer.baseAddress! + total, &written)
            }
            guard finished == 1,
                EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, Int32(gcmTagBytes), &tag) == 1
            else { return nil }
            total += Int(written)
            return Data(output[..<total]) + Data(tag)
        }
    }

    /// The plain text of `sealed` (ciphertext then tag) under AES-GCM with `key` and `nonce`, or `nil` when the tag
    /// does not verify (another key, an altered byte) or the key's length is none of AES's.
    package static func openAESGCM(_ sealed: Data, key: Data, nonce: Data) -> Data? {
        guard let cipher = gcm(forKeyBytes: key.count), !nonce.isEmpty, sealed.count >= gcmTagBytes else {
            return nil
        }
        let ciphertext = sealed.prefix(sealed.count - gcmTagBytes)
        var tag = [UInt8](sealed.suffix(gcmTagBytes))
        return withContext { context in
            var output = [UInt8](repeating: 0, count: ciphertext.count + 16)
            var written: Int32 = 0
            let done =
                EVP_DecryptInit_ex(context, cipher, nil, nil, nil) == 1
                && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_IVLEN, Int32(nonce.count), nil) == 1
                && Digests.withBytes(of: key) { key, _ in
                    Digests.withBytes(of: nonce) { nonce, _ in EVP_DecryptInit_ex(context, nil, nil, key, nonce) }
                } == 1
                && Digests.withBytes(of: Data(ciphertext)) { data, count in
                    EVP_DecryptUpdate(context, &output, &written, data, Int32(count))
                } == 1
                && EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_TAG, Int32(gcmTagBytes), &tag) == 1
            guard done else { return nil }
            let total = Int(written)
            let verified = output.withUnsafeMutableBufferPointer { buffer in
                EVP_DecryptFinal_ex(context, buffer.baseAddress! + total, &written)
            }
            return verified == 1 ? Data(output[..<(total + Int(written))]) : nil
        }
    }

    /// `data` under AES-CBC with PKCS#7 padding, `key` (16, 24 or 32 bytes) and a 16-byte `iv`: encrypted, or
    /// decrypted (`nil` when the padding does not check out — a wrong key, almost always).
    package static func aesCBC(_ data: Data, key: Data, iv: Data, encrypting: Bool) -> Data? {
        guard let cipher = cbc(forKeyBytes: key.count), iv.count == 16 else { return nil }
        return withContext { context in
            var output = [UInt8](repeating: 0, count: data.count + 32)
            var written: Int32 = 0
            let started = Digests.withBytes(of: key) { key, _ in
                Digests.withBytes(of: iv) { iv, _ in
                    EVP_CipherInit_ex(context, cipher, nil, key, iv, encrypting ? 1 : 0)
                }
            }
            guard started == 1,
                Digests.withBytes(
                    of: data,
                    { data, count in
                        EVP_CipherUpdate(context, &output, &written, data, Int32(count))
                    }
                ) == 1
            else { return nil }
            let total = Int(written)
            let finished = output.withUnsafeMutableBufferPointer { buffer in
                EVP_CipherFinal_ex(context, buffer.baseAddress! + total, &written)
            }
            return finished == 1 ? Data(output[..<(total + Int(written))]) : nil
        }
    }

    /// `data` compressed by zlib (its default level, as Python's `zlib.compress`).
    package static func deflate(_ data: Data) -> Data {
        var capacity = compressBound(uLong(data.count))
        var output = [UInt8](repeating: 0, count: Int(capacity))
        let status = Digests.withBytes(of: data) { data, count in
            compress2(&output, &capacity, data, uLong(count), Z_DEFAULT_COMPRESSION)
        }
        // compress2 fails only out of memory or with a buffer below compressBound's: neither happens here.
        precondition(status == Z_OK, "zlib's compress2 failed (\(status))")
        return Data(output[..<Int(capacity)])
    }

    /// `data` decompressed by zlib, or `nil` when it is not a zlib stream or would grow past `limit` bytes (a token
    /// is small; a stream that claims more is refused, never allocated).
    package static func inflate(_ data: Data, limit: Int) -> Data? {
        var length = uLong(limit)
        var output = [UInt8](repeating: 0, count: limit)
        let status = Digests.withBytes(of: data) { data, count in
            uncompress(&output, &length, data, uLong(count))
        }
        return status == Z_OK ? Data(output[..<Int(length)]) : nil
    }

    /// The CRC-32 of `data` (zlib's, as Python's `zlib.crc32`).
    package static func crc32(_ data: Data) -> UInt32 {
        Digests.withBytes(of: data) { data, count in UInt32(CZlib.crc32(0, data, uInt(count))) }
    }

    private static func gcm(forKeyBytes count: Int) -> OpaquePointer? {
        switch count {
        case 16: EVP_aes_128_gcm()
        case 24: EVP_aes_192_gcm()
        case 32: EVP_aes_256_gcm()
        default: nil
        }
    }

    private static func cbc(forKeyBytes count: Int) -> OpaquePointer? {
        switch count {
        case 16: EVP_aes_128_cbc()
        case 24: EVP_aes_192_cbc()
        case 32: EVP_aes_256_cbc()
        default: nil
        }
    }

    /// Runs `body` with a fresh cipher context, freed after it.
    private static func withContext(_ body: (OpaquePointer) -> Data?) -> Data? {
        guard let context = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(context) }
        return body(context)
    }
}
