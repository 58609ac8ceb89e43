/* Everything libotf2 exports: otf2.h pulls in the reader, writers, definitions and events;
 * shim.h declares the C error callback that formats libotf2's messages (see shim.c). */
#include <otf2/otf2.h>
#include "shim.h"
