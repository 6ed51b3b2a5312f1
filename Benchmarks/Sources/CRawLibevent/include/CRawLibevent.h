#ifndef C_RAW_LIBEVENT_H
#define C_RAW_LIBEVENT_H

#include <stddef.h>
#include <stdint.h>

/// Costs measured by the raw C libevent benchmarks (nanoseconds).
typedef struct {
    double schedule_ns;    // wall time per event_add while arming
    double fire_cpu_ns;    // thread CPU time per fired timer while the loop dispatched them
    double cancel_ns;      // wall time per event_del, with `n` timers pending
    double wall_seconds;   // whole case
} CRawLibevent_timer_result;

/// Arms `n` timers with delays `base_delay_ns + (i * 7919 % 256) ms` on one base (precise timer flag set),
/// runs the loop until all fired, writing each one's lateness (ns) to `lateness_out[i]`; then arms `n` timers an
/// hour out and cancels `cancel_sample` of them. With `common` set, every delay uses a common-timeout queue.
CRawLibevent_timer_result CRawLibevent_timers(int common, size_t n, int64_t base_delay_ns, int64_t *lateness_out,
                                              size_t cancel_sample);

/// Costs of the heartbeat case.
typedef struct {
    double fires;          // heartbeats fired in the window
    double cpu_seconds;    // thread CPU time in the window
    double window_seconds; // wall time of the window
} CRawLibevent_heartbeat_result;

/// `n` clients each re-arm a `period_ns` timer in its callback (first beats spread over one period); measures
/// the loop thread's CPU over `window_seconds` after one period of warm-up. `precise` sets the precise-timer flag.
CRawLibevent_heartbeat_result CRawLibevent_heartbeat(int common, int precise, size_t n, int64_t period_ns,
                                                     double window_seconds);

#endif
