#ifndef C_HIREDIS_SHIM_H
#define C_HIREDIS_SHIM_H

// System headers first, as in CLibevent's shim (libevent's event-config.h defines _GNU_SOURCE, which would give
// fd_set other member names here than in Dispatch's module).
#include <sys/types.h>
#include <sys/time.h>
#include <sys/select.h>
#include <stdio.h>
#include <time.h>
#include <sys/socket.h>

#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <hiredis/adapters/libevent.h>

// hiredis's libevent adapter is a header of static functions; this names the one RoomLink calls, so that Swift
// sees a plain function.
static inline int CHiredis_attach(redisAsyncContext *context, struct event_base *base) {
    return redisLibeventAttach(context, base);
}

#endif
