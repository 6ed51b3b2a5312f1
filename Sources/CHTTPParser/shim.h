#ifndef C_HTTP_PARSER_SHIM_H
#define C_HTTP_PARSER_SHIM_H

#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

#include <http_parser.h>

// The parser's state is bit fields, which Swift reads through accessors; these name the two RoomLink asks for after
// each call, as functions (the macro HTTP_PARSER_ERRNO is not imported).
static inline enum http_errno CHTTPParser_errno(const http_parser *parser) {
    return (enum http_errno) parser->http_errno;
}

static inline int CHTTPParser_isUpgrade(const http_parser *parser) {
    return parser->upgrade;
}

#endif
