#ifndef C_ZLIB_SHIM_H
#define C_ZLIB_SHIM_H

// zlib, for Agora's AccessToken2 (its body is zlib-compressed) and AccessToken's CRC-32s of a channel and a user.
#include <zlib.h>

#endif
