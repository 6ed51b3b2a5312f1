#ifndef C_LIBEVENT_SHIM_H
#define C_LIBEVENT_SHIM_H

// System headers first: libevent's event-config.h defines _GNU_SOURCE, and if it came first, <sys/select.h>
// would declare fd_set with different member names here than in Dispatch's module, and Swift would refuse to
// import both ("__fds_bits ... is not present in definition of fd_set").
#include <sys/types.h>
#include <sys/time.h>
#include <sys/select.h>
#include <stdio.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <netdb.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

// libevent's `evutil_socket_t` is a macro, so Swift imports callbacks with a plain `int`; this typedef names the
// callback shape the Swift side passes to `event_new`/`event_assign`.
typedef void (*CLibevent_callback)(int, short, void *);

// CLOCK_MONOTONIC read without Foundation: the runtime's single time source, the same clock libevent's
// EVENT_BASE_FLAG_PRECISE_TIMER uses on Linux, so wheel deadlines and libevent timeouts agree.
static inline unsigned long long CLibevent_monotonicNanoseconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

// `evtimer_assign` is a macro: a pure timer event is an event with no fd interest.
static inline int CLibevent_evtimer_assign(struct event *ev, struct event_base *base, int tag,
                                           CLibevent_callback cb, void *arg) {
    return event_assign(ev, base, tag, 0, cb, arg);
}

// `evtimer_pending` is a macro as well.
static inline int CLibevent_evtimer_pending(const struct event *ev) {
    return event_pending(ev, EV_TIMEOUT, NULL);
}

// libevent's callback shapes for sockets, named for the Swift side as above.
typedef void (*CLibevent_bufferevent_data_cb)(struct bufferevent *, void *);
typedef void (*CLibevent_bufferevent_event_cb)(struct bufferevent *, short, void *);
typedef void (*CLibevent_listener_cb)(struct evconnlistener *, int, struct sockaddr *, int, void *);

#endif
