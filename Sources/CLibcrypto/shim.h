#ifndef C_LIBCRYPTO_SHIM_H
#define C_LIBCRYPTO_SHIM_H

// OpenSSL's libcrypto, for LiveKit's access tokens (HMAC-SHA256), its webhooks' body digest (SHA-256) and the
// WebSocket handshake (SHA-1): its one-shot digests and MAC, and its constant-time comparison.
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#endif
