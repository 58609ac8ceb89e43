/* Everything libotf2 exports: otf2.h pulls in the reader, writers, definitions and events.
 * stdio.h only for vsnprintf, which formats the va_list an OTF2 error callback receives. */
#include <stdio.h>
#include <otf2/otf2.h>
