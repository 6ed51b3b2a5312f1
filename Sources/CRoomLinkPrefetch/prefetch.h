#ifndef C_ROOMLINK_PREFETCH_H
#define C_ROOMLINK_PREFETCH_H

// Asks the CPU to start loading the cache lines from `address` on (no fault for any address, no effect on the
// program's meaning): a loop calls it for the handlers of timers a few places ahead in a batch, a delay line for
// the receivers of messages a few places ahead in its queue, whose objects are otherwise first touched — and
// waited for — when they are called. Swift has no prefetch of its own; this header is the whole module, so the
// engine reaches it without importing libevent.
static inline void CRoomLinkPrefetch_lines(const void *address, int lines) {
    for (int line = 0; line < lines; line++) __builtin_prefetch((const char *)address + 64 * line);
}

#endif
