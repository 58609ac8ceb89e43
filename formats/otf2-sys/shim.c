/* See shim.h. */
#include <stdarg.h>
#include <stdio.h>

#include "shim.h"

static tracex_otf2_error_sink the_sink;

static OTF2_ErrorCode
on_error( void*          userData,
          const char*    file,
          uint64_t       line,
          const char*    function,
          OTF2_ErrorCode errorCode,
          const char*    msgFormatString,
          va_list        va )
{
    char message[ 512 ];
    message[ 0 ] = '\0';
    ( void )userData;
    ( void )file;
    ( void )line;
    if ( msgFormatString )
    {
        vsnprintf( message, sizeof( message ), msgFormatString, va );
    }
    if ( the_sink )
    {
        the_sink( errorCode, function ? function : "", message );
    }
    return errorCode;
}

void
tracex_otf2_set_error_sink( tracex_otf2_error_sink sink )
{
    the_sink = sink;
    OTF2_Error_RegisterCallback( on_error, NULL );
}
