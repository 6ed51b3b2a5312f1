#ifndef C_LIBEVENT_TLS_SHIM_H
#define C_LIBEVENT_TLS_SHIM_H

// TLS on RoomLink's sockets: OpenSSL's libssl under libevent's OpenSSL bufferevents (`libevent_openssl`), which
// filter a socket's bufferevent so that everything above it reads and writes plain bytes.
//
// System headers first, as in CLibevent's shim (libevent's event-config.h defines _GNU_SOURCE).
#include <sys/types.h>
#include <sys/time.h>
#include <sys/select.h>
#include <stdio.h>
#include <time.h>
#include <sys/socket.h>

#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>

// OpenSSL's macros over SSL_ctrl and SSL_CTX_ctrl, which Swift cannot import, as functions.
static inline int CLibeventTLS_setServerName(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}
static inline int CLibeventTLS_setMinimumVersion12(SSL_CTX *context) {
    return (int)SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
}
static inline long CLibeventTLS_releaseBuffers(SSL_CTX *context) {
    return SSL_CTX_set_mode(context, SSL_MODE_RELEASE_BUFFERS);
}
static inline int CLibeventTLS_connecting(void) { return BUFFEREVENT_SSL_CONNECTING; }
static inline int CLibeventTLS_accepting(void) { return BUFFEREVENT_SSL_ACCEPTING; }

#endif
