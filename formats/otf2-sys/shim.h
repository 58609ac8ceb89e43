/* A portable OTF2 error callback. libotf2 hands its callback a `va_list`, whose Rust type
 * differs between targets (`*mut __va_list_tag` on x86-64, a struct on aarch64) and whose
 * portable form (`core::ffi::VaList`) is unstable; so the message is formatted here, in C, and
 * only plain strings cross into Rust. */
#ifndef TRACEX_OTF2_SHIM_H
#define TRACEX_OTF2_SHIM_H

#include <otf2/OTF2_ErrorCodes.h>

/* Receives each error libotf2 reports: its code, the libotf2 function that raised it, and the
 * formatted message (NUL-terminated, at most 511 bytes, valid only during the call). */
typedef void ( *tracex_otf2_error_sink )( OTF2_ErrorCode code,
                                          const char*    function,
                                          const char*    message );

/* Makes libotf2 send every error to `sink` instead of printing it; process-wide. */
void
tracex_otf2_set_error_sink( tracex_otf2_error_sink sink );

#endif
