#include "CRawNet.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double process_cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

static void set_nodelay(evutil_socket_t fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static struct sockaddr_in address_of(const char *host, int port) {
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, host, &address.sin_addr);
    return address;
}

/// Takes every whole frame out of `input`; returns how many.
static size_t take_frames(struct evbuffer *input, struct evbuffer *echo_to) {
    size_t frames = 0;
    for (;;) {
        unsigned char prefix[4];
        if (evbuffer_copyout(input, prefix, 4) < 4) return frames;
        size_t length = (size_t)prefix[0] << 24 | (size_t)prefix[1] << 16 | (size_t)prefix[2] << 8 | prefix[3];
        if (evbuffer_get_length(input) < 4 + length) return frames;
        if (echo_to) {
            evbuffer_remove_buffer(input, echo_to, 4 + length);
        } else {
            evbuffer_drain(input, 4 + length);
        }
        frames++;
    }
}

// MARK: - Server

static void server_read(struct bufferevent *bev, void *arg) {
    (void)arg;
    take_frames(bufferevent_get_input(bev), bufferevent_get_output(bev));
}

static void server_event(struct bufferevent *bev, short what, void *arg) {
    (void)arg;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) bufferevent_free(bev);
}

static void server_accept(struct evconnlistener *listener, evutil_socket_t fd, struct sockaddr *address, int length,
                          void *arg) {
    (void)address, (void)length, (void)arg;
    set_nodelay(fd);
    struct bufferevent *bev =
        bufferevent_socket_new(evconnlistener_get_base(listener), fd, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(bev, server_read, NULL, server_event, NULL);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
}

static void *server_thread(void *arg) {
    event_base_loop(arg, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

int CRawNet_server_start(const char *host, int port, int threads) {
    for (int i = 0; i < threads; i++) {
        struct event_base *base = event_base_new();
        struct sockaddr_in address = address_of(host, port);
        struct evconnlistener *listener = evconnlistener_new_bind(
            base, server_accept, NULL, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_REUSEABLE_PORT, 4096,
            (struct sockaddr *)&address, sizeof address);
        if (!listener) return -1;
        if (port == 0) {
            struct sockaddr_in bound;
            socklen_t bound_length = sizeof bound;
            getsockname(evconnlistener_get_fd(listener), (struct sockaddr *)&bound, &bound_length);
            port = ntohs(bound.sin_port);
        }
        pthread_t thread;
        pthread_create(&thread, NULL, server_thread, base);
        pthread_detach(thread);
    }
    return port;
}

// MARK: - Clients

typedef struct client_thread client_thread;

typedef struct {
    client_thread *owner;
    struct bufferevent *bev;
    size_t index;
    int64_t started;
    struct event *timer;
} client_connection;

struct client_thread {
    struct event_base *base;
    client_connection *connections;
    size_t count;
    size_t first;  // index of its first connection overall
    size_t frame_len;
    int64_t *latency_out;
    size_t pending;
    size_t completed, failed;
    int64_t last_echo;
    int64_t period_ns;
    _Atomic size_t echoes;
    struct sockaddr_in address;
};

static unsigned char *frame_bytes(size_t frame_len) {
    unsigned char *frame = calloc(1, 4 + frame_len);
    frame[0] = (unsigned char)(frame_len >> 24);
    frame[1] = (unsigned char)(frame_len >> 16);
    frame[2] = (unsigned char)(frame_len >> 8);
    frame[3] = (unsigned char)frame_len;
    return frame;
}

static void send_frame(client_connection *connection) {
    static __thread unsigned char *frame;
    static __thread size_t frame_len;
    if (!frame || frame_len != connection->owner->frame_len) {
        free(frame);
        frame_len = connection->owner->frame_len;
        frame = frame_bytes(frame_len);
    }
    bufferevent_write(connection->bev, frame, 4 + frame_len);
}

static void storm_read(struct bufferevent *bev, void *arg) {
    client_connection *connection = arg;
    client_thread *thread = connection->owner;
    if (take_frames(bufferevent_get_input(bev), NULL) == 0) return;
    if (connection->started >= 0) {
        int64_t now = now_ns();
        thread->latency_out[connection->index] = now - connection->started;
        thread->last_echo = now;
        connection->started = -1;
        thread->completed++;
        if (--thread->pending == 0) event_base_loopbreak(thread->base);
    }
}

static void storm_event(struct bufferevent *bev, short what, void *arg) {
    client_connection *connection = arg;
    client_thread *thread = connection->owner;
    if (what & BEV_EVENT_CONNECTED) {
        set_nodelay(bufferevent_getfd(bev));
        send_frame(connection);
    } else if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        if (connection->started >= 0) {
            thread->latency_out[connection->index] = -1;
            connection->started = -1;
            thread->failed++;
            if (--thread->pending == 0) event_base_loopbreak(thread->base);
        }
    }
}

static void *storm_thread(void *arg) {
    client_thread *thread = arg;
    for (size_t i = 0; i < thread->count; i++) {
        client_connection *connection = &thread->connections[i];
        connection->owner = thread;
        connection->index = thread->first + i;
        connection->bev = bufferevent_socket_new(thread->base, -1, BEV_OPT_CLOSE_ON_FREE);
        bufferevent_setcb(connection->bev, storm_read, NULL, storm_event, connection);
        bufferevent_enable(connection->bev, EV_READ | EV_WRITE);
        connection->started = now_ns();
        if (bufferevent_socket_connect(connection->bev, (struct sockaddr *)&thread->address,
                                       sizeof thread->address) != 0) {
            thread->latency_out[connection->index] = -1;
            connection->started = -1;
            thread->failed++;
            thread->pending--;
        }
    }
    if (thread->pending > 0) event_base_loop(thread->base, 0);
    return NULL;
}

static client_thread *storm_threads;
static int storm_thread_count;

CRawNet_storm_result CRawNet_storm(const char *host, int port, size_t n, int threads, size_t frame_len,
                                   int64_t *latency_out) {
    storm_threads = calloc((size_t)threads, sizeof *storm_threads);
    storm_thread_count = threads;
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    int64_t start = now_ns();
    size_t first = 0;
    for (int t = 0; t < threads; t++) {
        client_thread *thread = &storm_threads[t];
        thread->base = event_base_new();
        thread->count = n / (size_t)threads + ((size_t)t < n % (size_t)threads ? 1 : 0);
        thread->first = first;
        first += thread->count;
        thread->connections = calloc(thread->count, sizeof *thread->connections);
        thread->frame_len = frame_len;
        thread->latency_out = latency_out;
        thread->pending = thread->count;
        thread->address = address_of(host, port);
        pthread_create(&ids[t], NULL, storm_thread, thread);
    }
    CRawNet_storm_result result = {0, 0, 0};
    int64_t last = start;
    for (int t = 0; t < threads; t++) {
        pthread_join(ids[t], NULL);
        result.completed += storm_threads[t].completed;
        result.failed += storm_threads[t].failed;
        if (storm_threads[t].last_echo > last) last = storm_threads[t].last_echo;
    }
    result.seconds = (double)(last - start) / 1e9;
    free(ids);
    return result;
}

void CRawNet_storm_close(void) {
    for (int t = 0; t < storm_thread_count; t++) {
        client_thread *thread = &storm_threads[t];
        for (size_t i = 0; i < thread->count; i++) bufferevent_free(thread->connections[i].bev);
        free(thread->connections);
        event_base_free(thread->base);
    }
    free(storm_threads);
    storm_threads = NULL;
    storm_thread_count = 0;
}

// MARK: - Ping-pong

static void ping_read(struct bufferevent *bev, void *arg) {
    client_connection *connection = arg;
    size_t frames = take_frames(bufferevent_get_input(bev), NULL);
    atomic_fetch_add_explicit(&connection->owner->echoes, frames, memory_order_relaxed);
}

static void ping_event(struct bufferevent *bev, short what, void *arg) {
    (void)arg;
    if (what & BEV_EVENT_CONNECTED) set_nodelay(bufferevent_getfd(bev));
}

static void ping_timer(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    client_connection *connection = arg;
    send_frame(connection);
    struct timeval period = {connection->owner->period_ns / 1000000000, (connection->owner->period_ns % 1000000000) / 1000};
    event_add(connection->timer, &period);
}

static _Atomic int ping_stop;

static void ping_check(evutil_socket_t fd, short what, void *arg) {
    (void)fd, (void)what;
    if (atomic_load(&ping_stop)) event_base_loopbreak(arg);
}

static void *ping_thread(void *arg) {
    client_thread *thread = arg;
    for (size_t i = 0; i < thread->count; i++) {
        client_connection *connection = &thread->connections[i];
        connection->owner = thread;
        connection->bev = bufferevent_socket_new(thread->base, -1, BEV_OPT_CLOSE_ON_FREE);
        bufferevent_setcb(connection->bev, ping_read, NULL, ping_event, connection);
        bufferevent_enable(connection->bev, EV_READ | EV_WRITE);
        bufferevent_socket_connect(connection->bev, (struct sockaddr *)&thread->address, sizeof thread->address);
        connection->timer = event_new(thread->base, -1, 0, ping_timer, connection);
        int64_t offset = thread->period_ns * (int64_t)(thread->first + i) / (int64_t)(thread->count * 2 + 1);
        struct timeval first = {offset / 1000000000, (offset % 1000000000) / 1000};
        event_add(connection->timer, &first);
    }
    struct event *check = event_new(thread->base, -1, EV_PERSIST, ping_check, thread->base);
    struct timeval tick = {0, 50000};
    event_add(check, &tick);
    event_base_loop(thread->base, 0);
    for (size_t i = 0; i < thread->count; i++) {
        event_free(thread->connections[i].timer);
        bufferevent_free(thread->connections[i].bev);
    }
    event_free(check);
    return NULL;
}

CRawNet_pingpong_result CRawNet_pingpong(const char *host, int port, size_t n, int threads, int64_t period_ns,
                                         double warmup_seconds, double window_seconds, size_t frame_len) {
    client_thread *all = calloc((size_t)threads, sizeof *all);
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    atomic_store(&ping_stop, 0);
    size_t first = 0;
    for (int t = 0; t < threads; t++) {
        client_thread *thread = &all[t];
        thread->base = event_base_new();
        thread->count = n / (size_t)threads + ((size_t)t < n % (size_t)threads ? 1 : 0);
        thread->first = first;
        first += thread->count;
        thread->connections = calloc(thread->count, sizeof *thread->connections);
        thread->frame_len = frame_len;
        thread->period_ns = period_ns;
        thread->address = address_of(host, port);
        pthread_create(&ids[t], NULL, ping_thread, thread);
    }
    usleep((useconds_t)(warmup_seconds * 1e6));
    size_t echoes_before = 0;
    for (int t = 0; t < threads; t++) echoes_before += atomic_load(&all[t].echoes);
    double cpu_before = process_cpu_seconds();
    int64_t start = now_ns();
    usleep((useconds_t)(window_seconds * 1e6));
    size_t echoes_after = 0;
    for (int t = 0; t < threads; t++) echoes_after += atomic_load(&all[t].echoes);
    double cpu_after = process_cpu_seconds();
    int64_t end = now_ns();
    atomic_store(&ping_stop, 1);
    for (int t = 0; t < threads; t++) {
        pthread_join(ids[t], NULL);
        free(all[t].connections);
        event_base_free(all[t].base);
    }
    free(all);
    free(ids);
    CRawNet_pingpong_result result = {(double)(echoes_after - echoes_before), cpu_after - cpu_before,
                                      (double)(end - start) / 1e9};
    return result;
}
