#ifndef C_WSLAY_SHIM_H
#define C_WSLAY_SHIM_H

// System headers first (see CLibevent's shim): wslay.h includes <sys/types.h>.
#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

#include <wslay/wslay.h>

#endif
