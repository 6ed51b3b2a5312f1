#include "CRawLibevent.h"

#include <event2/event.h>
#include <stdlib.h>
#include <time.h>

static int64_t now_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct timeval tv_from_ns(int64_t ns) {
    struct timeval tv;
    int64_t us = (ns + 999) / 1000;
    tv.tv_sec = us / 1000000;
    tv.tv_usec = us % 1000000;
    return tv;
}

static struct event_base *make_base(int precise) {
    struct event_config *config = event_config_new();
    if (precise) event_config_set_flag(config, EVENT_BASE_FLAG_PRECISE_TIMER);
    struct event_base *base = event_base_new_with_config(config);
    event_config_free(config);
    return base;
}

typedef struct {
    int64_t *deadlines;
    int64_t *lateness;
    size_t fired;
    size_t n;
    struct event_base *base;
} timer_context;

static void timer_fired(evutil_socket_t fd, short what, void *arg) {
    (void)what;
    timer_context *context = arg;
    size_t index = (size_t)fd;  // a pure timer has no fd interest: the slot carries the timer's index
    context->lateness[index] = now_ns(CLOCK_MONOTONIC) - context->deadlines[index];
    if (++context->fired == context->n) event_base_loopbreak(context->base);
}

static void noop(evutil_socket_t fd, short what, void *arg) { (void)fd; (void)what; (void)arg; }

/// The timeval for `delay_ms` on `base`: a common-timeout one when `common` is set (cached per distinct delay).
static struct timeval delay_tv(struct event_base *base, int common, const struct timeval **cache, int64_t delay_ns,
                               size_t key) {
    struct timeval tv = tv_from_ns(delay_ns);
    if (!common) return tv;
    if (!cache[key]) cache[key] = event_base_init_common_timeout(base, &tv);
    return *cache[key];
}

CRawLibevent_timer_result CRawLibevent_timers(int common, size_t n, int64_t base_delay_ns, int64_t *lateness_out,
                                              size_t cancel_sample) {
    CRawLibevent_timer_result result = {0, 0, 0, 0};
    int64_t case_start = now_ns(CLOCK_MONOTONIC);
    struct event_base *base = make_base(1);
    struct event **events = malloc(n * sizeof(struct event *));
    int64_t *deadlines = malloc(n * sizeof(int64_t));
    const struct timeval *cache[256] = {0};
    timer_context context = {deadlines, lateness_out, 0, n, base};
    for (size_t i = 0; i < n; i++) events[i] = event_new(base, (evutil_socket_t)i, 0, timer_fired, &context);

    int64_t start = now_ns(CLOCK_MONOTONIC);
    for (size_t i = 0; i < n; i++) {
        size_t key = (i * 7919) % 256;
        int64_t delay = base_delay_ns + (int64_t)key * 1000000;
        struct timeval tv = delay_tv(base, common, cache, delay, key);
        deadlines[i] = now_ns(CLOCK_MONOTONIC) + delay;
        event_add(events[i], &tv);
    }
    result.schedule_ns = (double)(now_ns(CLOCK_MONOTONIC) - start) / (double)n;

    int64_t cpu_start = now_ns(CLOCK_THREAD_CPUTIME_ID);
    event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY);
    result.fire_cpu_ns = (double)(now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_start) / (double)n;

    // Cancel with n timers pending an hour out, on a fresh base (a base holds at most 256 common timeouts).
    struct event_base *far_base = make_base(1);
    const struct timeval *far_cache[256] = {0};
    for (size_t i = 0; i < n; i++) {
        event_free(events[i]);
        events[i] = event_new(far_base, -1, 0, noop, NULL);
        size_t key = (i * 7919) % 256;
        struct timeval tv = delay_tv(far_base, common, far_cache, 3600000000000LL + (int64_t)key * 1000000, key);
        event_add(events[i], &tv);
    }
    if (cancel_sample > n) cancel_sample = n;
    size_t stride = n / cancel_sample;
    start = now_ns(CLOCK_MONOTONIC);
    for (size_t k = 0; k < cancel_sample; k++) event_del(events[k * stride]);
    result.cancel_ns = (double)(now_ns(CLOCK_MONOTONIC) - start) / (double)cancel_sample;

    for (size_t i = 0; i < n; i++) event_free(events[i]);
    free(events);
    free(deadlines);
    event_base_free(far_base);
    event_base_free(base);
    result.wall_seconds = (double)(now_ns(CLOCK_MONOTONIC) - case_start) / 1e9;
    return result;
}

typedef struct {
    struct event **events;
    struct timeval period;
    size_t fires;
} heartbeat_context;

static void heartbeat_fired(evutil_socket_t fd, short what, void *arg) {
    (void)what;
    heartbeat_context *context = arg;
    context->fires++;
    event_add(context->events[(size_t)fd], &context->period);
}

static void stop_loop(evutil_socket_t fd, short what, void *arg) {
    (void)fd; (void)what;
    event_base_loopbreak(arg);
}

CRawLibevent_heartbeat_result CRawLibevent_heartbeat(int common, int precise, size_t n, int64_t period_ns,
                                                     double window_seconds) {
    CRawLibevent_heartbeat_result result = {0, 0, 0};
    struct event_base *base = make_base(precise);
    heartbeat_context context;
    context.events = malloc(n * sizeof(struct event *));
    context.fires = 0;
    struct timeval period = tv_from_ns(period_ns);
    context.period = common ? *event_base_init_common_timeout(base, &period) : period;
    for (size_t i = 0; i < n; i++) {
        context.events[i] = event_new(base, (evutil_socket_t)i, 0, heartbeat_fired, &context);
        struct timeval first = tv_from_ns(period_ns / (int64_t)n * (int64_t)i + 1000);
        event_add(context.events[i], &first);
    }
    // Warm up for one period, so every client is on its steady schedule.
    struct event *stop = event_new(base, -1, 0, stop_loop, base);
    struct timeval warmup = tv_from_ns(period_ns);
    event_add(stop, &warmup);
    event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY);

    size_t fires_start = context.fires;
    int64_t cpu_start = now_ns(CLOCK_THREAD_CPUTIME_ID);
    int64_t wall_start = now_ns(CLOCK_MONOTONIC);
    struct timeval window = tv_from_ns((int64_t)(window_seconds * 1e9));
    event_add(stop, &window);
    event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY);
    result.cpu_seconds = (double)(now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_start) / 1e9;
    result.window_seconds = (double)(now_ns(CLOCK_MONOTONIC) - wall_start) / 1e9;
    result.fires = (double)(context.fires - fires_start);

    event_free(stop);
    for (size_t i = 0; i < n; i++) event_free(context.events[i]);
    free(context.events);
    event_base_free(base);
    return result;
}
