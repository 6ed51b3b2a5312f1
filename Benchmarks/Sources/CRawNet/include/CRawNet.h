#ifndef C_RAW_NET_H
#define C_RAW_NET_H

#include <stddef.h>
#include <stdint.h>

/// The raw C baseline of RoomLink's network benchmarks: a libevent echo server and clients, with the same framing
/// (a 4-byte big-endian length, then the body) and nothing else — no protocol, no rooms, no actors.

/// Starts an echo server on `host:port` (0: any), one thread and one listener per thread on the port
/// (SO_REUSEPORT), each connection served by a bufferevent on its thread: every frame is answered with a frame of
/// the same length. Returns the port bound, or -1. Runs until the process ends.
int CRawNet_server_start(const char *host, int port, int threads);

typedef struct {
    double seconds;      // from the first connect to the last echo
    size_t completed;    // connections that got their echo
    size_t failed;       // connections that failed
} CRawNet_storm_result;

/// Opens `n` connections to `host:port` at once over `threads` threads (one event base each), sends one
/// `frame_len`-byte frame on each as soon as it connects, and waits for its echo; `latency_out[i]` gets connection
/// i's time from its connect call to its echo (ns; -1 when it failed). The connections stay open until
/// `CRawNet_storm_close`.
CRawNet_storm_result CRawNet_storm(const char *host, int port, size_t n, int threads, size_t frame_len,
                                   int64_t *latency_out);

/// Closes the storm's connections.
void CRawNet_storm_close(void);

typedef struct {
    double round_trips;    // echoes received in the window
    double cpu_seconds;    // this process's CPU time in the window
    double window_seconds; // wall time of the window
} CRawNet_pingpong_result;

/// `n` connections over `threads` threads, each sending a `frame_len`-byte frame every `period_ns` (first sends
/// spread over one period) and reading the echo; after `warmup_seconds`, counts echoes and this process's CPU time
/// over `window_seconds`.
CRawNet_pingpong_result CRawNet_pingpong(const char *host, int port, size_t n, int threads, int64_t period_ns,
                                         double warmup_seconds, double window_seconds, size_t frame_len);

#endif
